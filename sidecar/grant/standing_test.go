package grant

import (
	"errors"
	"testing"
	"time"
)

// TestStandingSealed: a standing read grant seals and opens with its
// series; its scope ignores what a renewal changes (expiry, nonce,
// tokens) and changes with everything a renewal must keep.
func TestStandingSealed(t *testing.T) {
	k := newKey(t)
	g := validGrant()
	g.Access, g.Standing = AccessRead, "series-0123456789abcdef"
	sealed, err := Seal(g, k.Public(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Open(sealed, k)
	if err != nil || got.Standing != g.Standing || !got.IsStanding() {
		t.Fatalf("Open: %+v, %v", got, err)
	}
	scope := g.StandingScope()
	renewal := *g
	renewal.ExpiresAt, renewal.Nonce, renewal.Secret, renewal.Refresh = g.ExpiresAt.Add(10*time.Minute), "another-nonce-0123456789", "rotated", "rotated-refresh"
	if renewal.StandingScope() != scope {
		t.Fatal("a renewal that changes only time, nonce and tokens has another scope")
	}
	widen := []struct {
		name string
		mod  func(g *Grant)
	}{
		{"service", func(g *Grant) { g.Service = "stripe" }},
		{"access", func(g *Grant) { g.Access = AccessWrite }},
		{"kind", func(g *Grant) { g.Kind = KindOAuth }},
		{"tenant", func(g *Grant) { g.Tenant = "acme" }},
		{"member key", func(g *Grant) { g.MemberKey = newKey(t).Public().String() }},
		{"manifest", func(g *Grant) { g.ManifestSHA256 = "00000000000000000000000000000000000000000000000000000000000000ff" }},
		{"flows", func(g *Grant) { g.Flows = "dnsimple:github" }},
		{"resources", func(g *Grant) { _ = g.SetResources(map[string][]string{"repository": {"o/r"}}) }},
	}
	for _, w := range widen {
		t.Run(w.name, func(t *testing.T) {
			c := *g
			w.mod(&c)
			if c.StandingScope() == scope {
				t.Fatalf("changing %s keeps the scope", w.name)
			}
		})
	}
}

// TestStandingRefused: a plaintext whose standing grant could write, is
// bound to an op, is legacy (no access) or has a malformed series fails
// to open (ErrInvalid), and Seal refuses to make one.
func TestStandingRefused(t *testing.T) {
	k := newKey(t)
	const head = `{"v":1,"service":"github","kind":"pat","secret":"s","expires_at":"2026-11-30T10:02:00Z","nonce":"nonce-0123456789abcdef",`
	tests := []struct {
		name, plain string
		mod         func(g *Grant)
	}{
		{"write access", head + `"access":"write","standing":"series-0123456789abcdef"}`, func(g *Grant) { g.Access = AccessWrite }},
		{"legacy access", head + `"standing":"series-0123456789abcdef"}`, func(g *Grant) { g.Access = AccessLegacy }},
		{"bound to an op", head + `"access":"read","op":"get_repo","standing":"series-0123456789abcdef"}`, func(g *Grant) { g.Op = "get_repo" }},
		{"a short series", head + `"access":"read","standing":"short"}`, func(g *Grant) { g.Standing = "short" }},
		{"a series with a space", head + `"access":"read","standing":"series 0123456789abcdef"}`, func(g *Grant) { g.Standing = "series 0123456789abcdef" }},
		{"a series that is not a string", head + `"access":"read","standing":true}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Open(sealRaw(t, tt.plain, k.Public()), k); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Open: %v, want ErrInvalid", err)
			}
			if tt.mod == nil {
				return
			}
			g := validGrant()
			g.Access, g.Standing = AccessRead, "series-0123456789abcdef"
			tt.mod(g)
			if _, err := Seal(g, k.Public(), nil); err == nil {
				t.Fatal("Seal made it")
			}
		})
	}
}
