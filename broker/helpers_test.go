package broker

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/internal/brokerapi"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/httperr"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
)

const (
	testReturn    = "https://app.example.test/integrations/connected"
	testInstance  = "instance-token-0123456789abcdefghijklmnopqrstuvwxyz"
	testInstance2 = "instance-token-second-0123456789abcdefghijklmnopqrst"
)

// env is a broker wired to the provider fake, served on loopback.
type env struct {
	t       *testing.T
	fake    *fakeapi.Server
	b       *Broker
	srv     *httptest.Server
	url     string
	clock   *testutil.Clock
	logs    *testutil.SyncBuffer
	cfg     Config
	browser *http.Client // cookie jar; broker on loopback, providers at the fake
}

// clientsFor are the broker's clients in tests: the fake's fixed ones.
func clientsFor(services ...string) map[string]Client {
	out := map[string]Client{}
	for _, s := range services {
		out[s] = Client{ID: fakeapi.OAuthClientID(s), Secret: fakeapi.OAuthClientSecret(s)}
	}
	return out
}

var allServices = []string{fakeapi.GitHub, fakeapi.DNSimple, fakeapi.Stripe, fakeapi.HubSpot, fakeapi.Linear}

// newEnv starts the fake and a broker with clients for every service
// (edit may change the config before New).
func newEnv(t *testing.T, edit func(*Config)) *env {
	t.Helper()
	fake := testutil.Fake(t)
	srv := httptest.NewUnstartedServer(nil)
	e := &env{t: t, fake: fake, srv: srv, url: "http://" + srv.Listener.Addr().String(),
		clock: testutil.FrozenClock(time.Now()), logs: &testutil.SyncBuffer{}}
	logger := zerolog.New(e.logs)
	e.cfg = Config{
		PublicURL:            e.url,
		AllowedReturnOrigins: []string{"https://app.example.test", "http://localhost:3000"},
		StateKey:             bytes.Repeat([]byte{7}, StateKeySize),
		InstanceTokens:       []string{testInstance, testInstance2},
		Clients:              clientsFor(allServices...),
		ProviderTimeout:      3 * time.Second,
		Override:             &Override{Addr: fake.Addr(), CAPEM: fake.CACertPEM()},
		Logger:               &logger,
		Now:                  e.clock.Now,
	}
	if edit != nil {
		edit(&e.cfg)
	}
	b, err := New(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	e.b = b
	for svc := range e.cfg.Clients {
		c := e.cfg.Clients[svc]
		fake.RegisterOAuthClient(svc, c.ID, c.Secret, b.RedirectURL(svc))
	}
	srv.Config.Handler = b.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	e.browser = e.newBrowser()
	return e
}

// newBrowser returns a client with its own cookie jar that follows no
// redirects: requests to the broker go to the loopback server, everything
// else to the fake (trusting its CA).
func (e *env) newBrowser() *http.Client {
	jar, _ := cookiejar.New(nil)
	brokerHost := strings.TrimPrefix(e.url, "http://")
	local := &http.Transport{Proxy: nil}
	e.t.Cleanup(local.CloseIdleConnections)
	fakeRT := e.fake.Client().Transport
	return &http.Client{
		Jar: jar,
		Transport: rtFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Host == brokerHost {
				return local.RoundTrip(r)
			}
			return fakeRT.RoundTrip(r)
		}),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       10 * time.Second,
	}
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// get fetches a URL with a browser and returns status, Location and body.
func get(t *testing.T, c *http.Client, u string) (int, string, []byte) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), body
}

func startURL(e *env, service string, q url.Values) string {
	return e.url + "/oauth/" + service + "/start?" + q.Encode()
}

// flow is one connection attempt's three hops.
type flow struct {
	authorize *url.URL // where /start sent the browser
	callback  *url.URL // where the provider sent it back
	final     *url.URL // where /callback sent it
}

// connect runs start → authorize (the fake auto-approves) → callback.
func (e *env) connect(t *testing.T, browser *http.Client, service, cp, ret string) flow {
	t.Helper()
	var f flow
	status, loc, body := get(t, browser, startURL(e, service, url.Values{"cap": {cp}, "return": {ret}}))
	if status != http.StatusFound {
		t.Fatalf("start: %d %s", status, body)
	}
	f.authorize = mustParse(t, loc)
	status, loc, body = get(t, browser, loc)
	if status != http.StatusFound {
		t.Fatalf("authorize: %d %s", status, body)
	}
	f.callback = mustParse(t, loc)
	status, loc, body = get(t, browser, loc)
	if status != http.StatusFound {
		t.Fatalf("callback: %d %s", status, body)
	}
	f.final = mustParse(t, loc)
	return f
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// frag decodes a fragment.
func frag(t *testing.T, u *url.URL) url.Values {
	t.Helper()
	v, err := url.ParseQuery(u.Fragment)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// apiError decodes {"error": {"code", "message", "request_id"}}.
func apiError(t *testing.T, body []byte) brokerapi.Code {
	t.Helper()
	var eb httperr.Envelope[brokerapi.Code]
	if err := json.Unmarshal(body, &eb); err != nil {
		t.Fatalf("not an error body: %s", body)
	}
	return eb.Error.Code
}

// post sends POST /api/refresh.
func (e *env) postRefresh(t *testing.T, token, contentType, body string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.url+"/api/refresh", strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func refreshBody(service, rt string) string {
	b, _ := json.Marshal(map[string]string{"service": service, "refresh_token": rt})
	return string(b)
}

// viewer calls the service's viewer endpoint at the fake with an OAuth
// token (Bearer) and returns the status.
func (e *env) viewer(t *testing.T, service, token string) int {
	t.Helper()
	return testutil.ViewerStatus(t, e.fake, service, token)
}
