package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/elevenmessenger/pinned/secret"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/connstore"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/testing/testenv"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/sidecar"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// shared is one fake and one engine for the package's tests (the guest
// compiles once).
var shared testenv.Shared

func sharedEngine(t testing.TB) (*fakeapi.Server, *host.Engine) {
	t.Helper()
	fake, eng, _, _ := shared.Get(t)
	return fake, eng
}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// env is a store, a sidecar and an MCP server on the shared engine.
type env struct {
	fake  *fakeapi.Server
	store *connstore.Store
	side  *sidecar.Server
	srv   *Server
	clock *testutil.Clock
	wire  *testutil.SyncBuffer
	logs  *testutil.SyncBuffer // the server's log (a locked buffer: tool calls log concurrently)
}

type envOpts struct {
	conns     []connstore.Connection
	tools     string
	maxResult int
	refresher api.Refresher
	allow     []api.Flow
	prom      *prometheus.Registry
	protocol  string // Config.Protocol
	nonces    NonceStore
	key       []byte // Config.ConfirmKey
	// approvalURL, approvalOnly, approvalWait, approvals: the Config's
	// approval links (the secret is httpToken).
	approvalURL  string
	approvalOnly bool
	approvalWait time.Duration
	approvals    ApprovalStore
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	fake, eng := sharedEngine(t)
	fake.Reset()
	store := testenv.Store(t, "", o.conns...)
	key, err := grant.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	side, err := sidecar.New(sidecar.Config{Engine: eng, Key: key, Refresher: o.refresher, Prometheus: o.prom})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{fake: fake, store: store, side: side, clock: &testutil.Clock{}, wire: &testutil.SyncBuffer{}, logs: &testutil.SyncBuffer{}}
	log := zerolog.New(e.logs)
	e.srv, err = New(Config{Sidecar: side, Store: store, Tools: o.tools, MaxResultBytes: o.maxResult, Now: e.clock.Now, Logger: &log, Version: "test", AllowFlows: o.allow,
		Protocol: o.protocol, Nonces: o.nonces, ConfirmKey: o.key,
		ApprovalURL: o.approvalURL, ApprovalOnly: o.approvalOnly, ApprovalWait: o.approvalWait, Approvals: o.approvals, ApprovalSecret: httpToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		scanSecrets(t, e.wire.String(), e.store)
		scanSecrets(t, e.logs.String(), e.store)
	})
	return e
}

// scanSecrets fails the test when a transcript holds a connection's token
// or refresh token, a fake credential, the store's key or any window of
// the sealed store file.
func scanSecrets(t *testing.T, transcript string, store *connstore.Store) {
	t.Helper()
	for _, s := range findSecrets(transcript, store) {
		t.Errorf("a secret (%d bytes, starting %.4q) is in the MCP transcript", len(s), s)
	}
}

// findSecrets returns the secrets of scanSecrets found in transcript.
func findSecrets(transcript string, store *connstore.Store) []string {
	var found, secrets []string
	for _, svc := range fakeapi.Services() {
		// A user part (an account email) is not scanned for here: the
		// fake's other services answer the same address as data; the
		// host withholds it only from its own connection's answers.
		secrets = append(secrets, fakeapi.Token(svc), fakeapi.OAuthToken(svc))
	}
	held, _ := testenv.StoreSecrets(store) // an unwritten store has no file yet
	secrets = append(secrets, held...)
	for _, s := range secrets {
		if s != "" && strings.Contains(transcript, s) {
			found = append(found, s)
		}
	}
	return found
}

// clientOpts shape a test client.
type clientOpts struct {
	answer   string // elicitation: "accept", "decline", "cancel"; "" = no elicitation capability
	protocol string // "" = the SDK's latest
	manual   bool   // the client does not retry input_required results itself
	asked    *[]string
}

// connect connects an SDK client over in-memory transports; every message
// is logged into e.wire.
func (e *env) connect(t *testing.T, o clientOpts) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := e.srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := newClient(o).Connect(ctx, &mcp.LoggingTransport{Transport: ct, Writer: e.wire}, &mcp.ClientSessionOptions{ProtocolVersion: o.protocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

var askMu sync.Mutex

func newClient(o clientOpts) *mcp.Client {
	opts := &mcp.ClientOptions{}
	if o.manual {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	if o.answer != "" {
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if o.asked != nil {
				askMu.Lock()
				*o.asked = append(*o.asked, req.Params.Message)
				askMu.Unlock()
			}
			return &mcp.ElicitResult{Action: o.answer}, nil
		}
	}
	return mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, opts)
}

// requestsTo counts the fake's requests with the method and path prefix.
func requestsTo(fake *fakeapi.Server, method, pathPrefix string) int {
	n := 0
	for _, r := range fake.Requests() {
		if r.Method == method && strings.HasPrefix(r.Path, pathPrefix) {
			n++
		}
	}
	return n
}

// toolText is the text of a result's first content.
func toolText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("no content: %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T", res.Content[0])
	}
	return tc.Text
}

// errorCode is the code of an isError result ("" when it is not one).
func errorCode(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if !res.IsError {
		return ""
	}
	var b struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(toolText(t, res)), &b); err != nil {
		t.Fatalf("error text is not JSON: %s", toolText(t, res))
	}
	return b.Error.Code
}

var (
	ghWrite     = connstore.Connection{Service: "github", Cap: connstore.CapWrite, Kind: grant.KindPAT, Token: secret.Secret(fakeapi.Token("github")), Viewer: "pinned-tester"}
	stripeRead  = connstore.Connection{Service: "stripe", Cap: connstore.CapRead, Kind: grant.KindPAT, Token: secret.Secret(fakeapi.Token("stripe")), Viewer: "acct_x"}
	issueArgs   = map[string]any{"owner": "pinned-tester", "repo": "notes", "title": "Hello from MCP", "body": "via pinned mcp"}
	issueSpoken = "[GitHub: owner \"pinned-tester\", repo \"notes\"] Open an issue titled \"Hello from MCP\" in pinned-tester/notes?\nAlso sent:\n- body: via pinned mcp"
)
