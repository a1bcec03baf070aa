package sidecar

import (
	"net/http"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/state"
	"github.com/elevenmessenger/pinned/internal/testing/redistest"
	"github.com/elevenmessenger/pinned/sidecar/api"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

const testSeries = "standing-series-0123456789"

// standing is a standing read grant of series for github, expiring in ttl.
func standing(series string, ttl time.Duration) grant.Grant {
	return grant.Grant{Access: grant.AccessRead, Standing: series, ExpiresAt: time.Now().Add(ttl)}
}

func (env *testEnv) revoke(t *testing.T, sealed string) response {
	t.Helper()
	return env.do(t, http.MethodPost, "/v1/grants/revoke", RevokeRequest{Grant: sealed})
}

// wantRefused asserts a 4xx answer with code, and that the fake received
// nothing.
func wantRefused(t *testing.T, env *testEnv, r response, status int, code Code) {
	t.Helper()
	if r.status != status || r.err.Error.Code != string(code) {
		t.Fatalf("got %d %s, want %d %s", r.status, r.body, status, code)
	}
	if n := len(env.fake.Requests()); n != 0 {
		t.Fatalf("the fake received %d requests", n)
	}
}

// TestStandingGrantRunsReadsUntilRevoked: one standing read grant runs
// three reads (it is not spent); a renewal runs too; after the member
// revokes the series, the next op under any renewal — the one revoked,
// one captured before, one sealed after — is refused grant_revoked with
// nothing sent, while a new series runs.
func TestStandingGrantRunsReadsUntilRevoked(t *testing.T) {
	env := newTestEnv(t, nil)
	first := env.seal(t, standing(testSeries, 5*time.Minute))
	for _, c := range []struct{ op, args string }{
		{"get_viewer", `{}`},
		{"get_repo", `{"owner":"pinned-tester","repo":"notes"}`},
		{"list_issues", `{"owner":"pinned-tester","repo":"notes"}`},
	} {
		if r := env.op(t, "github", c.op, c.args, first); r.status != http.StatusOK {
			t.Fatalf("%s under the standing grant: %d %s", c.op, r.status, r.body)
		}
	}
	if n := len(env.fake.Requests()); n != 3 {
		t.Fatalf("the fake received %d requests, want 3", n)
	}
	renewal := env.seal(t, standing(testSeries, 10*time.Minute))
	if r := env.op(t, "github", "get_viewer", `{}`, renewal); r.status != http.StatusOK {
		t.Fatalf("the renewal: %d %s", r.status, r.body)
	}

	r := env.revoke(t, renewal)
	if r.status != http.StatusOK {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	env.fake.Reset()
	after := env.seal(t, standing(testSeries, 10*time.Minute))
	for name, sealed := range map[string]string{"the revoked renewal": renewal, "a renewal captured before": first, "a renewal sealed after": after} {
		t.Run(name, func(t *testing.T) {
			wantRefused(t, env, env.op(t, "github", "get_viewer", `{}`, sealed), http.StatusForbidden, CodeGrantRevoked)
		})
	}
	if r := env.op(t, "github", "get_viewer", `{}`, env.seal(t, standing("another-series-0123456789", 5*time.Minute))); r.status != http.StatusOK {
		t.Fatalf("a new series: %d %s", r.status, r.body)
	}
}

// TestStandingGrantHostile: what a standing grant cannot do. Each case is
// refused with its code before anything is sent.
func TestStandingGrantHostile(t *testing.T) {
	env := newTestEnv(t, nil)
	limitedTo := func(g grant.Grant, repos ...string) grant.Grant {
		if err := g.SetResources(map[string][]string{"repository": repos}); err != nil {
			t.Fatal(err)
		}
		return g
	}
	// A series first used limited to pinned-tester/notes: renewals may
	// not widen it.
	bound := "bound-series-0123456789"
	if r := env.op(t, "github", "get_viewer", `{}`, env.seal(t, limitedTo(standing(bound, 5*time.Minute), "pinned-tester/notes"))); r.status != http.StatusOK {
		t.Fatalf("the bound series' first use: %d %s", r.status, r.body)
	}
	other := standing(bound, 5*time.Minute)
	other.Service = "stripe"

	tests := []struct {
		name, service, op, args string
		g                       grant.Grant
		status                  int
		code                    Code
	}{
		{"expired", "github", "get_viewer", `{}`, standing(testSeries, -time.Minute), http.StatusForbidden, CodeGrantExpired},
		{"a lifetime past the standing bound", "github", "get_viewer", `{}`, standing(testSeries, grant.DefaultStandingMaxTTL+2*time.Minute), http.StatusForbidden, CodeGrantInvalid},
		{"a write op", "github", "create_issue", `{"owner":"pinned-tester","repo":"notes","title":"x"}`, standing(testSeries, 5*time.Minute), http.StatusForbidden, CodeAccessDenied},
		{"a renewal without the resource limit", "github", "get_viewer", `{}`, standing(bound, 5*time.Minute), http.StatusForbidden, CodeGrantMismatch},
		{"a renewal with another repository", "github", "get_viewer", `{}`, limitedTo(standing(bound, 5*time.Minute), "pinned-tester/other"), http.StatusForbidden, CodeGrantMismatch},
		{"a renewal with one more repository", "github", "get_viewer", `{}`, limitedTo(standing(bound, 5*time.Minute), "pinned-tester/notes", "pinned-tester/other"), http.StatusForbidden, CodeGrantMismatch},
		{"a renewal for another service", "stripe", "get_balance", `{}`, other, http.StatusForbidden, CodeGrantMismatch},
		{"outside the limit", "github", "get_repo", `{"owner":"pinned-tester","repo":"other"}`, limitedTo(standing(bound, 5*time.Minute), "pinned-tester/notes"), http.StatusForbidden, CodeResourceDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.Reset()
			wantRefused(t, env, env.op(t, tt.service, tt.op, tt.args, env.seal(t, tt.g)), tt.status, tt.code)
		})
	}

	t.Run("a standing write grant cannot be sealed", func(t *testing.T) {
		g := standing(testSeries, 5*time.Minute)
		g.Access, g.Service, g.Secret = grant.AccessWrite, "github", "x"
		if _, err := grant.Seal(&g, env.key.Public(), nil); err == nil {
			t.Fatal("sealed a standing write grant")
		}
	})
	t.Run("a tampered grant", func(t *testing.T) {
		env.fake.Reset()
		sealed := []byte(env.seal(t, standing(testSeries, 5*time.Minute)))
		sealed[60] ^= 1
		wantRefused(t, env, env.op(t, "github", "get_viewer", `{}`, string(sealed)), http.StatusForbidden, CodeGrantInvalid)
	})
}

// TestRevokeEndpoint: revocation needs a grant this bot can open; a
// one-shot grant revoked is spent (grant_replayed); an expired renewal
// still revokes its series.
func TestRevokeEndpoint(t *testing.T) {
	env := newTestEnv(t, nil)
	tests := []struct {
		name   string
		body   any
		status int
		code   Code
	}{
		{"no grant", `{}`, http.StatusBadRequest, CodeBadRequest},
		{"an unknown member", `{"grant":"x","series":"y"}`, http.StatusBadRequest, CodeBadRequest},
		{"not a sealed grant", RevokeRequest{Grant: "bm90IGEgZ3JhbnQ="}, http.StatusForbidden, CodeGrantInvalid},
		{"sealed to another bot", RevokeRequest{Grant: sealTo(t, standing(testSeries, time.Minute), mustKey(t).Public())}, http.StatusForbidden, CodeGrantInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := env.do(t, http.MethodPost, "/v1/grants/revoke", tt.body)
			if r.status != tt.status || r.err.Error.Code != string(tt.code) {
				t.Fatalf("got %d %s, want %d %s", r.status, r.body, tt.status, tt.code)
			}
		})
	}

	t.Run("a one-shot grant", func(t *testing.T) {
		sealed := env.seal(t, grant.Grant{Access: grant.AccessRead})
		if r := env.revoke(t, sealed); r.status != http.StatusOK {
			t.Fatalf("revoke: %d %s", r.status, r.body)
		}
		env.fake.Reset()
		wantRefused(t, env, env.op(t, "github", "get_viewer", `{}`, sealed), http.StatusConflict, CodeGrantReplayed)
	})
	t.Run("an expired renewal revokes its series", func(t *testing.T) {
		series := "expired-series-0123456789"
		if r := env.revoke(t, env.seal(t, standing(series, -10*time.Minute))); r.status != http.StatusOK {
			t.Fatalf("revoke: %d %s", r.status, r.body)
		}
		env.fake.Reset()
		wantRefused(t, env, env.op(t, "github", "get_viewer", `{}`, env.seal(t, standing(series, 5*time.Minute))), http.StatusForbidden, CodeGrantRevoked)
	})
}

