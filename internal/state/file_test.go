package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// corruptPages sets the page type of every page of the file at path that
// holds a key starting with prefix to an invalid one (bbolt's page
// header: id 8 bytes, flags 2), writing in place.
func corruptPages(t *testing.T, path, prefix string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fh, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	const page = 4096
	n := 0
	for off := 2 * page; off+page <= len(b); off += page {
		if bytes.Contains(b[off:off+page], []byte(prefix)) {
			if _, err := fh.WriteAt([]byte{0xff, 0xff}, int64(off+8)); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no page to corrupt")
	}
}

// TestFileCorruptRefused: a state file whose pages are corrupt fails
// closed with an error, never a crash. At start OpenFile refuses it
// (bbolt's page checks panicked out of it, holding the file's lock) and
// leaves it as it was; a file corrupted while open answers
// api.ErrUnavailable, so the sidecar refuses the op rather than run it
// unrecorded. (bbolt keeps no checksum: damage inside a page that keeps
// its structure goes unseen, docs/OPERATING.md.)
func TestFileCorruptRefused(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	fill := func(t *testing.T, path string) *File {
		f, err := OpenFile(path, FileOptions{LockTimeout: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 400 {
			if _, err := f.RecordNonce(ctx, fmt.Sprintf("nonce-%04d-0123456789", i), now.Add(time.Hour), now); err != nil {
				t.Fatal(err)
			}
		}
		return f
	}
	t.Run("at start", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sidecar.db")
		fill(t, path).Close()
		corruptPages(t, path, "nonce-")
		before, _ := os.ReadFile(path)
		for range 2 { // the second open is not ErrFileBusy: nothing held the lock
			_, err := OpenFile(path, FileOptions{LockTimeout: 50 * time.Millisecond})
			if err == nil || errors.Is(err, ErrFileBusy) || !strings.Contains(err.Error(), "corrupt") {
				t.Fatalf("OpenFile = %v, want a corrupt file refused", err)
			}
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Error("the corrupt file was changed")
		}
	})
	t.Run("while open", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sidecar.db")
		f := fill(t, path)
		defer f.Close()
		corruptPages(t, path, "nonce-")
		if _, err := f.RecordNonce(ctx, "nonce-0001-0123456789", now.Add(time.Hour), now); !errors.Is(err, api.ErrUnavailable) {
			t.Errorf("RecordNonce of a recorded nonce = %v, want api.ErrUnavailable", err)
		}
		if _, err := f.RecordNonce(ctx, "nonce-9999-0123456789", now.Add(time.Hour), now); !errors.Is(err, api.ErrUnavailable) {
			t.Errorf("RecordNonce of a new nonce = %v, want api.ErrUnavailable", err)
		}
	})
}
