package connstore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/elevenmessenger/pinned/secret"

	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// TestConcurrentWritersLoseNothing: two processes' stores on one directory
// (two *Store values: each has its own mutex, as two processes would; the
// flock on <dir>/.lock is what orders them) write at once. Before the
// lock, each read-modify-write could seal over the other's: a re-sealed
// rotated pair lost is a burned refresh token.
func TestConcurrentWritersLoseNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pinned")
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		for j, s := range []*Store{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				svc := fmt.Sprintf("svc%c%02d", 'a'+j, i)
				if err := s.Put(Connection{Service: svc, Cap: CapRead, Kind: grant.KindPAT, Token: secret.Secret("tok-" + svc)}); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	all, err := a.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2*n {
		t.Errorf("%d connections survived two concurrent writers, want %d", len(all), 2*n)
	}
	for _, c := range all {
		if string(c.Token) != "tok-"+c.Service {
			t.Errorf("%s holds %q", c.Service, c.Token)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, lockFile)); err != nil || st.Mode().Perm() != FileMode {
		t.Errorf("lock file: %v %v", st, err)
	}
}

// TestHostileDirectoryRefused: a store directory others can reach, a
// symbolic link in place of the store file or the key, and a directory in
// place of the store file are refused with a clear error, and the linked
// file is neither read nor overwritten.
func TestHostileDirectoryRefused(t *testing.T) {
	t.Run("0777 dir", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "pinned")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o777)
		if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "chmod 700") {
			t.Errorf("a 0777 directory: %v", err)
		}
		os.Chmod(dir, 0o755)
		if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "mode 0755") {
			t.Errorf("a 0755 directory: %v", err)
		}
		if _, err := os.Stat(filepath.Join(dir, KeyFile)); !os.IsNotExist(err) {
			t.Errorf("a key was written into the refused directory: %v", err)
		}
	})
	t.Run("symlinked store file", func(t *testing.T) {
		s := newStore(t)
		victim := filepath.Join(t.TempDir(), "victim")
		orig := []byte("another file of the user's, or another user's")
		os.WriteFile(victim, orig, 0o600)
		if err := os.Symlink(victim, s.Path()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.List(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("list through a symlink: %v", err)
		}
		if err := s.Put(Connection{Service: "github", Cap: CapRead, Kind: grant.KindPAT, Token: tok}); err == nil {
			t.Error("put through a symlinked store was accepted")
		}
		if got, _ := os.ReadFile(victim); !bytes.Equal(got, orig) {
			t.Errorf("the link's target changed: %q", got)
		}
		if fi, err := os.Lstat(s.Path()); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the symlink was replaced: %v %v", fi, err)
		}
	})
	t.Run("symlinked key", func(t *testing.T) {
		s := newStore(t)
		kp := filepath.Join(s.Dir(), KeyFile)
		other := newStore(t)
		os.Remove(kp)
		if err := os.Symlink(filepath.Join(other.Dir(), KeyFile), kp); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(s.Dir()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("a symlinked key: %v", err)
		}
	})
	t.Run("directory as store file", func(t *testing.T) {
		s := newStore(t)
		os.Mkdir(s.Path(), 0o700)
		if _, err := s.List(); err == nil {
			t.Error("a directory as the store file was read")
		}
	})
}

// TestCorruptStoreNotOverwritten: a truncated store, a bit-flipped
// one and one sealed to another key fail closed on every operation, and no
// write replaces the user's bytes (they may be recoverable; the error says
// what to do).
func TestCorruptStoreNotOverwritten(t *testing.T) {
	s := newStore(t)
	if err := s.Put(Connection{Service: "github", Cap: CapWrite, Kind: grant.KindPAT, Token: tok}); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(s.Path())
	other := newStore(t)
	other.Put(Connection{Service: "stripe", Cap: CapRead, Kind: grant.KindPAT, Token: "sk_test_other"})
	foreign, _ := os.ReadFile(other.Path())
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 1
	for name, raw := range map[string][]byte{
		"truncated":   good[:len(good)-7],
		"bit flipped": flipped,
		"foreign key": foreign,
		"empty":       {},
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(s.Path(), raw, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := s.List()
			if err == nil || !strings.Contains(err.Error(), "remove it and connect again") {
				t.Errorf("list: %v", err)
			}
			for _, op := range []func() error{
				func() error {
					return s.Put(Connection{Service: "linear", Cap: CapRead, Kind: grant.KindPAT, Token: "lin_api_x"})
				},
				func() error { return s.Remove("github") },
				func() error { return s.PutRotated("AAAA") },
			} {
				if err := op(); err == nil {
					t.Error("a write over a corrupt store succeeded")
				}
			}
			if got, _ := os.ReadFile(s.Path()); !bytes.Equal(got, raw) {
				t.Error("the corrupt store was overwritten")
			}
			if strings.Contains(err.Error(), tok) || strings.Contains(err.Error(), "sk_test_other") {
				t.Errorf("a secret in the error: %v", err)
			}
		})
	}
}

// TestViewerEscapesCleaned: the viewer identity is the provider's text,
// printed by `pinned connect` and `pinned connections`. Terminal escape
// sequences, tabs (the table's columns), line breaks and bidi overrides
// are stored as "?", and a long one is cut on a rune boundary.
func TestViewerEscapesCleaned(t *testing.T) {
	s := newStore(t)
	hostile := "\x1b]0;owned\x07\x1b[2Jevil\tcol\nline\r\u202egnp.exe\u2066\u200b\xff"
	if err := s.Put(Connection{Service: "github", Cap: CapRead, Kind: grant.KindPAT, Token: tok, Viewer: hostile}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Get("github")
	if err != nil {
		t.Fatal(err)
	}
	if want := "?]0;owned??[2Jevil?col?line??gnp.exe???"; c.Viewer != want {
		t.Errorf("viewer %q, want %q", c.Viewer, want)
	}
	long := strings.Repeat("é", MaxViewerLen)
	if got := CleanViewer(long); len(got) > MaxViewerLen || !utf8.ValidString(got) || len(got) != MaxViewerLen {
		t.Errorf("cut %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
}

// TestMissingKeyNotRemade: a store whose key is gone (a backup
// restored without it) is refused; no new key is made in its place.
func TestMissingKeyNotRemade(t *testing.T) {
	s := newStore(t)
	if err := s.Put(Connection{Service: "github", Cap: CapRead, Kind: grant.KindPAT, Token: tok}); err != nil {
		t.Fatal(err)
	}
	kp := filepath.Join(s.Dir(), KeyFile)
	os.Remove(kp)
	if _, err := Open(s.Dir()); err == nil || !strings.Contains(err.Error(), "restore the key file") {
		t.Errorf("open: %v", err)
	}
	if _, err := os.Stat(kp); !os.IsNotExist(err) {
		t.Errorf("a new key was written: %v", err)
	}
}
