package state

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"
)

// TestStandingContract: every store binds a standing series to the scope
// of its first use, refuses another scope (a widened renewal) with
// api.ErrScopeChanged, and once revoked refuses the series whatever
// scope it names with api.ErrRevoked, until the revocation's end.
func TestStandingContract(t *testing.T) {
	ctx := context.Background()
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			s, ok := st.new(t).(api.Standing)
			if !ok {
				t.Fatalf("%s keeps no standing series", st.name)
			}
			now := time.Now()
			until := now.Add(time.Minute)
			steps := []struct {
				name, series, scope string
				revoke              bool
				want                error
			}{
				{"first use binds the scope", "series-a-0123456789", "scope-1", false, nil},
				{"a renewal with the same scope", "series-a-0123456789", "scope-1", false, nil},
				{"a renewal that widens", "series-a-0123456789", "scope-2", false, api.ErrScopeChanged},
				{"another series is its own", "series-b-0123456789", "scope-2", false, nil},
				{"revoke a", "series-a-0123456789", "", true, nil},
				{"a after revocation", "series-a-0123456789", "scope-1", false, api.ErrRevoked},
				{"a after revocation, any scope", "series-a-0123456789", "scope-3", false, api.ErrRevoked},
				{"b still runs", "series-b-0123456789", "scope-2", false, nil},
				{"revoke a series never used", "series-c-0123456789", "", true, nil},
				{"c is revoked before its first use", "series-c-0123456789", "scope-1", false, api.ErrRevoked},
			}
			for _, step := range steps {
				var err error
				if step.revoke {
					err = s.RevokeStanding(ctx, step.series, until, now)
				} else {
					err = s.UseStanding(ctx, step.series, step.scope, until, now)
				}
				if !errors.Is(err, step.want) || (step.want == nil && err != nil) {
					t.Fatalf("%s: %v, want %v", step.name, err, step.want)
				}
			}
		})
	}
}

// TestStandingMemoryExpires: an in-process record is forgotten after its
// until, so a series that lapsed may start again (its grants expired).
func TestStandingMemoryExpires(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(MemoryOptions{})
	now := time.Now()
	if err := m.RevokeStanding(ctx, "series-0123456789ab", now.Add(time.Minute), now); err != nil {
		t.Fatal(err)
	}
	if err := m.UseStanding(ctx, "series-0123456789ab", "s", now.Add(2*time.Minute), now.Add(59*time.Second)); !errors.Is(err, api.ErrRevoked) {
		t.Fatalf("inside the revocation: %v", err)
	}
	if err := m.UseStanding(ctx, "series-0123456789ab", "s", now.Add(3*time.Minute), now.Add(61*time.Second)); err != nil {
		t.Fatalf("after the revocation's end: %v", err)
	}
}

// TestStandingFileSurvivesRestart: a revocation in the state file holds
// after the sidecar reopens it.
func TestStandingFileSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state", "sidecar.db")
	f, err := OpenFile(path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := f.RevokeStanding(ctx, "series-0123456789ab", now.Add(time.Hour), now); err != nil {
		t.Fatal(err)
	}
	f.Close()
	f, err = OpenFile(path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.UseStanding(ctx, "series-0123456789ab", "s", now.Add(time.Minute), now); !errors.Is(err, api.ErrRevoked) {
		t.Fatalf("after a restart: %v, want ErrRevoked", err)
	}
}
