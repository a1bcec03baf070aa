package connstore

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/nacl/box"

	"github.com/elevenmessenger/pinned/sidecar/grant"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "pinned"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const tok = "ghp_connstore_test_token_0000000000000000"

func TestPutListRemove(t *testing.T) {
	s := newStore(t)
	if got, err := s.List(); err != nil || len(got) != 0 {
		t.Fatalf("empty store: %v %v", got, err)
	}
	for _, c := range []Connection{
		{Service: "stripe", Cap: CapRead, Kind: grant.KindPAT, Token: "sk_test_x", Viewer: "acct_1"},
		{Service: "github", Cap: CapWrite, Kind: grant.KindPAT, Token: tok, Viewer: "pinned-tester"},
		{Service: "github", Cap: CapRead, Kind: grant.KindPAT, Token: tok, Viewer: "pinned-tester"}, // replaces
	} {
		if err := s.Put(c); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.List()
	if err != nil || len(all) != 2 || all[0].Service != "github" || all[0].Cap != CapRead || all[1].Service != "stripe" {
		t.Fatalf("list: %+v %v", all, err)
	}
	if all[0].Token != tok || all[0].ConnectedAt.IsZero() {
		t.Errorf("github: %+v", all[0])
	}
	// Sealed: the token is not in the file; file and directory are private.
	raw, _ := os.ReadFile(s.Path())
	if bytes.Contains(raw, []byte(tok)) || bytes.Contains(raw, []byte("github")) {
		t.Error("the store file holds plaintext")
	}
	for path, want := range map[string]os.FileMode{s.Path(): FileMode, filepath.Join(s.Dir(), KeyFile): FileMode, s.Dir(): DirMode} {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, st.Mode().Perm(), want)
		}
	}
	// A second Open of the directory reads the same key and connections.
	s2, err := Open(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if c, err := s2.Get("stripe"); err != nil || c.Viewer != "acct_1" {
		t.Errorf("reopen: %+v %v", c, err)
	}
	if err := s.Remove("github"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("github"); !errors.Is(err, ErrNotConnected) {
		t.Errorf("second remove: %v", err)
	}
	if _, err := s.Get("github"); !errors.Is(err, ErrNotConnected) {
		t.Errorf("get removed: %v", err)
	}
}

func TestRefused(t *testing.T) {
	cases := []struct {
		name string
		c    Connection
	}{
		{"bad service", Connection{Service: "Git.Hub", Cap: CapRead, Kind: grant.KindPAT, Token: tok}},
		{"bad cap", Connection{Service: "github", Cap: "admin", Kind: grant.KindPAT, Token: tok}},
		{"no token", Connection{Service: "github", Cap: CapRead, Kind: grant.KindPAT}},
		{"refresh on a pat", Connection{Service: "github", Cap: CapRead, Kind: grant.KindPAT, Token: tok, Refresh: "r"}},
		{"bad expiry", Connection{Service: "github", Cap: CapRead, Kind: grant.KindOAuth, Token: tok, TokenExpiresAt: "tomorrow"}},
		{"resources not JSON", Connection{Service: "github", Cap: CapRead, Kind: grant.KindPAT, Token: tok, Resources: "octo/notes"}},
		{"resources not in grant form", Connection{Service: "github", Cap: CapRead, Kind: grant.KindPAT, Token: tok, Resources: `{"repository": ["octo/notes"]}`}},
		{"resources with an empty kind", Connection{Service: "github", Cap: CapRead, Kind: grant.KindPAT, Token: tok, Resources: `{"repository":[]}`}},
		{"resources with a control character", Connection{Service: "github", Cap: CapRead, Kind: grant.KindPAT, Token: tok, Resources: `{"repository":["octo/\u0000"]}`}},
	}
	s := newStore(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Put(tc.c); err == nil {
				t.Error("accepted")
			}
		})
	}
}