// storeOnly hides a store's api.Standing: a sidecar on it cannot check
// revocation.
type storeOnly struct{ api.Store }

// TestStandingNeedsStore: on a state store that keeps no standing series,
// a standing grant is refused unavailable (fail closed), never run
// unchecked; a one-shot grant still runs.
func TestStandingNeedsStore(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.Store = storeOnly{state.NewMemory(state.MemoryOptions{})} })
	wantRefused(t, env, env.op(t, "github", "get_viewer", `{}`, env.seal(t, standing(testSeries, 5*time.Minute))), http.StatusServiceUnavailable, CodeUnavailable)
	if r := env.op(t, "github", "get_viewer", `{}`, env.seal(t, grant.Grant{Access: grant.AccessRead})); r.status != http.StatusOK {
		t.Fatalf("a one-shot grant: %d %s", r.status, r.body)
	}
}

func mustKey(t *testing.T) *grant.PrivateKey {
	t.Helper()
	k, err := grant.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestStandingRevokedAcrossReplicas: two replicas on one Redis: a
// standing grant runs on both; revoked through one, its next op on the
// other is refused grant_revoked with nothing sent.
func TestStandingRevokedAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	key := mustKey(t)
	a := newTestEnv(t, func(c *Config) { c.Key, c.Store = key, redisState(t, srv, 10*time.Second) })
	b := newTestEnv(t, func(c *Config) { c.Key, c.Store = key, redisState(t, srv, 10*time.Second) })
	sealed := a.seal(t, standing(testSeries, 5*time.Minute))
	for i, env := range []*testEnv{a, b} {
		if r := env.op(t, "github", "get_viewer", `{}`, sealed); r.status != http.StatusOK {
			t.Fatalf("replica %d: %d %s", i, r.status, r.body)
		}
	}
	if r := a.revoke(t, sealed); r.status != http.StatusOK {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	b.fake.Reset()
	wantRefused(t, b, b.op(t, "github", "get_viewer", `{}`, sealed), http.StatusForbidden, CodeGrantRevoked)
}
