package sidecar

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/rotate"
	"github.com/elevenmessenger/pinned/internal/testing/testenv"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/secret"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// The rotation tests run the provider fake, a real broker (broker.New
// with its provider calls overridden to the fake) and a sidecar, all on
// loopback: a pair is minted through the fake's OAuth endpoints, sealed in
// grants with or without a member key, and the ops' answers, the fake's
// token and API requests, and the logs are checked.

const testInstanceToken = "sidecar-test-instance-token-0123456789abcdef"

// rotEnv is a sidecar wired to a broker wired to the shared fake.
type rotEnv struct {
	*testEnv
	brokerURL  string
	brokerLogs *testutil.SyncBuffer
	member     *grant.PrivateKey // the member's key, which rotated pairs are sealed to
}

// brokerOpts tune newRotEnv.
type brokerOpts struct {
	providerTimeout time.Duration // the broker's bound on a token request; default 15s (generous: CI machines can be slow)
	instanceToken   string        // what the sidecar presents; default testInstanceToken
	noBroker        bool          // the sidecar has no Refresher
}

// newRotEnv starts a broker (clients for GitHub and HubSpot, the fake's
// default ones) and a sidecar rotating through it, on the shared engine
// and fake. The fake's clock, token faults and hook are restored after the
// test.
func newRotEnv(t *testing.T, bo brokerOpts, mod func(*Config)) *rotEnv {
	t.Helper()
	fake, _, _, _ := sharedEngine(t)
	t.Cleanup(func() {
		fake.SetClock(nil)
		for _, svc := range []string{fakeapi.GitHub, fakeapi.HubSpot} {
			fake.SetTokenFault(svc, fakeapi.FaultNone, 0)
			fake.SetOAuthLifetime(svc, 0)
		}
	})
	re := &rotEnv{brokerLogs: &testutil.SyncBuffer{}}
	var err error
	if re.member, err = grant.GenerateKey(nil); err != nil {
		t.Fatal(err)
	}
	var refresher api.Refresher
	if !bo.noBroker {
		if bo.instanceToken == "" {
			bo.instanceToken = testInstanceToken
		}
		re.brokerURL = testenv.Broker(t, fake, testInstanceToken, testenv.BrokerOptions{
			Services:        []string{fakeapi.GitHub, fakeapi.HubSpot},
			ProviderTimeout: bo.providerTimeout,
			Logs:            re.brokerLogs,
		})
		refresher = testenv.BrokerClient(t, re.brokerURL, bo.instanceToken)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sidecar log:\n%s\nbroker log:\n%s", grepLines(re.logs.String(), `"token_refresh"`), re.brokerLogs.String())
		}
	})
	re.testEnv = newTestEnv(t, func(c *Config) {
		c.Refresher = refresher
		if mod != nil {
			mod(c)
		}
	})
	return re
}

// mintPair connects service at the fake's OAuth endpoints (authorize, then
// the code exchange, with the fake's default client) and returns the pair.
// The fake's clock is set back by age while minting, so the pair is issued
// age ago: with age past its lifetime it is already expired, at the fake
// and by its stated expiry.
func mintPair(t *testing.T, fake *fakeapi.Server, service string, age time.Duration) api.Pair {
	t.Helper()
	p := testutil.MintPair(t, fake, service, age)
	return api.Pair{Access: secret.Secret(p.Access), Refresh: secret.Secret(p.Refresh), ExpiresAt: p.ExpiresAt}
}

// oauthGrant seals a read grant carrying p, with the member key or not.
func (re *rotEnv) oauthGrant(t testing.TB, service string, p api.Pair, withMemberKey bool) string {
	t.Helper()
	g := grant.Grant{
		Service: service, Access: grant.AccessRead, Kind: grant.KindOAuth,
		Secret: secret.Secret(p.Access), Refresh: secret.Secret(p.Refresh), TokenExpiresAt: rotate.FormatExpiry(p.ExpiresAt),
	}
	if withMemberKey {
		g.MemberKey = re.member.Public().String()
	}
	return re.seal(t, g)
}

