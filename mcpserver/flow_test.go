package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/elevenmessenger/pinned/secret"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/elevenmessenger/pinned/internal/connstore"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/flow"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

var dnsRead = connstore.Connection{Service: "dnsimple", Cap: connstore.CapRead, Kind: grant.KindPAT, Token: secret.Secret(fakeapi.Token("dnsimple")), Viewer: "pinned-tester@example.com"}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// domainNames reads the DNSimple account's domains through the session.
func domainNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res := call(t, cs, "dnsimple_list_domains", map[string]any{"account": fakeapi.DNSimpleAccountID, "per_page": 100})
	if res.IsError {
		t.Fatalf("list_domains: %s", toolText(t, res))
	}
	var out struct {
		Data []struct{ Name string } `json:"data"`
	}
	if err := json.Unmarshal([]byte(toolText(t, res)), &out); err != nil || len(out.Data) < 5 {
		t.Fatalf("domains: %v %s", err, toolText(t, res))
	}
	var names []string
	for _, d := range out.Data {
		names = append(names, d.Name)
	}
	return names
}

// TestMCPCrossServiceFlow: after dnsimple_list_domains, a GitHub read
// whose args carry a domain name (as a repo, in another case, inside an
// owner) is refused with cross_service_flow naming
// dnsimple_list_domains, and the provider fake records no GitHub request
// for it; a github_create_issue whose body holds all the names asks the
// person with every name, the source op and the cross-service warning
// shown, and declined, sends nothing; the refusals are counted and
// logged with their source, never the value.
func TestMCPCrossServiceFlow(t *testing.T) {
	prom := prometheus.NewRegistry()
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite, dnsRead}, prom: prom})
	var asked []string
	cs := e.connect(t, clientOpts{answer: "decline", asked: &asked})
	names := domainNames(t, cs)
	e.fake.Reset()
	reads := []struct {
		name, tool string
		args       map[string]any
		arg        string
	}{
		{"a domain as the repo of get_repo", "github_get_repo", map[string]any{"owner": "attacker-org", "repo": names[0]}, "repo"},
		{"a domain in upper case as list_issues' repo", "github_list_issues", map[string]any{"owner": "attacker-org", "repo": strings.ToUpper(names[1])}, "repo"},
		{"a domain inside the owner, dots dropped", "github_get_pages", map[string]any{"owner": strings.ReplaceAll(names[2], ".", "-"), "repo": "x"}, "owner"},
	}
	for _, tt := range reads {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, cs, tt.tool, tt.args)
			if code := errorCode(t, res); code != api.CodeCrossServiceFlow {
				t.Fatalf("code %q: %s", code, toolText(t, res))
			}
			if msg := toolText(t, res); !strings.Contains(msg, "dnsimple_list_domains") || !strings.Contains(msg, `"arg":"`+tt.arg+`"`) {
				t.Errorf("the refusal does not name the source and arg: %s", msg)
			}
		})
	}
	body := "Private DNSimple domains: " + strings.Join(names, ", ")
	res := call(t, cs, "github_create_issue", map[string]any{"owner": "pinned-tester", "repo": "notes", "title": "Typo in README", "body": body})
	if code := errorCode(t, res); code != CodeConfirmationDeclined {
		t.Fatalf("code %q, want %s", code, CodeConfirmationDeclined)
	}
	if len(asked) != 1 {
		t.Fatalf("asked %d times", len(asked))
	}
	msg := asked[0]
	t.Logf("confirmation:\n%s", msg)
	if !strings.HasPrefix(msg, `[GitHub: owner "pinned-tester", repo "notes"] Open an issue titled "Typo in README" in pinned-tester/notes?`) ||
		!strings.Contains(msg, "\n- body: "+body+"\n") ||
		!strings.Contains(msg, "! It sends data read from dnsimple to github.") ||
		!strings.Contains(msg, "- the body contains text returned by dnsimple_list_domains: ") {
		t.Errorf("the confirmation does not show the body and its source")
	}
	_, prov, _ := strings.Cut(msg, "Where its values came from")
	for _, n := range names {
		if !strings.Contains(prov, `"`+n+`"`) {
			t.Errorf("the provenance does not name %s", n)
		}
	}
	for _, r := range e.fake.Requests() {
		if r.Host == fakeapi.HostGitHub {
			t.Errorf("a request reached GitHub: %s %s", r.Method, r.Path)
		}
	}
	if got := flowRefused(t, prom, "mcp", "dnsimple", "github"); got != 3 {
		t.Errorf("pinned_sidecar_flow_refused_total{mcp,dnsimple,github} = %v, want 3", got)
	}
	logs := e.logs.String()
	if strings.Count(logs, `"flow_source":"dnsimple.list_domains"`) != 3 {
		t.Errorf("the tool_call events lack flow_source: %s", logs)
	}
	for _, n := range names {
		if strings.Contains(logs, n) {
			t.Errorf("the log holds the value %s", n)
		}
	}
}

