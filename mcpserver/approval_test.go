package mcpserver

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elevenmessenger/pinned/internal/connstore"
	"github.com/elevenmessenger/pinned/internal/state"
	"github.com/elevenmessenger/pinned/internal/testing/redistest"
)

// newApprovalEnv is an env whose server serves approval links over HTTP
// (its own address as Config.ApprovalURL).
func newApprovalEnv(t *testing.T, o envOpts) (*env, string) {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	o.approvalURL = "http://" + ts.Listener.Addr().String()
	o.conns = []connstore.Connection{ghWrite}
	e := newEnv(t, o)
	ts.Config.Handler = e.srv.Handler(httpToken)
	ts.Start()
	t.Cleanup(ts.Close)
	return e, ts.URL
}

// person is the member's browser: its own cookie jar, no bearer token.
type person struct{ c *http.Client }

func newPerson(t *testing.T) *person {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &person{&http.Client{Jar: jar, Transport: tr, Timeout: 10 * time.Second}}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// open loads a link's page: its status, body and form token ("" when it
// shows no form).
func (p *person) open(t *testing.T, link string) (int, string, string) {
	t.Helper()
	resp, err := p.c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	csrf := ""
	if m := csrfRE.FindSubmatch(b); m != nil {
		csrf = string(m[1])
	}
	return resp.StatusCode, string(b), csrf
}

// decide posts the page's form with extra headers.
func (p *person) decide(t *testing.T, link, csrf, secret, decision string, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, link, strings.NewReader(url.Values{"csrf": {csrf}, "owner_secret": {secret}, "decision": {decision}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := p.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// approve opens link and decides with the owner secret.
func (p *person) approve(t *testing.T, link, decision string) {
	t.Helper()
	status, body, csrf := p.open(t, link)
	if status != http.StatusOK || csrf == "" {
		t.Fatalf("open %s: %d, form token %q\n%s", link, status, csrf, body)
	}
	if status, body := p.decide(t, link, csrf, httpToken, decision, nil); status != http.StatusOK {
		t.Fatalf("decide %s: %d\n%s", decision, status, body)
	}
}

// urlCaps declares URL-mode elicitation only: a client that cannot show
// a form.
var urlCaps = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}

// connectURLClient connects a client with caps over in-memory transports
// on protocol ("" the SDK's latest). onURL answers each elicitation.
func (e *env) connectURLClient(t *testing.T, caps *mcp.ClientCapabilities, protocol string, manual bool, onURL func(*mcp.ElicitParams) string) *mcp.ClientSession {
	t.Helper()
	return connectURLClient(t, e.srv, e.wire, caps, protocol, manual, onURL)
}

// connectURLClient connects a client to srv (connectURLClient of env).
func connectURLClient(t *testing.T, srv *Server, wire io.Writer, caps *mcp.ClientCapabilities, protocol string, manual bool, onURL func(*mcp.ElicitParams) string) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{Capabilities: caps, ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: onURL(req.Params)}, nil
	}}
	if manual {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "url-agent", Version: "1"}, opts).Connect(context.Background(),
		&mcp.LoggingTransport{Transport: ct, Writer: wire}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestApprovalLink: a client that shows URLs but not forms gets write
// tools when the server serves approval links, and a write's consent as
// a link to a page that shows every value sent. The call completes after
// the person decides there: approved, one request at the fake; declined,
// none. On both eras (the SDK plays the legacy session's round trip),
// and with ApprovalOnly for a client that could show a form.
func TestApprovalLink(t *testing.T) {
	for _, tc := range []struct {
		name, protocol, decision string
		formClient, only         bool
	}{
		{"2026-07-28 approve", "", "approve", false, false},
		{"2026-07-28 decline", "", "decline", false, false},
		{"2025-11-25 approve", Revision20251125, "approve", false, false},
		{"2025-11-25 decline", Revision20251125, "decline", false, false},
		{"approval only, form client", "", "approve", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, base := newApprovalEnv(t, envOpts{approvalOnly: tc.only})
			p := newPerson(t)
			caps := urlCaps
			if tc.formClient {
				caps = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}
			}
			var mu sync.Mutex
			var links []string
			var page string
			var wg sync.WaitGroup
			cs := e.connectURLClient(t, caps, tc.protocol, false, func(ep *mcp.ElicitParams) string {
				mu.Lock()
				defer mu.Unlock()
				if ep.Mode != "url" || ep.ElicitationID == "" || !strings.HasSuffix(ep.URL, "/approve/"+ep.ElicitationID) {
					t.Errorf("elicitation %+v: want a URL-mode link to /approve/<elicitationId>", ep)
				}
				links = append(links, ep.URL)
				// The client opens the link and says so at once; the person
				// decides a little later, on the page.
				wg.Add(1)
				go func() {
					defer wg.Done()
					time.Sleep(300 * time.Millisecond)
					status, body, csrf := p.open(t, ep.URL)
					mu.Lock()
					page = body
					mu.Unlock()
					if status != http.StatusOK || csrf == "" {
						t.Errorf("page %d %q", status, body)
						return
					}
					if status, body := p.decide(t, ep.URL, csrf, httpToken, tc.decision, nil); status != http.StatusOK {
						t.Errorf("decide: %d %s", status, body)
					}
				}()
				return "accept"
			})
			if names := toolNames(listTools(t, cs)); !slices.Contains(names, "github_create_issue") {
				t.Fatalf("a URL-mode client with approval links lists %v", names)
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_create_issue", Arguments: issueArgs})
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if len(links) != 1 || !strings.HasPrefix(links[0], base+"/approve/") {
				t.Errorf("links %q, want one under %s", links, base)
			}
			// The page shows the confirm line and every other value sent.
			for _, want := range []string{"Open an issue titled &#34;Hello from MCP&#34; in pinned-tester/notes", "<dt>body</dt><dd><pre>via pinned mcp</pre>", "github"} {
				if !strings.Contains(page, want) {
					t.Errorf("the page lacks %q:\n%s", want, page)
				}
			}
			wantWrites, wantCode := 1, ""
			if tc.decision == "decline" {
				wantWrites, wantCode = 0, CodeConfirmationDeclined
			}
			if got := errorCode(t, res); got != wantCode {
				t.Errorf("result code %q, want %q: %s", got, wantCode, toolText(t, res))
			}
			if n := requestsTo(e.fake, "POST", "/repos/"); n != wantWrites {
				t.Errorf("%d writes at the fake, want %d", n, wantWrites)
			}
		})
	}
	t.Run("no links, no write tools", func(t *testing.T) {
		e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
		cs := e.connectURLClient(t, urlCaps, "", false, func(*mcp.ElicitParams) string { return "accept" })
		if names := toolNames(listTools(t, cs)); slices.Contains(names, "github_create_issue") {
			t.Errorf("a URL-mode client without approval links lists %v", names)
		}
	})
}