// TestHostileFiles: a store readable by others, one sealed to another
// key, and garbage are refused with an error that holds none of the
// file's bytes.
func TestHostileFiles(t *testing.T) {
	s := newStore(t)
	if err := s.Put(Connection{Service: "github", Cap: CapRead, Kind: grant.KindPAT, Token: tok}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(s.Path(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable store: %v", err)
	}
	os.Chmod(s.Path(), 0o600)

	other := newStore(t)
	if err := other.Put(Connection{Service: "github", Cap: CapRead, Kind: grant.KindPAT, Token: tok}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(other.Path())
	if err := os.WriteFile(s.Path(), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Errorf("another key's store: %v", err)
	}
	garbage := []byte("not a sealed box at all, but long enough to be one maybe")
	os.WriteFile(s.Path(), garbage, 0o600)
	if _, err := s.List(); err == nil || strings.Contains(err.Error(), string(garbage[:10])) {
		t.Errorf("garbage: %v", err)
	}
	os.Chmod(filepath.Join(s.Dir(), KeyFile), 0o644)
	if _, err := Open(s.Dir()); err == nil {
		t.Error("a world-readable key was accepted")
	}
}

// TestPutRotated: a pair sealed to the store's key replaces the
// connection's pair; cap and viewer stay; a pair sealed to another key is
// refused and changes nothing.
func TestPutRotated(t *testing.T) {
	s := newStore(t)
	c := Connection{Service: "github", Cap: CapWrite, Kind: grant.KindOAuth, Token: "old-access", Refresh: "old-refresh", Viewer: "pinned-tester"}
	if err := s.Put(c); err != nil {
		t.Fatal(err)
	}
	r := &grant.Rotated{Service: "github", Kind: grant.KindOAuth, Access: "new-access", Refresh: "new-refresh", TokenExpiresAt: "2030-01-01T00:00:00Z"}
	other, _ := grant.GenerateKey(nil)
	bad, _ := grant.SealRotated(r, other.Public(), nil)
	if err := s.PutRotated(bad); err == nil {
		t.Error("a pair sealed to another key was accepted")
	}
	good, err := grant.SealRotated(r, s.Key().Public(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutRotated(good); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get("github")
	if got.Token != "new-access" || got.Refresh != "new-refresh" || got.TokenExpiresAt != r.TokenExpiresAt || got.Cap != CapWrite || got.Viewer != "pinned-tester" || got.RotatedAt.IsZero() {
		t.Errorf("after rotation: %+v", got)
	}
	r.Service = "stripe"
	notConnected, _ := grant.SealRotated(r, s.Key().Public(), nil)
	if err := s.PutRotated(notConnected); !errors.Is(err, ErrNotConnected) {
		t.Errorf("rotated pair of an unconnected service: %v", err)
	}
}

// FuzzOpen: whatever plaintext is sealed to the store's key, opening it
// never panics, and what it accepts survives a save and a reopen.
func FuzzOpen(f *testing.F) {
	f.Add([]byte(`{"v":1,"connections":[{"service":"github","cap":"read","kind":"pat","token":"t","connected_at":"2026-01-01T00:00:00Z"}]}`))
	f.Add([]byte(`{"v":1,"connections":[]}`))
	f.Add([]byte(`{"v":1,"v":1,"connections":[]}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte("\xff"))
	k, err := grant.GenerateKey(nil)
	if err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, plain []byte) {
		pub := [grant.KeySize]byte(k.Public())
		sealed, err := box.SealAnonymous(nil, plain, &pub, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		conns, err := open(sealed, k)
		if err != nil {
			return
		}
		s := &Store{dir: dir, key: k}
		if err := s.save(conns); err != nil {
			t.Fatal(err)
		}
		again, err := s.load()
		if err != nil || len(again) != len(conns) {
			t.Fatalf("reopen: %v (%d, want %d)", err, len(again), len(conns))
		}
	})
}

// TestResourcesKept: a connection's resource limit survives the sealed
// store and a rotation re-seal.
func TestResourcesKept(t *testing.T) {
	s := newStore(t)
	const limit = `{"repository":["octo/hello","pinned-tester/notes"]}`
	if err := s.Put(Connection{Service: "github", Cap: CapWrite, Kind: grant.KindPAT, Token: tok, Resources: limit}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Get("github")
	if err != nil || c.Resources != limit {
		t.Fatalf("got %q, %v; want %s", c.Resources, err, limit)
	}
}