// rotatedOf returns the `rotated` member of an answer (success or error).
func rotatedOf(t testing.TB, body []byte) string {
	t.Helper()
	var b struct {
		Rotated string `json:"rotated"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("not JSON: %s", body)
	}
	return b.Rotated
}

// openRotated opens a rotated pair with the member's key and checks its
// form.
func (re *rotEnv) openRotated(t testing.TB, service, sealed string) api.Pair {
	t.Helper()
	if sealed == "" {
		t.Fatal("the answer carries no rotated pair")
	}
	r, err := grant.OpenRotated(sealed, re.member)
	if err != nil {
		t.Fatalf("the rotated pair does not open with the member key: %v", err)
	}
	if r.Service != service || r.Kind != grant.KindOAuth || r.Access == "" || r.Refresh == "" {
		t.Fatalf("rotated pair: service %q kind %q, access or refresh empty", r.Service, r.Kind)
	}
	exp, err := rotate.ParseExpiry(r.TokenExpiresAt)
	if err != nil {
		t.Fatal(err)
	}
	return api.Pair{Access: r.Access, Refresh: r.Refresh, ExpiresAt: exp}
}

// refreshes is how many refresh requests the fake's token endpoint of
// service has received so far.
func refreshes(fake *fakeapi.Server, service string) int {
	_, n := fake.TokenRequests(service)
	return n
}

// apiCalls returns the Authorization headers of the requests the fake's
// API host of service received since the last Reset (not counting a token
// endpoint on the same host, as HubSpot's).
func apiCalls(fake *fakeapi.Server, service string) []string {
	_, tokenURL := fakeapi.OAuthEndpoints(service)
	var out []string
	for _, r := range fake.Requests() {
		if r.Host == fakeapi.Host(service) && "https://"+r.Host+r.Path != tokenURL {
			out = append(out, r.Header.Get("Authorization"))
		}
	}
	return out
}

func (re *rotEnv) metrics(t testing.TB) string {
	t.Helper()
	return string(re.do(t, http.MethodGet, "/metrics", nil).body)
}

func expectMetric(t testing.TB, metrics string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(metrics, w) {
			t.Errorf("metrics lack %s:\n%s", w, grepLines(metrics, "token_"))
		}
	}
}

// TestRotationParallelExpiredPair: 50 parallel ops, each with its own
// grant carrying the SAME expired single-use GitHub pair and a member key,
// cause exactly one refresh at the provider; all 50 succeed with the fresh
// token and every answer carries the same fresh pair sealed to the member.
func TestRotationParallelExpiredPair(t *testing.T) {
	const n = 50
	re := newRotEnv(t, brokerOpts{}, nil)
	old := mintPair(t, re.fake, fakeapi.GitHub, 9*time.Hour) // 8-hour tokens: expired an hour ago
	if !old.ExpiresAt.Before(time.Now()) || testutil.ViewerStatus(t, re.fake, fakeapi.GitHub, string(old.Access)) != http.StatusUnauthorized {
		t.Fatal("the minted pair is not expired")
	}
	grants := make([]string, n)
	for i := range grants {
		grants[i] = re.oauthGrant(t, fakeapi.GitHub, old, true)
	}
	re.fake.Reset()
	before := refreshes(re.fake, fakeapi.GitHub)

	answers := make([]response, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i] = re.op(t, fakeapi.GitHub, "get_viewer", `{}`, grants[i])
		}()
	}
	close(start)
	wg.Wait()

	if got := refreshes(re.fake, fakeapi.GitHub) - before; got != 1 {
		t.Fatalf("the provider saw %d refresh requests, want exactly 1", got)
	}
	var fresh api.Pair
	sealed := make([]string, n)
	for i, a := range answers {
		if a.status != http.StatusOK {
			t.Fatalf("op %d: %d %s", i, a.status, a.body)
		}
		var out OpResponse
		if err := json.Unmarshal(a.body, &out); err != nil || out.Status != 200 {
			t.Fatalf("op %d: %s", i, a.body)
		}
		sealed[i] = out.Rotated
		p := re.openRotated(t, fakeapi.GitHub, out.Rotated)
		if i == 0 {
			fresh = p
		} else if p != fresh {
			t.Fatalf("op %d got another fresh pair than op 0", i)
		}
	}
	if string(fresh.Access) == string(old.Access) || string(fresh.Refresh) == string(old.Refresh) {
		t.Fatal("the rotated pair is the old one")
	}
	if d := time.Until(fresh.ExpiresAt); d < 7*time.Hour || d > 9*time.Hour {
		t.Fatalf("the fresh pair expires in %s, want about 8h", d)
	}
	calls := apiCalls(re.fake, fakeapi.GitHub)
	if len(calls) != n {
		t.Fatalf("the API saw %d calls for %d ops", len(calls), n)
	}
	for _, h := range calls {
		if h != "Bearer "+string(fresh.Access) {
			t.Fatal("an op called the API with another token than the fresh one")
		}
	}
	if st := testutil.ViewerStatus(t, re.fake, fakeapi.GitHub, string(fresh.Access)); st != http.StatusOK {
		t.Fatalf("the fresh token gets %d at the fake", st)
	}
	// GitHub's form-encoded token answer was read: the broker's refresh did
	// not ask for JSON, and the expiry came through.
	for _, r := range re.fake.Requests() {
		if r.Host == "github.com" && r.Path == "/login/oauth/access_token" && strings.Contains(r.Header.Get("Accept"), "application/json") {
			t.Error("the refresh asked GitHub for JSON; the form-encoded path is untested")
		}
	}
	m := re.metrics(t)
	expectMetric(t, m,
		`pinned_sidecar_token_refreshes_total{outcome="ok",service="github"} 1`,
		`pinned_sidecar_ops_total{op="get_viewer",outcome="ok",service="github"} 50`,
		`pinned_sidecar_token_grace_hits_total`, `pinned_sidecar_token_refresh_shared_total`)
	logs := re.allLogs()
	if !strings.Contains(logs, `"rotation":"before_call"`) {
		t.Error("the access log does not say the pair was rotated")
	}
	secrets := append([]string{string(old.Access), string(old.Refresh), string(fresh.Access), string(fresh.Refresh), testInstanceToken, re.member.Encode(), grants[0]}, sealed[:5]...)
	assertNoSecrets(t, logs, secrets...)
	assertNoSecrets(t, re.brokerLogs.String(), string(old.Access), string(old.Refresh), string(fresh.Access), string(fresh.Refresh), testInstanceToken)
}

// TestRotationBeforeCall: an expired pair is rotated before the call for
// GitHub (form-encoded token answers, 8 hours) and HubSpot (JSON,
// expires_in 1800), end to end through the broker.
func TestRotationBeforeCall(t *testing.T) {
	tests := []struct {
		service  string
		age      time.Duration // past the lifetime: expired
		lifetime time.Duration
	}{
		{service: fakeapi.GitHub, age: 9 * time.Hour, lifetime: 8 * time.Hour},
		{service: fakeapi.HubSpot, age: time.Hour, lifetime: 30 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.service, func(t *testing.T) {
			re := newRotEnv(t, brokerOpts{}, nil)
			old := mintPair(t, re.fake, tt.service, tt.age)
			if d := old.ExpiresAt.Sub(time.Now().Add(-tt.age)); d < tt.lifetime-time.Minute || d > tt.lifetime+time.Minute {
				t.Fatalf("minted lifetime %s, want %s", d, tt.lifetime)
			}
			re.fake.Reset()
			before := refreshes(re.fake, tt.service)
			r := re.op(t, tt.service, "get_viewer", `{}`, re.oauthGrant(t, tt.service, old, true))
			if r.status != http.StatusOK {
				t.Fatalf("op: %d %s", r.status, r.body)
			}
			fresh := re.openRotated(t, tt.service, rotatedOf(t, r.body))
			if got := refreshes(re.fake, tt.service) - before; got != 1 {
				t.Fatalf("%d refreshes, want 1", got)
			}
			if string(fresh.Access) == string(old.Access) || string(fresh.Refresh) == string(old.Refresh) {
				t.Fatal("not rotated")
			}
			if d := time.Until(fresh.ExpiresAt); d < tt.lifetime-time.Minute || d > tt.lifetime+time.Minute {
				t.Fatalf("the fresh pair expires in %s, want %s", d, tt.lifetime)
			}
			if calls := apiCalls(re.fake, tt.service); len(calls) != 1 || calls[0] != "Bearer "+string(fresh.Access) {
				t.Fatalf("API calls: %d", len(calls))
			}
			if st := testutil.ViewerStatus(t, re.fake, tt.service, string(fresh.Access)); st != http.StatusOK {
				t.Fatalf("the fresh token gets %d", st)
			}
			assertNoSecrets(t, re.allLogs(), string(old.Access), string(old.Refresh), string(fresh.Access), string(fresh.Refresh), rotatedOf(t, r.body))
		})
	}
}

// TestRotationAfterUnauthorized: a token the provider rejects although its
// stated expiry is ahead is rotated once and the op retried once; a second
// 401 is returned, never looped; the fresh pair rides back on the answer
// whatever the retried call's outcome; an op arriving with the
// just-rotated pair reuses the fresh one (grace).
func TestRotationAfterUnauthorized(t *testing.T) {
	re := newRotEnv(t, brokerOpts{}, nil)
	gh := fakeapi.GitHub

	t.Run("401 then success", func(t *testing.T) {
		old := mintPair(t, re.fake, gh, 0)
		re.fake.RevokeToken(gh, string(old.Access)) // expired early: the stated expiry is 8h ahead
		re.fake.Reset()
		before := refreshes(re.fake, gh)
		r := re.op(t, gh, "get_viewer", `{}`, re.oauthGrant(t, gh, old, true))
		if r.status != http.StatusOK {
			t.Fatalf("op: %d %s", r.status, r.body)
		}
		fresh := re.openRotated(t, gh, rotatedOf(t, r.body))
		if got := refreshes(re.fake, gh) - before; got != 1 {
			t.Fatalf("%d refreshes, want 1", got)
		}
		calls := apiCalls(re.fake, gh)
		if len(calls) != 2 || calls[0] != "Bearer "+string(old.Access) || calls[1] != "Bearer "+string(fresh.Access) {
			t.Fatalf("want one call with the old token and one retry with the fresh one; got %d calls", len(calls))
		}

		// The same (now retired) pair again, as a device that has not stored
		// the fresh one yet sends it: the grace cache answers, nothing is
		// refreshed, and the fresh pair goes back again.
		re.fake.Reset()
		r = re.op(t, gh, "get_viewer", `{}`, re.oauthGrant(t, gh, old, true))
		if r.status != http.StatusOK {
			t.Fatalf("op with the just-rotated pair: %d %s", r.status, r.body)
		}
		if again := re.openRotated(t, gh, rotatedOf(t, r.body)); again != fresh {
			t.Fatal("the grace cache gave another pair")
		}
		if got := refreshes(re.fake, gh) - before; got != 1 {
			t.Fatalf("%d refreshes after the grace hit, want still 1", got)
		}
		if calls := apiCalls(re.fake, gh); len(calls) != 1 || calls[0] != "Bearer "+string(fresh.Access) {
			t.Fatalf("grace: %d calls", len(calls))
		}
		expectMetric(t, re.metrics(t), `pinned_sidecar_token_grace_hits_total 1`)
		if !strings.Contains(re.logs.String(), `"rotation":"after_401"`) {
			t.Error("the access log does not say the pair was rotated after a 401")
		}
		assertNoSecrets(t, re.allLogs(), string(old.Access), string(old.Refresh), string(fresh.Access), string(fresh.Refresh))
	})

	t.Run("a second 401 is returned without a loop", func(t *testing.T) {
		old := mintPair(t, re.fake, gh, 0)
		re.fake.RevokeToken(gh, string(old.Access))
		re.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
			if r.Host != "api.github.com" {
				return false // the token endpoint answers normally
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`))
			return true
		})
		defer re.fake.SetHandler(nil)
		re.fake.Reset()
		before := refreshes(re.fake, gh)
		r := re.op(t, gh, "get_viewer", `{}`, re.oauthGrant(t, gh, old, true))
		if r.status != http.StatusBadGateway || r.err.Error.Code != "upstream_error" || r.err.Error.UpstreamStatus != 401 {
			t.Fatalf("second 401: %d %s", r.status, r.body)
		}
		if got := refreshes(re.fake, gh) - before; got != 1 {
			t.Fatalf("%d refreshes, want exactly 1", got)
		}
		if calls := apiCalls(re.fake, gh); len(calls) != 2 {
			t.Fatalf("%d API calls, want 2 (the call and one retry)", len(calls))
		}
		// The rotation happened, so the fresh pair comes back on the error.
		fresh := re.openRotated(t, gh, rotatedOf(t, r.body))
		re.fake.SetHandler(nil)
		if string(fresh.Access) == string(old.Access) || testutil.ViewerStatus(t, re.fake, gh, string(fresh.Access)) != http.StatusOK {
			t.Fatal("the pair on the error is not the fresh one")
		}
	})

	t.Run("retried call fails otherwise and still carries the fresh pair", func(t *testing.T) {
		old := mintPair(t, re.fake, gh, 0)
		re.fake.RevokeToken(gh, string(old.Access))
		re.fake.Reset()
		r := re.op(t, gh, "get_repo", `{"owner":"pinned-tester","repo":"no-such-repo"}`, re.oauthGrant(t, gh, old, true))
		if r.status != http.StatusBadGateway || r.err.Error.Code != "upstream_error" || r.err.Error.UpstreamStatus != 404 {
			t.Fatalf("retried call: %d %s", r.status, r.body)
		}
		fresh := re.openRotated(t, gh, rotatedOf(t, r.body))
		if calls := apiCalls(re.fake, gh); len(calls) != 2 || calls[1] != "Bearer "+string(fresh.Access) {
			t.Fatalf("%d API calls", len(calls))
		}
	})

	t.Run("unknown expiry is used as is, then rotated after a 401", func(t *testing.T) {
		p := mintPair(t, re.fake, gh, 0)
		p.ExpiresAt = time.Time{} // the provider sent no expires_in
		re.fake.Reset()
		before := refreshes(re.fake, gh)
		r := re.op(t, gh, "get_viewer", `{}`, re.oauthGrant(t, gh, p, true))
		if r.status != http.StatusOK || rotatedOf(t, r.body) != "" || refreshes(re.fake, gh) != before {
			t.Fatalf("a valid pair of unknown expiry: %d %s", r.status, r.body)
		}
		re.fake.RevokeToken(gh, string(p.Access))
		r = re.op(t, gh, "get_viewer", `{}`, re.oauthGrant(t, gh, p, true))
		if r.status != http.StatusOK || refreshes(re.fake, gh)-before != 1 {
			t.Fatalf("after the token died: %d %s", r.status, r.body)
		}
		re.openRotated(t, gh, rotatedOf(t, r.body))
	})
}