// linkRound is a manual client's first round of a write: its link and
// requestState.
func linkRound(t *testing.T, cs *mcp.ClientSession, args map[string]any) (link, state string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_create_issue", Arguments: args})
	if err != nil || !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("first round: %v %+v", err, res)
	}
	ep, ok := res.InputRequests["confirm"].(*mcp.ElicitParams)
	if !ok || ep.Mode != "url" || ep.URL == "" {
		t.Fatalf("input request %+v: want a URL-mode elicitation", res.InputRequests["confirm"])
	}
	return ep.URL, res.RequestState
}

// retryLink sends a write's second round with the client's answer.
func retryLink(t *testing.T, cs *mcp.ClientSession, args map[string]any, state, action string) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_create_issue", Arguments: args, RequestState: state,
		InputResponses: mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: action}}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestApprovalLinkHostile: an approval link is bound to the person, the
// exact args, one use and an expiry. The client's accept alone, a wrong
// owner secret, a form posted without this page's token (CSRF) or from
// another site, a made-up link, args changed after the link was issued,
// a replay of the call or of the approval, and an expired link each send
// nothing.
func TestApprovalLinkHostile(t *testing.T) {
	e, base := newApprovalEnv(t, envOpts{approvalWait: 300 * time.Millisecond})
	cs := e.connectURLClient(t, urlCaps, "", true, func(*mcp.ElicitParams) string { return "accept" })
	writes := func() int { return requestsTo(e.fake, "POST", "/repos/") }
	stillPending := func(t *testing.T, link, state string) {
		t.Helper()
		res := retryLink(t, cs, issueArgs, state, "accept")
		if !res.NeedsInput() || res.RequestState != state {
			t.Fatalf("retry before a decision: %+v, want input_required again with the same requestState", res)
		}
		if ep, _ := res.InputRequests["confirm"].(*mcp.ElicitParams); ep == nil || ep.URL != link {
			t.Errorf("the link asked again is %+v, want %s", res.InputRequests["confirm"], link)
		}
	}

	link, state := linkRound(t, cs, issueArgs)
	t.Run("the client's accept alone", func(t *testing.T) {
		stillPending(t, link, state)
		if res := retryLink(t, cs, issueArgs, state+"x", "accept"); errorCode(t, res) != CodeConfirmationInvalid {
			t.Errorf("an altered requestState: %s", toolText(t, res))
		}
	})
	t.Run("wrong owner secret", func(t *testing.T) {
		p := newPerson(t)
		_, _, csrf := p.open(t, link)
		if status, body := p.decide(t, link, csrf, "not-the-owner-secret-0123456789", "approve", nil); status != http.StatusUnauthorized || !strings.Contains(body, "not this server") {
			t.Errorf("wrong secret: %d %s", status, body)
		}
		if status, _ := p.decide(t, link, csrf, "", "approve", nil); status != http.StatusUnauthorized {
			t.Errorf("no secret: %d", status)
		}
		stillPending(t, link, state)
	})
	t.Run("csrf", func(t *testing.T) {
		victim, attacker := newPerson(t), newPerson(t)
		_, _, victimCSRF := victim.open(t, link)
		link2, _ := linkRound(t, cs, map[string]any{"owner": "pinned-tester", "repo": "notes", "title": "other"})
		_, _, otherLinkCSRF := victim.open(t, link2)
		for _, tc := range []struct {
			name   string
			p      *person
			csrf   string
			header map[string]string
		}{
			{"no cookie, the victim's token", attacker, victimCSRF, nil},
			{"no token", victim, "", nil},
			{"another link's token", victim, otherLinkCSRF, nil},
			{"made-up token", victim, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", nil},
			{"posted from another site", victim, victimCSRF, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}},
		} {
			if status, body := tc.p.decide(t, link, tc.csrf, httpToken, "approve", tc.header); status != http.StatusForbidden {
				t.Errorf("%s: %d, want 403\n%s", tc.name, status, body)
			}
		}
		stillPending(t, link, state)
	})
	t.Run("forged link", func(t *testing.T) {
		p := newPerson(t)
		for _, l := range []string{base + "/approve/AAAAAAAAAAAAAAAAAAAAAA", base + "/approve/" + strings.Repeat("x", 300), base + "/approve/"} {
			if status, body, csrf := p.open(t, l); status != http.StatusNotFound || csrf != "" {
				t.Errorf("GET %s: %d, form %q\n%s", l, status, csrf, body)
			}
		}
		_, _, csrf := p.open(t, link)
		forged := base + "/approve/AAAAAAAAAAAAAAAAAAAAAA"
		if status, _ := p.decide(t, forged, csrf, httpToken, "approve", nil); status != http.StatusForbidden && status != http.StatusNotFound {
			t.Errorf("POST to a made-up link: %d", status)
		}
	})
	if n := writes(); n != 0 {
		t.Fatalf("%d writes before any approval", n)
	}
	t.Run("args changed after the link was issued", func(t *testing.T) {
		newPerson(t).approve(t, link, "approve")
		other := map[string]any{"owner": "pinned-tester", "repo": "notes", "title": "Hello from MCP", "body": "something else"}
		if res := retryLink(t, cs, other, state, "accept"); errorCode(t, res) != CodeConfirmationMismatch {
			t.Errorf("other args: %s", toolText(t, res))
		}
		if res := retryLink(t, cs, issueArgs, state, "accept"); errorCode(t, res) != CodeConfirmationReplayed {
			t.Errorf("the right args after: %s", toolText(t, res))
		}
		if n := writes(); n != 0 {
			t.Errorf("%d writes", n)
		}
	})
	t.Run("once", func(t *testing.T) {
		link, state := linkRound(t, cs, issueArgs)
		p := newPerson(t)
		p.approve(t, link, "approve")
		if res := retryLink(t, cs, issueArgs, state, "decline"); errorCode(t, res) != CodeConfirmationDeclined {
			// The client's decline wins over an approval: nothing sent, spent.
			t.Errorf("approved, client declined: %s", toolText(t, res))
		}
		link, state = linkRound(t, cs, issueArgs)
		p.approve(t, link, "approve")
		if res := retryLink(t, cs, issueArgs, state, "accept"); res.IsError || res.NeedsInput() {
			t.Fatalf("approved: %+v", res)
		}
		if res := retryLink(t, cs, issueArgs, state, "accept"); errorCode(t, res) != CodeConfirmationReplayed {
			t.Errorf("replayed call: %s", toolText(t, res))
		}
		status, body, csrf := p.open(t, link)
		if status != http.StatusOK || csrf != "" || !strings.Contains(body, "already approved") {
			t.Errorf("the used link's page: %d, form %q\n%s", status, csrf, body)
		}
		// A form token kept from before: the second approval is refused.
		link2, state2 := linkRound(t, cs, issueArgs)
		_, _, csrf2 := p.open(t, link2)
		p.approve(t, link2, "decline")
		if status, body := p.decide(t, link2, csrf2, httpToken, "approve", nil); status != http.StatusConflict || !strings.Contains(body, "already declined") {
			t.Errorf("approve after decline: %d %s", status, body)
		}
		if res := retryLink(t, cs, issueArgs, state2, "accept"); errorCode(t, res) != CodeConfirmationDeclined {
			t.Errorf("declined on the page: %s", toolText(t, res))
		}
		if n := writes(); n != 1 {
			t.Errorf("%d writes, want 1", n)
		}
	})
	t.Run("expired", func(t *testing.T) {
		link, state := linkRound(t, cs, issueArgs)
		e.clock.Advance(DefaultConfirmTTL + time.Second)
		if status, body, csrf := newPerson(t).open(t, link); status != http.StatusGone || csrf != "" {
			t.Errorf("an expired link: %d %q\n%s", status, csrf, body)
		}
		if res := retryLink(t, cs, issueArgs, state, "accept"); errorCode(t, res) != CodeConfirmationExpired {
			t.Errorf("an expired state: %s", toolText(t, res))
		}
		if n := writes(); n != 1 {
			t.Errorf("%d writes, want 1", n)
		}
	})
	if strings.Contains(e.logs.String(), httpToken) {
		t.Error("the owner secret is in the log")
	}
}