// flowRefused reads pinned_sidecar_flow_refused_total{surface, from, to}.
func flowRefused(t *testing.T, prom *prometheus.Registry, surface, from, to string) float64 {
	t.Helper()
	mfs, err := prom.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "pinned_sidecar_flow_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["surface"] == surface && l["from"] == from && l["to"] == to {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestMCPAllowedAndHonestFlows: with --allow-flow dnsimple:github the
// same GitHub read runs (it reaches the provider); the other direction
// stays refused; honest same-service sequences (a viewer, then its repos'
// issues; a domain, then its records) and a compact dispatcher's read see
// no refusal.
func TestMCPAllowedAndHonestFlows(t *testing.T) {
	prom := prometheus.NewRegistry()
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite, dnsRead}, prom: prom, allow: []api.Flow{{From: "dnsimple", To: "github"}}})
	cs := e.connect(t, clientOpts{answer: "accept"})
	names := domainNames(t, cs)
	e.fake.Reset()
	res := call(t, cs, "github_get_repo", map[string]any{"owner": "attacker-org", "repo": names[0]})
	if code := errorCode(t, res); code == api.CodeCrossServiceFlow {
		t.Fatalf("an allowed flow was refused: %s", toolText(t, res))
	}
	if n := requestsTo(e.fake, "GET", "/repos/attacker-org/"); n != 1 {
		t.Errorf("%d GitHub requests, want 1", n)
	}
	// The other direction: a GitHub login into DNSimple.
	if res := call(t, cs, "github_get_viewer", map[string]any{}); res.IsError {
		t.Fatal(toolText(t, res))
	}
	res = call(t, cs, "dnsimple_list_domains", map[string]any{"account": fakeapi.DNSimpleAccountID, "name_like": "pinned-tester"})
	if code := errorCode(t, res); code != api.CodeCrossServiceFlow || !strings.Contains(toolText(t, res), "github_get_viewer") {
		t.Errorf("github→dnsimple: %s", toolText(t, res))
	}
	// Honest same-service sequences.
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"github_list_issues", map[string]any{"owner": "pinned-tester", "repo": "notes"}},
		{"github_get_repo", map[string]any{"owner": "pinned-tester", "repo": "notes"}},
		{"dnsimple_list_zone_records", map[string]any{"account": fakeapi.DNSimpleAccountID, "zone": names[0]}},
		{"dnsimple_check_domain", map[string]any{"account": fakeapi.DNSimpleAccountID, "domain": names[1]}},
	} {
		if res := call(t, cs, c.tool, c.args); errorCode(t, res) == api.CodeCrossServiceFlow {
			t.Errorf("%s refused: %s", c.tool, toolText(t, res))
		}
	}
	if got := flowRefused(t, prom, "mcp", "github", "dnsimple"); got != 1 {
		t.Errorf("refusals counted: %v, want 1", got)
	}
}

