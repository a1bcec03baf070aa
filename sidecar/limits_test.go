package sidecar

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/testing/redistest"
	"github.com/elevenmessenger/pinned/sidecar/api"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// TestBotRateAcrossReplicas: two replicas on one real redis-server, the
// bot limited to 10 ops/s (burst 10), 200 ops in 2 s spread over both:
// at most 30 succeed in all, every other is rate_limited (429,
// Retry-After, limit bot_rate) with nothing sent.
func TestBotRateAcrossReplicas(t *testing.T) {
	reps := redisReplicas(t, 2, func(c *Config) { c.BotRate = api.Rate{PerSecond: 10, Burst: 10} })
	fake := reps[0].fake
	const n = 200
	var ok, limited atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan string, n)
	start := time.Now()
	for i := range n {
		// 200 ops over 2 s: one every 10 ms, alternating replicas.
		time.Sleep(time.Until(start.Add(time.Duration(i) * 10 * time.Millisecond)))
		sealed := reps[0].seal(t, grant.Grant{Access: grant.AccessRead})
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := reps[i%2].op(t, "github", "get_viewer", `{}`, sealed)
			switch {
			case r.status == http.StatusOK:
				ok.Add(1)
			case r.status == http.StatusTooManyRequests && r.err.Error.Code == string(CodeRateLimited) &&
				r.header.Get("Retry-After") != "" && r.err.Error.RetryAfter >= 1 && bodyHas(r, `"limit":"bot_rate"`):
				limited.Add(1)
			default:
				errs <- strconv.Itoa(r.status) + " " + string(r.body)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatalf("an answer neither 200 nor rate_limited: %s", e)
	}
	sent := len(fake.Requests())
	t.Logf("%d ok, %d rate_limited in %s; the provider saw %d requests", ok.Load(), limited.Load(), time.Since(start).Round(time.Millisecond), sent)
	// A burst of 10, then 10/s: at most 30 in the 2 s the ops were sent
	// over. A machine too busy to send them in 2 s gets the same bucket
	// for longer: at most 10 + 10/s of the time it took, and one more
	// for the rounding of that time.
	elapsed := time.Since(start)
	most := int32(30)
	if elapsed > 2*time.Second {
		most = 10 + int32(10*elapsed.Seconds()) + 1
	}
	if got := ok.Load(); got > most || got < 10 {
		t.Fatalf("%d ops succeeded in %s, want at most %d (a burst of 10, then 10/s) and at least the burst", got, elapsed, most)
	}
	if ok.Load()+limited.Load() != n || sent != int(ok.Load()) {
		t.Fatalf("%d ok + %d limited of %d; the provider saw %d requests, want one per success", ok.Load(), limited.Load(), n, sent)
	}
}

// redisReplicas starts n replicas of one bot on one real redis-server,
// each configured by mod too (when not nil).
func redisReplicas(t *testing.T, n int, mod func(*Config)) []*testEnv {
	t.Helper()
	srv := redistest.Start(t)
	key, err := grant.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	var reps []*testEnv
	for range n {
		reps = append(reps, newTestEnv(t, func(c *Config) {
			c.Key, c.Store = key, redisState(t, srv, 10*time.Second)
			if mod != nil {
				mod(c)
			}
		}))
	}
	return reps
}

func bodyHas(r response, s string) bool { return strings.Contains(string(r.body), s) }

// TestProviderBackoffAcrossReplicas: the provider answers 429 with
// Retry-After: 2 once; every replica then refuses that credential's ops
// with rate_limited (limit provider_backoff) without sending anything,
// until the 2 s have passed. Another credential is not held back.
func TestProviderBackoffAcrossReplicas(t *testing.T) {
	reps := redisReplicas(t, 2, nil)
	fake := reps[0].fake
	var answered429 atomic.Bool
	fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
		if answered429.CompareAndSwap(false, true) {
			w.Header().Set("Retry-After", "2")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte(`{"message":"API rate limit exceeded"}`))
			return true
		}
		return false
	})
	first := reps[0].op(t, "github", "get_viewer", `{}`, reps[0].seal(t, grant.Grant{Access: grant.AccessRead}))
	if first.status != http.StatusTooManyRequests || first.err.Error.Code != string(CodeRateLimited) || first.err.Error.UpstreamStatus != 429 {
		t.Fatalf("the provider's 429: %d %s", first.status, first.body)
	}
	hit := time.Now()
	for i := range 6 {
		r := reps[i%2].op(t, "github", "get_viewer", `{}`, reps[0].seal(t, grant.Grant{Access: grant.AccessRead}))
		if time.Since(hit) >= 1900*time.Millisecond {
			break // too slow a machine to tell; the requests count below still holds
		}
		if r.status != http.StatusTooManyRequests || !bodyHas(r, `"limit":"provider_backoff"`) || r.err.Error.RetryAfter < 1 || r.err.Error.RetryAfter > 2 {
			t.Fatalf("replica %d during the back-off: %d %s", i%2, r.status, r.body)
		}
	}
	if got := len(fake.Requests()); got != 1 {
		t.Fatalf("the provider saw %d requests during the back-off, want 1", got)
	}
	// Another credential is not held back.
	other := reps[1].op(t, "github", "get_viewer", `{}`, reps[0].seal(t, grant.Grant{Access: grant.AccessRead, Secret: "ghp_another_token_not_backing_off_0000000"}))
	if other.status == http.StatusTooManyRequests {
		t.Fatalf("another credential was held back: %s", other.body)
	}
	time.Sleep(time.Until(hit.Add(2100 * time.Millisecond)))
	after := reps[1].op(t, "github", "get_viewer", `{}`, reps[0].seal(t, grant.Grant{Access: grant.AccessRead}))
	if after.status != http.StatusOK {
		t.Fatalf("after the back-off: %d %s", after.status, after.body)
	}
}