// TestApprovalLinkAcrossReplicas: two servers of one person with one
// confirm key on one real redis-server. A link issued by A is approved on
// B's page and the call answered at B runs once; replayed at A or B,
// refused.
func TestApprovalLinkAcrossReplicas(t *testing.T) {
	rs := redistest.Start(t)
	key := make([]byte, ConfirmKeySize)
	key[0] = 9
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
	replica := func() (*Server, string) {
		r, err := state.NewRedis(state.RedisOptions{URL: rs.URL(), StateKey: make([]byte, state.StateKeySize), Prefix: "approval-test:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		side := replicaSidecar(t)
		ts := httptest.NewUnstartedServer(nil)
		srv, err := New(Config{Sidecar: side, Store: e.store, Now: e.clock.Now, Version: "test", ConfirmKey: key, Nonces: r,
			ApprovalURL: "http://" + ts.Listener.Addr().String(), ApprovalSecret: httpToken, ApprovalWait: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ts.Config.Handler = srv.Handler(httpToken)
		ts.Start()
		t.Cleanup(ts.Close)
		return srv, ts.URL
	}
	a, _ := replica()
	b, baseB := replica()
	accept := func(*mcp.ElicitParams) string { return "accept" }
	atA := connectURLClient(t, a, e.wire, urlCaps, "", true, accept)
	atB := connectURLClient(t, b, e.wire, urlCaps, "", true, accept)
	link, st := linkRound(t, atA, issueArgs)
	onB := baseB + link[strings.Index(link, "/approve/"):]
	newPerson(t).approve(t, onB, "approve")
	if res := retryLink(t, atB, issueArgs, st, "accept"); res.IsError || res.NeedsInput() {
		t.Fatalf("answered at B: %+v", res)
	}
	for name, cs := range map[string]*mcp.ClientSession{"A": atA, "B": atB} {
		if res := retryLink(t, cs, issueArgs, st, "accept"); errorCode(t, res) != CodeConfirmationReplayed {
			t.Errorf("replayed at %s: %s", name, toolText(t, res))
		}
	}
	if n := requestsTo(e.fake, "POST", "/repos/"); n != 1 {
		t.Errorf("%d writes, want 1", n)
	}
}
