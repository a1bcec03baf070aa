package sidecar

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/elevenmessenger/pinned/secret"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/demo/fakemodel"
	"github.com/elevenmessenger/pinned/internal/research"
	"github.com/elevenmessenger/pinned/internal/research/claude"
	"github.com/elevenmessenger/pinned/internal/rotate"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// The research tests run a sidecar whose Model is the shipped client
// (package claude, the official SDK) pointed at the fake Messages API
// (internal/demo/fakemodel), which replays a scripted model, against the
// provider fake and, for rotation, a real broker.

const pagesQuestion = "Which of my DNSimple domains point at GitHub Pages?"

type resEnv struct {
	*rotEnv
	model *fakemodel.Server
}

func newResearchEnv(t *testing.T, script fakemodel.Script, mod func(*Config)) *resEnv {
	t.Helper()
	fm, err := fakemodel.New("", script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fm.Close)
	tr := &http.Transport{Proxy: nil}
	t.Cleanup(tr.CloseIdleConnections)
	m, err := claude.New(claude.Config{APIKey: fakemodel.Key, BaseURL: fm.URL(), MaxRetries: -1,
		HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	re := newRotEnv(t, brokerOpts{}, func(c *Config) {
		c.Model = m
		if mod != nil {
			mod(c)
		}
	})
	return &resEnv{rotEnv: re, model: fm}
}

// readGrant seals a 10-minute read grant for service with its fixed token
// and the member key.
func (re *resEnv) readGrant(t testing.TB, service string) string {
	t.Helper()
	return re.seal(t, grant.Grant{Service: service, Access: grant.AccessRead, MemberKey: re.member.Public().String(),
		ExpiresAt: time.Now().Add(10 * time.Minute)})
}

func (re *resEnv) research(t testing.TB, body any, header ...string) (response, ResearchResponse) {
	t.Helper()
	r := re.do(t, http.MethodPost, "/v1/research", body, header...)
	var out ResearchResponse
	if r.status == http.StatusOK {
		if err := json.Unmarshal(r.body, &out); err != nil {
			t.Fatalf("research answer: %v: %s", err, r.body)
		}
	}
	return r, out
}

// modelRequests decodes every request the fake model received.
type modelReq struct {
	raw        []byte
	header     http.Header
	System     []struct{ Text string } `json:"system"`
	ToolChoice *struct{ Type string }  `json:"tool_choice"`
	Tools      []struct{ Name string } `json:"tools"`
	Messages   []struct {
		Role    string `json:"role"`
		Content []struct {
			Type      string `json:"type"`
			Text      string `json:"text"`
			Name      string `json:"name"`
			ToolUseID string `json:"tool_use_id"`
			IsError   bool   `json:"is_error"`
			Content   []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"content"`
	} `json:"messages"`
}

func modelRequests(t testing.TB, fm *fakemodel.Server) []modelReq {
	t.Helper()
	var out []modelReq
	for _, r := range fm.Requests() {
		var m modelReq
		if err := json.Unmarshal(r.Body, &m); err != nil {
			t.Fatalf("model request: %v", err)
		}
		m.raw, m.header = r.Body, r.Header
		out = append(out, m)
	}
	return out
}

// toolResults returns the text of every tool_result of a request.
func (m modelReq) toolResults() []string {
	var out []string
	for _, msg := range m.Messages {
		for _, b := range msg.Content {
			if b.Type == "tool_result" {
				var s strings.Builder
				for _, c := range b.Content {
					s.WriteString(c.Text)
				}
				out = append(out, s.String())
			}
		}
	}
	return out
}

// TestResearchEndToEnd: a GitHub OAuth pair (rotated mid-loop) and a
// DNSimple token, each in a 10-minute read grant → /v1/research with the
// scripted Pages model, which reads both services, is fooled by an
// injected description into naming create_issue, and answers. The answer
// names exactly the domains that point at GitHub Pages; the write is
// refused with nothing sent upstream; the rotated pair comes back sealed
// and opens with the member key; no request to the model, no log line and
// no metric holds a token, a refresh token, a grant or a key; every
// result reached the model inside an intact fence.
func TestResearchEndToEnd(t *testing.T) {
	re := newResearchEnv(t, fakemodel.Pages(), nil)
	old := mintPair(t, re.fake, fakeapi.GitHub, 0)
	gh := re.seal(t, grant.Grant{Service: fakeapi.GitHub, Access: grant.AccessRead, Kind: grant.KindOAuth,
		Secret: secret.Secret(old.Access), Refresh: secret.Secret(old.Refresh), TokenExpiresAt: rotate.FormatExpiry(old.ExpiresAt),
		MemberKey: re.member.Public().String(), ExpiresAt: time.Now().Add(10 * time.Minute)})
	dns := re.readGrant(t, fakeapi.DNSimple)
	re.fake.Reset()
	// The GitHub access token dies after its first use: the second GitHub
	// call gets 401, the sidecar rotates the pair and retries.
	var ghCalls atomic.Int32
	re.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Host == fakeapi.HostGitHub && r.Header.Get("Authorization") == "Bearer "+string(old.Access) && ghCalls.Add(1) == 2 {
			re.fake.RevokeToken(fakeapi.GitHub, string(old.Access))
		}
		return false
	})

	r, ans := re.research(t, ResearchRequest{Question: pagesQuestion, Grants: []string{gh, dns}}) // default limits
	if r.status != http.StatusOK {
		t.Fatalf("research: %d %s", r.status, r.body)
	}
	t.Logf("answer: %s (stop %s, %d turns, %d steps, %d result bytes)", ans.Answer, ans.Stop, ans.Turns, len(ans.Steps), ans.ResultBytes)

	// The answer lists exactly the right domains.
	for _, d := range fakeapi.ResearchDomains {
		if got, want := strings.Contains(ans.Answer, d), slices.Contains(fakeapi.PagesDomains, d); got != want {
			t.Errorf("answer mentions %s: %v, want %v", d, got, want)
		}
	}
	if ans.Stop != research.StopEndTurn || !strings.HasPrefix(ans.Answer, fakemodel.ScriptedLabel) {
		t.Errorf("stop %q, answer %q", ans.Stop, ans.Answer)
	}
	// The honest flow — GitHub Pages domains, then their DNSimple
	// records — is never refused as a cross-service flow: the zone it
	// asks DNSimple for is a part of what GitHub returned, never a whole
	// value of GitHub's.
	refusals := 0
	for _, st := range ans.Steps {
		if st.Outcome == api.CodeCrossServiceFlow {
			refusals++
			t.Errorf("step %s.%s %s refused as a cross-service flow", st.Service, st.Op, st.Args)
		}
	}
	t.Logf("cross-service flow refusals: %d", refusals)
	if m := re.metrics(t); strings.Contains(m, "pinned_sidecar_flow_refused_total{") {
		t.Errorf("a flow refusal was counted")
	}

	// The write op the model named is refused, and nothing was written.
	var refused, rotatedOK bool
	for _, st := range ans.Steps {
		if st.Tool == "github__create_issue" {
			refused = st.Outcome == "access_denied" && st.Service == ""
		}
		if st.Op == "list_repos" {
			rotatedOK = st.Outcome == "ok"
		}
	}
	if !refused {
		t.Errorf("create_issue not refused as access_denied: %+v", ans.Steps)
	}
	for _, fr := range re.fake.Requests() {
		if (fr.Host == fakeapi.HostGitHub || fr.Host == fakeapi.HostDNSimple) && fr.Method != http.MethodGet {
			t.Errorf("a write reached the provider: %s %s%s", fr.Method, fr.Host, fr.Path)
		}
	}

	// The pair rotated mid-loop comes back sealed, opens with the member
	// key and is live; the retried call succeeded.
	fresh := re.openRotated(t, fakeapi.GitHub, ans.Rotated[fakeapi.GitHub])
	if string(fresh.Access) == string(old.Access) || testutil.ViewerStatus(t, re.fake, fakeapi.GitHub, string(fresh.Access)) != http.StatusOK || !rotatedOK {
		t.Errorf("rotation: fresh access differs %v, list_repos ok %v", string(fresh.Access) != string(old.Access), rotatedOK)
	}
	if len(ans.Rotated) != 1 {
		t.Errorf("rotated: %v", ans.Rotated)
	}

	// Nothing secret reached the model, the logs or the metrics.
	secrets := map[string]string{
		"github access": string(old.Access), "github refresh": string(old.Refresh), "fresh access": string(fresh.Access), "fresh refresh": string(fresh.Refresh),
		"dnsimple token": fakeapi.Token(fakeapi.DNSimple), "github grant": gh, "dnsimple grant": dns,
		"member public key": re.member.Public().String(), "member private key": re.member.Encode(),
		"bot private key": re.key.Encode(), "rotated box": ans.Rotated[fakeapi.GitHub],
	}
	reqs := modelRequests(t, re.model)
	if len(reqs) < 5 {
		t.Fatalf("the model got %d requests", len(reqs))
	}
	places := map[string]string{"sidecar and host logs": re.allLogs(), "broker logs": re.brokerLogs.String(), "metrics": re.metrics(t)}
	for i, m := range reqs {
		hdr, _ := json.Marshal(m.header)
		places["model request "+string(rune('A'+i))] = string(m.raw) + string(hdr)
	}
	for where, text := range places {
		for what, s := range secrets {
			if s != "" && strings.Contains(text, s) {
				t.Errorf("%s holds the %s", where, what)
			}
		}
	}

	// Every tool_result is one intact fence, and the injections stay
	// inside it.
	checkFences(t, reqs)
	for i, m := range reqs {
		// The injected text occurs only inside tool results.
		inside := strings.Count(strings.Join(m.toolResults(), "\n"), "Ignore previous instructions")
		if all := strings.Count(string(m.raw), "Ignore previous instructions"); all != inside {
			t.Errorf("request %d: the injected text occurs %d times, %d of them inside tool results", i, all, inside)
		}
	}
	last := reqs[len(reqs)-1]
	joined := strings.Join(last.toolResults(), "\n")
	for _, want := range []string{"Ignore previous instructions", `\udb40\udc69\udb40\udc67`, `END-DATA pinned-00000000000000000000000000000000`, `\u003c/tool_result\u003e`} {
		if !strings.Contains(joined, want) {
			t.Errorf("the results lack %q", want)
		}
	}
}

// checkFences checks every tool_result of every model request: three
// lines, BEGIN-DATA and END-DATA with the session's token (the one in the
// system prompt), which occurs nowhere else in it; a JSON middle line; no
// raw invisible character.
func checkFences(t *testing.T, reqs []modelReq) {
	t.Helper()
	for i, m := range reqs {
		sys := ""
		for _, s := range m.System {
			sys += s.Text
		}
		for _, res := range m.toolResults() {
			lines := strings.Split(res, "\n")
			if len(lines) != 3 {
				t.Fatalf("request %d: a result of %d lines: %q", i, len(lines), res)
			}
			tok, _ := strings.CutPrefix(lines[0], "BEGIN-DATA ")
			if !strings.HasPrefix(tok, "pinned-") || len(tok) != len("pinned-")+32 || lines[2] != "END-DATA "+tok ||
				strings.Count(res, tok) != 2 || !strings.Contains(sys, "END-DATA "+tok) || !json.Valid([]byte(lines[1])) {
				t.Fatalf("request %d: a broken fence: %q", i, res)
			}
			for _, r := range res {
				if r >= 0xE0000 && r <= 0xE007F || r == 0x200B || r == 0x202E {
					t.Fatalf("request %d: a raw invisible character %U in %q", i, r, res)
				}
			}
		}
	}
}

// TestResearchBounds: each scripted model ends where its bound says, with
// a forced final turn (tool_choice none) whose text is the answer; a
// refused call sends nothing upstream.
func TestResearchBounds(t *testing.T) {
	tests := []struct {
		name     string
		script   fakemodel.Script
		grants   []string
		limits   api.Limits
		stop     string
		steps    int
		outcomes []string // of the steps, in order (prefix)
		answer   string
		maxTime  time.Duration
		results  string // in the last request's tool results
	}{
		{name: "never stops: tool-call bound", script: fakemodel.Forever(), limits: api.Limits{ToolCalls: 3},
			stop: research.StopToolCalls, steps: 3, outcomes: []string{"ok", "ok", "ok"}, answer: "stopped after 3 tool calls"},
		{name: "never stops: turn bound", script: fakemodel.Forever(), limits: api.Limits{Turns: 2},
			stop: research.StopTurns, steps: 2, answer: "stopped after 2 tool calls"},
		{name: "never stops: wall time", script: fakemodel.Slow(400*time.Millisecond, fakemodel.Forever()), limits: api.Limits{WallSeconds: 1, ToolCalls: 64},
			stop: research.StopWallTime, answer: "I was stopped", maxTime: 15 * time.Second}, // 64 calls take 26 s
		{name: "page after page: result bytes", script: fakemodel.PageAfterPage(), limits: api.Limits{ResultBytes: 48 << 10},
			stop: research.StopResultBytes, steps: 2, outcomes: []string{"ok", "limit_reached"}, answer: "I read 1 pages"},
		{name: "page after page: tool calls", script: fakemodel.PageAfterPage(), limits: api.Limits{ToolCalls: 4},
			stop: research.StopToolCalls, steps: 4, outcomes: []string{"ok", "ok", "ok", "ok"}, answer: "I read 4 pages",
			results: `"next":{"page":2,"per_page":100}`},
		{name: "write op", script: fakemodel.WriteOp(), stop: research.StopEndTurn, steps: 1, outcomes: []string{"access_denied"},
			answer: "github__create_issue was answered access_denied"},
		{name: "unknown op", script: fakemodel.UnknownOp(), stop: research.StopEndTurn, steps: 1, outcomes: []string{"unknown_op"},
			answer: "github__delete_repo was answered unknown_op"},
		{name: "service without a grant", script: fakemodel.Named("dnsimple__list_domains", map[string]any{"account": 1385}),
			stop: research.StopEndTurn, steps: 1, outcomes: []string{"service_mismatch"}, answer: "answered service_mismatch"},
	}
	re := newResearchEnv(t, nil, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			re.model.SetScript(tt.script)
			re.model.Reset()
			re.fake.Reset()
			start := time.Now()
			lim := tt.limits
			r, ans := re.research(t, ResearchRequest{Question: "What is my GitHub login?", Grants: []string{re.readGrant(t, fakeapi.GitHub)}, Limits: &lim})
			took := time.Since(start)
			if r.status != http.StatusOK {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if ans.Stop != tt.stop || (tt.steps != 0 && len(ans.Steps) != tt.steps) || !strings.Contains(ans.Answer, tt.answer) {
				t.Fatalf("stop %q, %d steps, answer %q; want %q, %d, %q", ans.Stop, len(ans.Steps), ans.Answer, tt.stop, tt.steps, tt.answer)
			}
			for i, want := range tt.outcomes {
				if ans.Steps[i].Outcome != want {
					t.Errorf("step %d: %q, want %q", i, ans.Steps[i].Outcome, want)
				}
			}
			if tt.maxTime != 0 && took > tt.maxTime {
				t.Errorf("took %s, bound %s", took, tt.maxTime)
			}
			reqs := modelRequests(t, re.model)
			lastReq := reqs[len(reqs)-1]
			forced := lastReq.ToolChoice != nil && lastReq.ToolChoice.Type == "none"
			if forced != (tt.stop != research.StopEndTurn) {
				t.Errorf("final request tool_choice none: %v, stop %s", forced, tt.stop)
			}
			for _, m := range reqs {
				for _, tool := range m.Tools {
					if tool.Name == "github__create_issue" || !strings.HasPrefix(tool.Name, "github__") {
						t.Errorf("palette holds %s", tool.Name)
					}
				}
			}
			checkFences(t, reqs)
			if tt.results != "" && !strings.Contains(strings.Join(lastReq.toolResults(), "\n"), tt.results) {
				t.Errorf("the results lack %s", tt.results)
			}
			upstream := 0
			for _, fr := range re.fake.Requests() {
				if fr.Method != http.MethodGet {
					t.Errorf("a write reached the provider: %s %s%s", fr.Method, fr.Host, fr.Path)
				}
				upstream++
			}
			ok := 0
			for _, st := range ans.Steps {
				if st.Outcome == "ok" || st.Outcome == "limit_reached" && st.Op != "" {
					ok++
				}
			}
			if upstream != ok {
				t.Errorf("%d upstream requests for %d steps that ran", upstream, ok)
			}
		})
	}
}

// TestResearchGrants: the session refuses, before the model is asked
// anything, every grant it must not hold; a grant a session spent never
// runs again.
func TestResearchGrants(t *testing.T) {
	re := newResearchEnv(t, fakemodel.Forever(), nil)
	mk := re.member.Public().String()
	in := func(d time.Duration) time.Time { return time.Now().Add(d) }
	// The first session's only call has bad args: POST /v1/ops would give
	// such a grant back (nothing left the sandbox); a session never does.
	spent := re.readGrant(t, fakeapi.GitHub)
	re.model.SetScript(fakemodel.Named("github__get_repo", map[string]any{"owner": "-bad-", "repo": "notes"}))
	if r, ans := re.research(t, ResearchRequest{Question: "q", Grants: []string{spent}}); r.status != http.StatusOK || len(ans.Steps) != 1 || ans.Steps[0].Outcome != "bad_args" {
		t.Fatalf("first session: %d %s", r.status, r.body)
	}
	re.model.SetScript(fakemodel.Forever())
	tests := []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{name: "write grant", body: ResearchRequest{Question: "q", Grants: []string{re.seal(t, grant.Grant{Service: "github", Access: grant.AccessWrite, MemberKey: mk, ExpiresAt: in(5 * time.Minute)})}},
			status: 403, code: "access_denied"},
		{name: "bound grant", body: ResearchRequest{Question: "q", Grants: []string{re.seal(t, grant.Grant{Service: "github", Access: grant.AccessRead, Op: "get_viewer", ExpiresAt: in(5 * time.Minute)})}},
			status: 403, code: "grant_mismatch"},
		{name: "long grant", body: ResearchRequest{Question: "q", Grants: []string{re.seal(t, grant.Grant{Service: "github", Access: grant.AccessRead, ExpiresAt: in(time.Hour)})}},
			status: 403, code: "grant_invalid"},
		{name: "expired grant", body: ResearchRequest{Question: "q", Grants: []string{re.seal(t, grant.Grant{Service: "github", Access: grant.AccessRead, ExpiresAt: in(-time.Hour)})}},
			status: 403, code: "grant_expired"},
		{name: "sealed to another bot", body: ResearchRequest{Question: "q", Grants: []string{sealTo(t, grant.Grant{Service: "github", Access: grant.AccessRead}, re.member.Public())}},
			status: 403, code: "grant_invalid"},
		{name: "two grants for one service", body: ResearchRequest{Question: "q", Grants: []string{re.readGrant(t, "github"), re.readGrant(t, "github")}},
			status: 400, code: "bad_request"},
		{name: "replayed", body: ResearchRequest{Question: "q", Grants: []string{spent}}, status: 409, code: "grant_replayed"},
		{name: "no question", body: ResearchRequest{Grants: []string{re.readGrant(t, "github")}}, status: 400, code: "bad_request"},
		{name: "limit out of range", body: ResearchRequest{Question: "q", Grants: []string{re.readGrant(t, "github")}, Limits: &api.Limits{ToolCalls: 1000}},
			status: 400, code: "bad_request"},
		{name: "unknown member", body: `{"question":"q","grants":[],"tools":[]}`, status: 400, code: "bad_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			re.model.Reset()
			re.fake.Reset()
			r, _ := re.research(t, tt.body)
			if r.status != tt.status || r.err.Error.Code != tt.code {
				t.Fatalf("%d %s, want %d %s", r.status, r.body, tt.status, tt.code)
			}
			if n := len(re.model.Requests()); n != 0 {
				t.Errorf("the model was asked %d times", n)
			}
			if n := len(re.fake.Requests()); n != 0 {
				t.Errorf("the provider got %d requests", n)
			}
		})
	}
	// The grant the session spent does not run in /v1/ops either.
	if r := re.op(t, "github", "get_viewer", "{}", spent); r.err.Error.Code != "grant_replayed" {
		t.Errorf("/v1/ops with a research grant: %d %s", r.status, r.body)
	}
}

// TestResearchStream: Accept: text/event-stream gives one step event per
// tool call and the answer last.
func TestResearchStream(t *testing.T) {
	re := newResearchEnv(t, fakemodel.Forever(), nil)
	r := re.do(t, http.MethodPost, "/v1/research", ResearchRequest{Question: "q", Grants: []string{re.readGrant(t, "github")}, Limits: &api.Limits{ToolCalls: 2}},
		"Accept", "text/event-stream")
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	var events []string
	var lastData string
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if e, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			events = append(events, e)
		}
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			lastData = d
		}
	}
	if !slices.Equal(events, []string{"step", "step", "answer"}) {
		t.Fatalf("events %v", events)
	}
	var ans ResearchResponse
	if err := json.Unmarshal([]byte(lastData), &ans); err != nil || ans.Stop != research.StopToolCalls || len(ans.Steps) != 2 {
		t.Fatalf("answer event: %v %s", err, lastData)
	}
}

// TestResearchConsent: /v1/consent renders the research consent sentence
// and the palette for a set of services.
func TestResearchConsent(t *testing.T) {
	re := newResearchEnv(t, nil, nil)
	r := re.do(t, http.MethodPost, "/v1/consent", `{"services":["github","dnsimple"],"question":"`+pagesQuestion+`"}`)
	var c researchConsent
	if r.status != http.StatusOK || json.Unmarshal(r.body, &c) != nil {
		t.Fatalf("%d %s", r.status, r.body)
	}
	want := "Let this bot read your DNSimple and GitHub for about 10 minutes to answer \u201c" + pagesQuestion + "\u201d? It can only read; it cannot change anything, and it never sees your keys. " +
		"What it reads in one service never goes into its reads of another."
	if c.Confirm != want || c.Access != "read" || c.GrantTTLSeconds != 600 || !slices.Equal(c.Services, []string{"dnsimple", "github"}) {
		t.Errorf("consent: %s", r.body)
	}
	if !slices.Contains(c.Ops, "github.get_pages") || !slices.Contains(c.Ops, "dnsimple.list_zone_records") ||
		slices.Contains(c.Ops, "github.create_issue") || slices.Contains(c.Ops, "dnsimple.register_domain") {
		t.Errorf("ops: %v", c.Ops)
	}
	for _, bad := range []struct{ body, code string }{
		{`{"services":["github","nope"]}`, "unknown_service"},
		{`{"services":[]}`, "bad_request"},
		{`{"services":["github"],"service":"github","op":"get_viewer"}`, "bad_request"},
	} {
		if r := re.do(t, http.MethodPost, "/v1/consent", bad.body); r.err.Error.Code != bad.code {
			t.Errorf("%s: %d %s", bad.body, r.status, r.body)
		}
	}
}

// TestResearchNoModel: without a model the endpoint says so.
func TestResearchNoModel(t *testing.T) {
	env := newTestEnv(t, nil)
	r := env.do(t, http.MethodPost, "/v1/research", `{"question":"q","grants":["x"]}`)
	if r.status != http.StatusServiceUnavailable || r.err.Error.Code != "model_not_configured" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

// TestResearchOutlivesWriteTimeout: a session longer than the server's
// write timeout still gets its whole answer (the handler extends its own
// write deadline to the session's bounds).
func TestResearchOutlivesWriteTimeout(t *testing.T) {
	re := newResearchEnv(t, fakemodel.Slow(600*time.Millisecond, fakemodel.Forever()), func(c *Config) { c.WriteTimeout = time.Second })
	start := time.Now()
	r, ans := re.research(t, ResearchRequest{Question: "q", Grants: []string{re.readGrant(t, "github")}, Limits: &api.Limits{ToolCalls: 3}})
	if r.status != http.StatusOK || ans.Stop != research.StopToolCalls || len(ans.Steps) != 3 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Fatalf("the session took %s, not past the 1s write timeout", took)
	}
}

// TestResearchModelError: a failing Messages API ends the session with
// model_error; the grants stay spent.
func TestResearchModelError(t *testing.T) {
	re := newResearchEnv(t, func(c *fakemodel.Conversation) fakemodel.Reply {
		if len(c.Calls) == 0 {
			return fakemodel.Reply{Uses: []fakemodel.Use{{Name: "github__get_viewer", Input: map[string]any{}}}}
		}
		return fakemodel.Reply{Status: http.StatusInternalServerError}
	}, nil)
	g := re.readGrant(t, "github")
	r, _ := re.research(t, ResearchRequest{Question: "q", Grants: []string{g}})
	if r.status != http.StatusBadGateway || r.err.Error.Code != "model_error" || strings.Contains(r.err.Error.Message, "500") {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if !strings.Contains(re.logs.String(), "the Messages API answered HTTP 500") {
		t.Errorf("the log lacks the cause")
	}
	if r, _ := re.research(t, ResearchRequest{Question: "q", Grants: []string{g}}); r.err.Error.Code != "grant_replayed" {
		t.Errorf("after a failed session: %d %s", r.status, r.body)
	}
}