// downLimiter is a Limiter whose store does not answer.
type downLimiter struct{}

func (downLimiter) Take(context.Context, string, api.Rate, time.Time) (bool, time.Duration, error) {
	return false, 0, api.ErrUnavailable
}
func (downLimiter) BackOff(context.Context, string, time.Time) error { return api.ErrUnavailable }
func (downLimiter) BackedOff(context.Context, string, time.Time) (time.Time, error) {
	return time.Time{}, api.ErrUnavailable
}
func (downLimiter) Spend(context.Context, string, int64, int64, api.Cap, time.Time) (bool, error) {
	return false, api.ErrUnavailable
}

// TestLimiterDownRefuses: when the limits cannot be checked the op is
// refused with unavailable, nothing sent, and its grant can run later.
func TestLimiterDownRefuses(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.Limiter = downLimiter{}; c.BotRate = api.Rate{PerSecond: 10, Burst: 10} })
	sealed := env.seal(t, grant.Grant{Access: grant.AccessRead})
	r := env.op(t, "github", "get_viewer", `{}`, sealed)
	if r.status != http.StatusServiceUnavailable || r.err.Error.Code != string(CodeUnavailable) {
		t.Fatalf("limiter down: %d %s", r.status, r.body)
	}
	if got := len(env.fake.Requests()); got != 0 {
		t.Fatalf("the provider saw %d requests", got)
	}
}

// TestDeadConnectionNoRetryStorm: once the provider refuses a refresh
// token (invalid_grant), every later op carrying it, on any replica, is
// reconnect_required at once: no refresh is sent again.
func TestDeadConnectionNoRetryStorm(t *testing.T) {
	gh := fakeapi.GitHub
	srv := redistest.Start(t)
	key, err := grant.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	re := newRotEnv(t, brokerOpts{}, func(c *Config) { c.Key, c.Store = key, redisState(t, srv, 10*time.Second) })
	other := newTestEnv(t, func(c *Config) {
		c.Key, c.Store, c.Refresher = key, redisState(t, srv, 10*time.Second), re.srv.cfg.Refresher
	})
	old := mintPair(t, re.fake, gh, 9*time.Hour)
	re.fake.SetTokenFault(gh, fakeapi.FaultInvalidGrant, 1) // once: a retry would succeed at the fake
	before := refreshes(re.fake, gh)
	for i, env := range []*testEnv{re.testEnv, other, re.testEnv, other} {
		r := env.op(t, gh, "get_viewer", `{}`, re.oauthGrant(t, gh, old, true))
		if r.status != http.StatusForbidden || r.err.Error.Code != string(CodeReconnectRequired) || !strings.Contains(r.err.Error.Message, "reconnect it") {
			t.Fatalf("op %d: %d %s", i, r.status, r.body)
		}
	}
	if got := refreshes(re.fake, gh) - before; got != 1 {
		t.Fatalf("the provider saw %d refreshes of the dead token, want 1", got)
	}
	// Another connection of the service still refreshes.
	fresh := mintPair(t, re.fake, gh, 9*time.Hour)
	if r := other.op(t, gh, "get_viewer", `{}`, re.oauthGrant(t, gh, fresh, true)); r.status != http.StatusOK {
		t.Fatalf("another connection: %d %s", r.status, r.body)
	}
}

// TestBudgets: the bot's daily ops cap and a grant's bytes cap refuse the
// op past them with rate_limited and the limit, nothing sent.
func TestBudgets(t *testing.T) {
	t.Run("bot daily ops", func(t *testing.T) {
		env := newTestEnv(t, func(c *Config) { c.BotDailyCap = api.Cap{Ops: 3} })
		for i := range 4 {
			r := env.op(t, "github", "get_viewer", `{}`, env.seal(t, grant.Grant{Access: grant.AccessRead}))
			if i < 3 && r.status != http.StatusOK {
				t.Fatalf("op %d: %d %s", i, r.status, r.body)
			}
			if i == 3 && (r.status != http.StatusTooManyRequests || !bodyHas(r, `"limit":"bot_budget"`) || r.header.Get("Retry-After") == "") {
				t.Fatalf("past the cap: %d %s", r.status, r.body)
			}
		}
		if got := len(env.fake.Requests()); got != 3 {
			t.Fatalf("the provider saw %d requests, want 3", got)
		}
	})
	t.Run("grant bytes", func(t *testing.T) {
		// A research session's calls run under one held grant, whose
		// budget they share (enforceOp with the held grant).
		env := newTestEnv(t, func(c *Config) { c.GrantCap = api.Cap{Bytes: 10} })
		g, err := grant.Open(env.seal(t, grant.Grant{Access: grant.AccessRead}), env.key)
		if err != nil {
			t.Fatal(err)
		}
		held := &heldGrant{g: g}
		req := &OpRequest{Service: "github", Op: "get_viewer"}
		if _, _, _, e := env.srv.enforceOp(context.Background(), sourceResearch, &reqInfo{}, req, held); e != nil {
			t.Fatalf("first call: %v", e)
		}
		_, _, _, e := env.srv.enforceOp(context.Background(), sourceResearch, &reqInfo{}, req, held)
		if e == nil || e.Code != CodeRateLimited || e.Limit != limitGrantB || e.RetryAfter < 1 {
			t.Fatalf("past the grant's bytes: %v", e)
		}
		if got := len(env.fake.Requests()); got != 1 {
			t.Fatalf("the provider saw %d requests, want 1", got)
		}
	})
}
