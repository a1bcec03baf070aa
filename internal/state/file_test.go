package state

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"
)

// TestFileSurvivesReopen: what the file store recorded is there after it
// is closed and opened again (a restart): a nonce inside its TTL is
// api.ErrReplayed, a grace entry is read back, a fence keeps growing, and an
// expired nonce is free again.
func TestFileSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state", "sidecar.db")
	now := time.Now()
	f, err := OpenFile(path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.RecordNonce(ctx, "live", now.Add(time.Minute), now); err != nil {
		t.Fatal(err)
	}
	if _, err := f.RecordNonce(ctx, "short", now.Add(time.Second), now); err != nil {
		t.Fatal(err)
	}
	l, ok, err := f.TryLock(ctx, "cred", time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if stored, err := f.PutGrace(ctx, l, []byte("sealed pair"), time.Minute); err != nil || !stored {
		t.Fatal(stored, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	f, err = OpenFile(path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.RecordNonce(ctx, "live", now.Add(time.Minute), now.Add(2*time.Second)); !errors.Is(err, api.ErrReplayed) {
		t.Errorf("a live nonce after reopening: %v, want api.ErrReplayed", err)
	}
	if _, err := f.RecordNonce(ctx, "short", now.Add(time.Minute), now.Add(2*time.Second)); err != nil {
		t.Errorf("an expired nonce after reopening: %v", err)
	}
	if v, ok, err := f.Grace(ctx, "cred"); err != nil || !ok || string(v) != "sealed pair" {
		t.Errorf("grace after reopening: %q %v %v", v, ok, err)
	}
	l2, ok, err := f.TryLock(ctx, "cred", time.Minute)
	if err != nil || !ok || l2.Fence <= l.Fence {
		t.Errorf("fence after reopening %d (before %d), %v %v", l2.Fence, l.Fence, ok, err)
	}
	if f.ReplayLen() != 2 {
		t.Errorf("ReplayLen %d, want 2", f.ReplayLen())
	}
}

// TestFileRefusesHostile: a second process on the same file, a symbolic
// link and a directory others may write are refused.
func TestFileRefusesHostile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s", "sidecar.db")
	f, err := OpenFile(path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := OpenFile(path, FileOptions{LockTimeout: 50 * time.Millisecond}); !errors.Is(err, ErrFileBusy) {
		t.Errorf("a second open: %v, want ErrFileBusy", err)
	}
	link := filepath.Join(dir, "s", "link.db")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFile(link, FileOptions{}); err == nil {
		t.Error("a symbolic link was opened")
	}
	open := filepath.Join(dir, "open")
	if err := os.MkdirAll(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFile(filepath.Join(open, "sidecar.db"), FileOptions{}); err == nil {
		t.Error("a state file in a world-writable directory was opened")
	}
}

// TestFileReplayBound: at the bound, expired records are dropped to make
// room, and with none expired RecordNonce is api.ErrFull.
func TestFileReplayBound(t *testing.T) {
	ctx := context.Background()
	f, err := OpenFile(filepath.Join(t.TempDir(), "sidecar.db"), FileOptions{ReplayCacheSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	now := time.Now()
	for i, n := range []string{"a", "b", "c"} {
		if _, err := f.RecordNonce(ctx, n, now.Add(time.Duration(i+1)*time.Second), now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.RecordNonce(ctx, "d", now.Add(time.Minute), now); !errors.Is(err, api.ErrFull) {
		t.Fatalf("at the bound: %v, want api.ErrFull", err)
	}
	later := now.Add(2500 * time.Millisecond) // a and b expired
	if _, err := f.RecordNonce(ctx, "d", now.Add(time.Minute), later); err != nil {
		t.Fatalf("with expired records: %v", err)
	}
	if f.ReplayLen() != 2 {
		t.Errorf("ReplayLen %d, want 2 (c and d)", f.ReplayLen())
	}
	if _, err := f.RecordNonce(ctx, "c", now.Add(time.Minute), later); !errors.Is(err, api.ErrReplayed) {
		t.Errorf("c, still live: %v", err)
	}
}