// TestMCPConfirmationShowsEverySentArg: the MCP confirmation of every
// write op of every manifest, with every arg given, shows each arg the
// request carries (the confirm line or its "- arg: value" entry); the
// person declines and nothing reaches the provider. A mutation that drops
// one entry from the message is caught by the same check.
func TestMCPConfirmationShowsEverySentArg(t *testing.T) {
	var conns []connstore.Connection
	for _, svc := range fakeapi.Services() {
		conns = append(conns, connstore.Connection{Service: svc, Cap: connstore.CapWrite, Kind: grant.KindPAT, Token: secret.Secret(fakeapi.Token(svc)), User: secret.Secret(fakeapi.User(svc)), Tenant: fakeapi.Tenant(svc), Viewer: "v"})
	}
	e := newEnv(t, envOpts{conns: conns})
	var asked []string
	cs := e.connect(t, clientOpts{answer: "decline", asked: &asked})
	fixtures := testutil.ConsentArgs()
	for _, m := range registry.Default().Services() {
		for _, name := range m.OpNames() {
			op, _ := m.Op(name)
			if op.Access != registry.AccessWrite {
				continue
			}
			args := fixtures[m.ID+"."+name]
			t.Run(m.ID+"."+name, func(t *testing.T) {
				asked = nil
				e.fake.Reset()
				res := call(t, cs, m.ID+"_"+name, args)
				if code := errorCode(t, res); code != CodeConfirmationDeclined || len(asked) != 1 {
					t.Fatalf("code %q, asked %d times", code, len(asked))
				}
				if miss := testutil.MissingFromConsent(op, args, asked[0]); len(miss) > 0 {
					t.Errorf("sent but not shown: %v in\n%s", miss, asked[0])
				}
				for arg, v := range testutil.Carried(op, args) {
					entry := testutil.Entry(arg, v)
					if strings.Contains(asked[0], entry) && len(testutil.MissingFromConsent(op, args, strings.Replace(asked[0], entry, "", 1))) == 0 {
						t.Errorf("dropping the entry of %s went unnoticed", arg)
					}
				}
				if n := len(e.fake.Requests()); n != 0 {
					t.Errorf("declined, yet %d requests reached the provider", n)
				}
			})
		}
	}
}

// TestMCPFlowNumberSpellings: a number another service returned is the
// same value however the agent writes it. GitHub's viewer id sent as
// DNSimple's account, written 90210001.0, 9.0210001e7 or 902100010e-1
// (the host sends each as the integer), is refused naming
// github_get_viewer, and no request reaches DNSimple.
func TestMCPFlowNumberSpellings(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite, dnsRead}})
	cs := e.connect(t, clientOpts{answer: "decline"})
	res := call(t, cs, "github_get_viewer", map[string]any{})
	if res.IsError {
		t.Fatal(toolText(t, res))
	}
	var viewer struct {
		Data struct{ ID json.Number } `json:"data"`
	}
	if err := json.Unmarshal([]byte(toolText(t, res)), &viewer); err != nil || len(viewer.Data.ID) < flow.MinLength {
		t.Fatalf("viewer id %q: %v", viewer.Data.ID, err)
	}
	id := string(viewer.Data.ID)
	e.fake.Reset()
	for _, spelt := range []string{id + ".0", id[:1] + "." + id[1:] + "e" + fmt.Sprint(len(id)-1), id + "0e-1"} {
		t.Run(spelt, func(t *testing.T) {
			res := call(t, cs, "dnsimple_list_domains", map[string]any{"account": json.RawMessage(spelt)})
			if code := errorCode(t, res); code != api.CodeCrossServiceFlow || !strings.Contains(toolText(t, res), "github_get_viewer") {
				t.Errorf("code %q: %s", code, toolText(t, res))
			}
		})
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Errorf("%d requests reached the provider: %+v", n, e.fake.Requests())
	}
}
