package rotate

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/elevenmessenger/pinned/internal/state"
	"github.com/elevenmessenger/pinned/internal/testing/redistest"
	"github.com/elevenmessenger/pinned/secret"
)

// sharedStores are the stores replicas share in these tests: one
// in-memory store (replicas in one process) and a real Redis.
func sharedStores(t *testing.T) map[string]func(t *testing.T) (api.Store, api.Store) {
	return map[string]func(t *testing.T) (api.Store, api.Store){
		"memory": func(t *testing.T) (api.Store, api.Store) {
			m := state.NewMemory(state.MemoryOptions{})
			return m, m
		},
		"redis": func(t *testing.T) (api.Store, api.Store) {
			srv := redistest.Start(t)
			open := func() api.Store {
				// A long store timeout: this test is about one refresh
				// among replicas, not a slow store on a busy machine.
				r, err := state.NewRedis(state.RedisOptions{URL: srv.URL(), StateKey: bytes.Repeat([]byte{3}, state.StateKeySize), Timeout: 10 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = r.Close() })
				return r
			}
			return open(), open()
		},
	}
}

// gatedRefresher answers with its own pair after gate is closed (nil gate:
// at once), and says on entered when a call arrives.
type gatedRefresher struct {
	pair    api.Pair
	gate    chan struct{}
	entered chan struct{}
	mu      sync.Mutex
	calls   int
}

func (g *gatedRefresher) Refresh(ctx context.Context, _ string, _ secret.Secret) (api.Pair, error) {
	g.mu.Lock()
	g.calls++
	g.mu.Unlock()
	if g.entered != nil {
		close(g.entered)
	}
	if g.gate != nil {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return api.Pair{}, ctx.Err()
		}
	}
	return g.pair, nil
}

// TestPausedLockHolder: replica A takes the refresh lock and is paused
// past its TTL mid-refresh; replica B takes the lock, refreshes and
// stores its pair. When A resumes it must not overwrite B's pair: both
// replicas' callers, and every later lookup, get B's.
func TestPausedLockHolder(t *testing.T) {
	for name, open := range sharedStores(t) {
		t.Run(name, func(t *testing.T) {
			sa, sb := open(t)
			refA := &gatedRefresher{pair: api.Pair{Access: "access-A", Refresh: "refresh-A"}, gate: make(chan struct{}), entered: make(chan struct{})}
			refB := &gatedRefresher{pair: api.Pair{Access: "access-B", Refresh: "refresh-B"}}
			opts := func(s api.Store) Options {
				return Options{Store: s, LockTTL: 100 * time.Millisecond, LockWait: 2 * time.Second, Timeout: 5 * time.Second}
			}
			a, b := New(refA, opts(sa)), New(refB, opts(sb))
			old := api.Pair{Access: "access-0", Refresh: "refresh-0"}
			ctx := context.Background()
			type result struct {
				p   api.Pair
				err error
			}
			resA := make(chan result, 1)
			go func() {
				p, err := a.Rotate(ctx, "github", old)
				resA <- result{p, err}
			}()
			<-refA.entered                     // A holds the lock and is refreshing
			time.Sleep(250 * time.Millisecond) // ... past the lock's TTL
			pb, err := b.Rotate(ctx, "github", old)
			if err != nil || pb != refB.pair {
				t.Fatalf("B: %v %v, want its own pair", pb, err)
			}
			close(refA.gate) // A resumes with its (older) pair
			ra := <-resA
			if ra.err != nil || ra.p != refB.pair {
				t.Fatalf("A answered %v %v, want B's newer pair", ra.p, ra.err)
			}
			for _, r := range []*Rotator{a, b} {
				got, ok, err := r.Superseded(ctx, "github", old)
				if err != nil || !ok || got != refB.pair {
					t.Fatalf("the grace entry is %v %v %v, want B's pair", got, ok, err)
				}
			}
		})
	}
}

// TestReplicasShareOneRefresh: two replicas, 20 concurrent rotations of
// one credential each: one refresh in all, everybody gets its pair.
func TestReplicasShareOneRefresh(t *testing.T) {
	for name, open := range sharedStores(t) {
		t.Run(name, func(t *testing.T) {
			sa, sb := open(t)
			gate := make(chan struct{})
			fresh := api.Pair{Access: "access-1", Refresh: "refresh-1"}
			refA := &gatedRefresher{pair: fresh, gate: gate}
			refB := &gatedRefresher{pair: fresh, gate: gate}
			reps := []*Rotator{New(refA, Options{Store: sa}), New(refB, Options{Store: sb})}
			old := api.Pair{Access: "access-0", Refresh: "refresh-0"}
			var wg sync.WaitGroup
			errs := make(chan error, 40)
			for i := range 40 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p, err := reps[i%2].Rotate(context.Background(), "github", old)
					if err == nil && p != fresh {
						err = errors.New("another pair")
					}
					errs <- err
				}()
			}
			time.Sleep(100 * time.Millisecond)
			close(gate)
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if n := refA.calls + refB.calls; n != 1 {
				t.Fatalf("%d refreshes, want 1", n)
			}
		})
	}
}

// TestLockWaitRetryable: a replica that cannot take the lock in time gets
// a retryable error (never a reconnect); a store that cannot answer is
// retryable and matches api.ErrUnavailable.
func TestLockWaitRetryable(t *testing.T) {
	m := state.NewMemory(state.MemoryOptions{})
	if _, ok, _ := m.TryLock(context.Background(), key("github", "refresh-0"), time.Minute); !ok {
		t.Fatal("lock")
	}
	ref := &gatedRefresher{pair: api.Pair{Access: "x", Refresh: "y"}}
	r := New(ref, Options{Store: m, LockWait: 150 * time.Millisecond})
	_, err := r.Rotate(context.Background(), "github", api.Pair{Access: "access-0", Refresh: "refresh-0"})
	var e *api.RefreshError
	if !errors.Is(err, api.ErrRetryable) || errors.Is(err, api.ErrReconnectRequired) || !errors.As(err, &e) || e.Code != "refresh_in_progress" {
		t.Fatalf("%v, want retryable refresh_in_progress", err)
	}
	if ref.calls != 0 {
		t.Fatal("refreshed without the lock")
	}

	srv := redistest.Start(t)
	rs, err := state.NewRedis(state.RedisOptions{URL: srv.URL(), StateKey: bytes.Repeat([]byte{3}, state.StateKeySize), Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	srv.Stop()
	r = New(ref, Options{Store: rs})
	_, err = r.Rotate(context.Background(), "github", api.Pair{Access: "access-0", Refresh: "refresh-0"})
	if !errors.Is(err, api.ErrRetryable) || !errors.Is(err, api.ErrUnavailable) || errors.Is(err, api.ErrReconnectRequired) {
		t.Fatalf("%v, want retryable and api.ErrUnavailable", err)
	}
	if ref.calls != 0 {
		t.Fatal("refreshed without the store")
	}
}

// FuzzDecodePair: a grace entry that is not a pair is an error, never a
// panic or a pair without an access token.
func FuzzDecodePair(f *testing.F) {
	f.Add(encodePair(api.Pair{Access: "a", Refresh: "r", ExpiresAt: time.Unix(1700000000, 0)}))
	f.Add([]byte(`{"access":""}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePair(b)
		if err == nil && p.Access == "" {
			t.Fatal("a pair without an access token")
		}
	})
}
