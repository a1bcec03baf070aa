package grant

import (
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestResourcesSealed: a grant's resource limit travels inside the sealed
// box and comes out exactly as sealed.
func TestResourcesSealed(t *testing.T) {
	k := newKey(t)
	g := validGrant()
	if err := g.SetResources(map[string][]string{"repository": {"pinned-tester/notes", "octo/hello"}}); err != nil {
		t.Fatal(err)
	}
	if g.Resources != `{"repository":["pinned-tester/notes","octo/hello"]}` {
		t.Fatalf("Resources = %s", g.Resources)
	}
	sealed, err := Seal(g, k.Public(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Open(sealed, k)
	if err != nil {
		t.Fatal(err)
	}
	if *got != *g {
		t.Fatalf("opened %+v, sealed %+v", got, g)
	}
	if v, ok := got.Limited("repository"); !ok || !slices.Equal(v, []string{"pinned-tester/notes", "octo/hello"}) {
		t.Errorf("Limited(repository) = %q, %v", v, ok)
	}
	if _, ok := got.Limited("account"); ok {
		t.Error("a kind the grant does not name is limited")
	}
}

// TestResourcesTamperedFailsToOpen: the limit is bound into the sealed
// grant. Changing any byte of the box (the ciphertext that carries the
// limit included) makes it fail to open, so a holder cannot widen it.
func TestResourcesTamperedFailsToOpen(t *testing.T) {
	k := newKey(t)
	g := validGrant()
	if err := g.SetResources(map[string][]string{"repository": {"pinned-tester/notes"}}); err != nil {
		t.Fatal(err)
	}
	sealed, err := Seal(g, k.Public(), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(sealed)
	for i := range raw {
		b := append([]byte(nil), raw...)
		b[i] ^= 0x01
		if _, err := Open(base64.StdEncoding.EncodeToString(b), k); !errors.Is(err, ErrInvalid) {
			t.Fatalf("byte %d flipped: Open = %v, want ErrInvalid", i, err)
		}
	}
}

func TestResourcesRefused(t *testing.T) {
	k := newKey(t)
	long := strings.Repeat("a", MaxResourceLen+1)
	many := make([]string, MaxResourceValues+1)
	for i := range many {
		many[i] = "o/r" + strings.Repeat("x", i)
	}
	tests := []struct {
		name      string
		resources string // the plaintext's "resources" member
	}{
		{"an empty object", `{}`},
		{"an empty set", `{"repository":[]}`},
		{"an empty name", `{"repository":[""]}`},
		{"a name twice", `{"repository":["o/r","o/r"]}`},
		{"a control character", `{"repository":["o/r\n"]}`},
		{"a name too long", `{"repository":["` + long + `"]}`},
		{"a bad kind", `{"Repository":["o/r"]}`},
		{"not a list", `{"repository":"o/r"}`},
		{"a number", `{"repository":[1]}`},
		{"a kind twice", `{"repository":["o/r"],"repository":["x/y"]}`},
		{"too many kinds", `{"a":["x"],"b":["x"],"c":["x"],"d":["x"],"e":["x"]}`},
		{"too many names", `{"repository":["` + strings.Join(many, `","`) + `"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plain := `{"v":1,"service":"github","access":"read","kind":"pat","secret":"s","expires_at":"2026-11-30T10:02:00Z","nonce":"nonce-0123456789abcdef","resources":` + tt.resources + `}`
			if _, err := Open(sealRaw(t, plain, k.Public()), k); !errors.Is(err, ErrInvalid) {
				t.Errorf("Open = %v, want ErrInvalid", err)
			}
		})
	}
	g := validGrant()
	if err := g.SetResources(map[string][]string{"repository": {"o/r", "o/r"}}); err == nil {
		t.Error("SetResources took a name twice")
	}
	g.Resources = `{"repository":["o/r"],"account":["x"]}` // kinds not sorted
	if _, err := Seal(g, k.Public(), nil); err == nil {
		t.Error("Seal took Resources not in SetResources form")
	}
}