// TestRotationFailures: a dead refresh token is reconnect_required; a
// transient failure (5xx, the provider or the broker timing out) is
// refresh_unavailable and never reconnect_required, and does not spend the
// grant; without a member key nothing is refreshed; without a broker
// nothing rotates.
func TestRotationFailures(t *testing.T) {
	gh := fakeapi.GitHub
	type check struct {
		status   int
		code     string
		refresh  int // refresh requests the fake saw
		apiCalls int
	}
	verify := func(t *testing.T, re *rotEnv, r response, before int, want check) {
		t.Helper()
		if r.status != want.status || r.err.Error.Code != want.code {
			t.Fatalf("got %d %s, want %d %s", r.status, r.body, want.status, want.code)
		}
		if rotatedOf(t, r.body) != "" {
			t.Fatal("a failed rotation carries a rotated pair")
		}
		if got := refreshes(re.fake, gh) - before; got != want.refresh {
			t.Fatalf("the fake saw %d refresh requests, want %d", got, want.refresh)
		}
		if got := len(apiCalls(re.fake, gh)); got != want.apiCalls {
			t.Fatalf("the fake's API saw %d calls, want %d", got, want.apiCalls)
		}
	}

	t.Run("invalid_grant is reconnect_required", func(t *testing.T) {
		re := newRotEnv(t, brokerOpts{}, nil)
		old := mintPair(t, re.fake, gh, 9*time.Hour)
		re.fake.SetTokenFault(gh, fakeapi.FaultInvalidGrant, 1) // GitHub: HTTP 200 with bad_refresh_token
		re.fake.Reset()
		before := refreshes(re.fake, gh)
		r := re.op(t, gh, "get_viewer", `{}`, re.oauthGrant(t, gh, old, true))
		verify(t, re, r, before, check{status: 403, code: "reconnect_required", refresh: 1})
		if msg := r.err.Error.Message; !strings.Contains(msg, "GitHub") || !strings.Contains(msg, "reconnect it in Integrations") {
			t.Fatalf("message %q", msg)
		}
		expectMetric(t, re.metrics(t), `pinned_sidecar_token_refreshes_total{outcome="reconnect",service="github"} 1`)
	})

	t.Run("provider 5xx is retryable", func(t *testing.T) {
		re := newRotEnv(t, brokerOpts{}, nil)
		old := mintPair(t, re.fake, gh, 9*time.Hour)
		re.fake.SetTokenFault(gh, fakeapi.FaultServerError, 1)
		re.fake.Reset()
		before := refreshes(re.fake, gh)
		g := re.oauthGrant(t, gh, old, true)
		r := re.op(t, gh, "get_viewer", `{}`, g)
		verify(t, re, r, before, check{status: 503, code: "refresh_unavailable", refresh: 1})
		if r.header.Get("Retry-After") == "" || r.err.Error.RetryAfter < 1 {
			t.Fatalf("no Retry-After: %s", r.body)
		}
		// Retryable means it: the same grant, once the provider is back.
		r = re.op(t, gh, "get_viewer", `{}`, g)
		if r.status != http.StatusOK {
			t.Fatalf("the retry: %d %s", r.status, r.body)
		}
		re.openRotated(t, gh, rotatedOf(t, r.body))
		expectMetric(t, re.metrics(t),
			`pinned_sidecar_token_refreshes_total{outcome="retryable",service="github"} 1`,
			`pinned_sidecar_token_refreshes_total{outcome="ok",service="github"} 1`)
	})

	t.Run("provider timeout is retryable", func(t *testing.T) {
		re := newRotEnv(t, brokerOpts{providerTimeout: 300 * time.Millisecond}, nil)
		old := mintPair(t, re.fake, gh, 9*time.Hour)
		re.fake.SetTokenFault(gh, fakeapi.FaultHang, 1)
		re.fake.Reset()
		before := refreshes(re.fake, gh)
		g := re.oauthGrant(t, gh, old, true)
		start := time.Now()
		r := re.op(t, gh, "get_viewer", `{}`, g)
		verify(t, re, r, before, check{status: 503, code: "refresh_unavailable", refresh: 1})
		if d := time.Since(start); d > 15*time.Second { // the fault hangs until canceled
			t.Fatalf("the timeout took %s", d)
		}
		// The hung request consumed nothing: the same grant rotates now.
		r = re.op(t, gh, "get_viewer", `{}`, g)
		if r.status != http.StatusOK {
			t.Fatalf("the retry: %d %s", r.status, r.body)
		}
		re.openRotated(t, gh, rotatedOf(t, r.body))
	})

	t.Run("sidecar refresh timeout is retryable", func(t *testing.T) {
		re := newRotEnv(t, brokerOpts{}, func(c *Config) { c.RefreshTimeout = 300 * time.Millisecond })
		old := mintPair(t, re.fake, gh, 9*time.Hour)
		re.fake.SetTokenFault(gh, fakeapi.FaultHang, 1)
		re.fake.Reset()
		before := refreshes(re.fake, gh)
		start := time.Now()
		r := re.op(t, gh, "get_viewer", `{}`, re.oauthGrant(t, gh, old, true))
		verify(t, re, r, before, check{status: 503, code: "refresh_unavailable", refresh: 1})
		if d := time.Since(start); d > 15*time.Second { // the fault hangs until canceled
			t.Fatalf("the timeout took %s", d)
		}
	})

	t.Run("no member key: stale pair refused, nothing refreshed or called", func(t *testing.T) {
		re := newRotEnv(t, brokerOpts{}, nil)
		old := mintPair(t, re.fake, gh, 9*time.Hour)
		re.fake.Reset()
		before := refreshes(re.fake, gh)
		r := re.op(t, gh, "get_viewer", `{}`, re.oauthGrant(t, gh, old, false))
		verify(t, re, r, before, check{status: 403, code: "rotation_refused"})
		if !strings.Contains(r.err.Error.Message, "member_key") {
			t.Fatalf("message %q", r.err.Error.Message)
		}
		// The old pair is untouched: its refresh token still rotates when a
		// grant with a member key brings it.
		r = re.op(t, gh, "get_viewer", `{}`, re.oauthGrant(t, gh, old, true))
		if r.status != http.StatusOK || refreshes(re.fake, gh)-before != 1 {
			t.Fatalf("the old pair after the refusal: %d %s", r.status, r.body)
		}
		re.openRotated(t, gh, rotatedOf(t, r.body))
	})

	t.Run("no member key: a 401 is refused, nothing refreshed", func(t *testing.T) {
		re := newRotEnv(t, brokerOpts{}, nil)
		old := mintPair(t, re.fake, gh, 0)
		re.fake.RevokeToken(gh, string(old.Access))
		re.fake.Reset()
		before := refreshes(re.fake, gh)
		r := re.op(t, gh, "get_viewer", `{}`, re.oauthGrant(t, gh, old, false))
		verify(t, re, r, before, check{status: 403, code: "rotation_refused", apiCalls: 1})
		if r.err.Error.UpstreamStatus != 401 {
			t.Fatalf("upstream_status %d", r.err.Error.UpstreamStatus)
		}
	})

	t.Run("broker refuses the sidecar", func(t *testing.T) {
		re := newRotEnv(t, brokerOpts{instanceToken: "not-the-instance-token-0123456789abcdef"}, nil)
		old := mintPair(t, re.fake, gh, 9*time.Hour)
		re.fake.Reset()
		before := refreshes(re.fake, gh)
		r := re.op(t, gh, "get_viewer", `{}`, re.oauthGrant(t, gh, old, true))
		verify(t, re, r, before, check{status: 502, code: "refresh_failed"})
		expectMetric(t, re.metrics(t), `pinned_sidecar_token_refreshes_total{outcome="failed",service="github"} 1`)
	})

	t.Run("no broker: a stale pair runs as is and its 401 says rotation is off", func(t *testing.T) {
		re := newRotEnv(t, brokerOpts{noBroker: true}, nil)
		old := mintPair(t, re.fake, gh, 9*time.Hour)
		re.fake.Reset()
		before := refreshes(re.fake, gh)
		r := re.op(t, gh, "get_viewer", `{}`, re.oauthGrant(t, gh, old, true))
		verify(t, re, r, before, check{status: 502, code: "rotation_not_configured", apiCalls: 1})
		if r.err.Error.UpstreamStatus != 401 {
			t.Fatalf("upstream_status %d", r.err.Error.UpstreamStatus)
		}
		live := mintPair(t, re.fake, gh, 0)
		if r := re.op(t, gh, "get_viewer", `{}`, re.oauthGrant(t, gh, live, true)); r.status != http.StatusOK || rotatedOf(t, r.body) != "" {
			t.Fatalf("a live pair without a broker: %d %s", r.status, r.body)
		}
		assertNoSecrets(t, re.allLogs(), string(old.Access), string(old.Refresh), string(live.Access), string(live.Refresh))
	})
}
