package mcpserver

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/elevenmessenger/pinned/secret"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elevenmessenger/pinned/broker"
	"github.com/elevenmessenger/pinned/internal/connstore"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/rotate"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

const testInstanceToken = "mcpserver-test-instance-token-0123456789"

// newBroker starts a real broker for GitHub (the fake's default client)
// and returns the sidecar's client to it.
func newBroker(t *testing.T, fake *fakeapi.Server) api.Refresher {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	u := "http://" + srv.Listener.Addr().String()
	b, err := broker.New(broker.Config{
		PublicURL:      u,
		StateKey:       bytes.Repeat([]byte{7}, broker.StateKeySize),
		InstanceTokens: []string{testInstanceToken},
		Clients:        map[string]broker.Client{"github": {ID: fakeapi.OAuthClientID("github"), Secret: fakeapi.OAuthClientSecret("github")}},
		Override:       &broker.Override{Addr: fake.Addr(), CAPEM: fake.CACertPEM()},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = b.Handler()
	srv.Start()
	t.Cleanup(b.Close)
	t.Cleanup(srv.Close)
	tr := &http.Transport{Proxy: nil}
	t.Cleanup(tr.CloseIdleConnections)
	bc, err := rotate.NewBrokerClient(u, testInstanceToken, rotate.BrokerOptions{HTTPClient: &http.Client{Transport: tr, Timeout: 30 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return bc
}

// mintPair connects GitHub at the fake's OAuth endpoints, issued age ago.
func mintPair(t *testing.T, fake *fakeapi.Server, age time.Duration) (access, refresh string, expires time.Time) {
	t.Helper()
	p := testutil.MintPair(t, fake, "github", age)
	return p.Access, p.Refresh, p.ExpiresAt
}

// TestRotatedPairRestored: a call with an expired single-use GitHub pair
// rotates it through the broker; the fresh pair comes back sealed to the
// store's key and is re-sealed into the store at once; the next call runs
// with it and refreshes nothing (the old refresh token is spent, so a
// call still holding it would fail).
func TestRotatedPairRestored(t *testing.T) {
	fake, _ := sharedEngine(t)
	access, refresh, exp := mintPair(t, fake, 9*time.Hour) // 8-hour tokens: expired an hour ago
	conn := connstore.Connection{
		Service: "github", Cap: connstore.CapRead, Kind: grant.KindOAuth,
		Token: secret.Secret(access), Refresh: secret.Secret(refresh), TokenExpiresAt: exp.UTC().Format(time.RFC3339),
	}
	e := newEnv(t, envOpts{conns: []connstore.Connection{conn}, refresher: newBroker(t, fake)})
	cs := e.connect(t, clientOpts{answer: "accept"})
	_, before := fake.TokenRequests("github")

	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_get_viewer", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	got, err := e.store.Get("github")
	if err != nil {
		t.Fatal(err)
	}
	if got.Token == conn.Token || got.Refresh == conn.Refresh || got.Refresh == "" || got.RotatedAt.IsZero() {
		t.Fatalf("the store still holds the old pair (rotated at %v)", got.RotatedAt)
	}
	if exp2, _ := time.Parse(time.RFC3339, got.TokenExpiresAt); !exp2.After(time.Now()) {
		t.Errorf("fresh expiry %q", got.TokenExpiresAt)
	}
	if _, n := fake.TokenRequests("github"); n != before+1 {
		t.Errorf("%d refreshes, want 1", n-before)
	}

	fake.Reset()
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_list_repos", Arguments: map[string]any{"per_page": 1}})
	if err != nil || res.IsError {
		t.Fatalf("next call: %v %+v", err, res)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer "+string(got.Token) {
		t.Errorf("the next call did not run with the stored fresh token (%d requests)", len(reqs))
	}
	if _, n := fake.TokenRequests("github"); n != before+1 {
		t.Errorf("the next call refreshed again (%d refreshes)", n-before)
	}
	if f := findSecrets(e.wire.String()+e.logs.String(), e.store); len(f) > 0 {
		t.Errorf("%d secrets in the transcript", len(f))
	}
	for _, s := range []string{access, refresh} {
		if strings.Contains(e.wire.String(), s) || strings.Contains(e.logs.String(), s) {
			t.Error("the old pair is in the transcript")
		}
	}
}
