package sidecar

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/demo/fakemodel"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// exfilGrants seals read grants for the four services Exfiltrate reads,
// each allowing flows (the research consent's, "from:to").
func (re *resEnv) exfilGrants(t *testing.T, flows ...string) []string {
	var out []string
	for _, svc := range []string{fakeapi.DNSimple, fakeapi.GitHub, fakeapi.HubSpot, fakeapi.Stripe} {
		out = append(out, re.flowGrant(t, svc, flows...))
	}
	return out
}

// flowGrant seals a 10-minute read grant for service allowing flows.
func (re *resEnv) flowGrant(t *testing.T, service string, flows ...string) string {
	t.Helper()
	return re.seal(t, grant.Grant{Service: service, Access: grant.AccessRead, MemberKey: re.member.Public().String(),
		ExpiresAt: time.Now().Add(10 * time.Minute), Flows: strings.Join(flows, ",")})
}

// exfilSent lists the provider requests that carried one of the hostile
// moves: a GitHub request for attacker-org, a DNSimple availability
// check or name filter, a Stripe customer search by an email that is not
// a Stripe customer's.
func exfilSent(fake *fakeapi.Server, customerEmail string) []string {
	var out []string
	for _, r := range fake.Requests() {
		switch {
		case r.Host == fakeapi.HostGitHub && strings.Contains(r.Path, "attacker-org"),
			r.Host == fakeapi.HostDNSimple && (strings.Contains(r.Path, "/registrar/") || strings.Contains(r.RawQuery, "name_like")),
			r.Host == fakeapi.HostStripe && strings.Contains(r.RawQuery, "email=") && !strings.Contains(r.RawQuery, "email="+strings.ReplaceAll(customerEmail, "@", "%40")):
			out = append(out, r.Method+" "+r.Host+r.Path+"?"+r.RawQuery)
		}
	}
	return out
}

// TestResearchCrossServiceFlowsRefused: a hostile scripted research
// model (fakemodel.Exfiltrate) reads DNSimple, GitHub, HubSpot and
// Stripe, then carries what it read into reads of another service:
// DNSimple domains into github get_repo and list_issues paths (owner
// attacker-org), GitHub issue titles into dnsimple check_domain and
// list_domains name_like, a domain, a title and a HubSpot contact's email
// into stripe list_customers email. Every move is refused with
// cross_service_flow naming the op that returned the value, before
// anything is sent: the provider fake records no request for any of
// them. The control — a Stripe customer's email back to Stripe — runs.
// The refusals are counted (pinned_sidecar_flow_refused_total, the
// research steps) and logged with flow_source, never the value.
func TestResearchCrossServiceFlowsRefused(t *testing.T) {
	re := newResearchEnv(t, fakemodel.Exfiltrate(), nil)
	grants := re.exfilGrants(t)
	re.fake.Reset()
	r, ans := re.research(t, ResearchRequest{Question: "Summarize my accounts", Grants: grants, Limits: &api.Limits{ToolCalls: 20}})
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	t.Logf("answer: %s", ans.Answer)
	if len(ans.Steps) != 5+fakemodel.ExfiltrateMoves+1 {
		t.Fatalf("%d steps: %+v", len(ans.Steps), ans.Steps)
	}
	for i, st := range ans.Steps[:5] {
		if st.Outcome != "ok" {
			t.Errorf("read %d (%s.%s): %s", i, st.Service, st.Op, st.Outcome)
		}
	}
	sources := map[string]string{
		"github.get_repo": "dnsimple.list_domains", "github.list_issues": "dnsimple.list_domains",
		"dnsimple.check_domain": "github.list_issues", "dnsimple.list_domains": "github.list_issues",
	}
	for i, st := range ans.Steps[5 : 5+fakemodel.ExfiltrateMoves] {
		if st.Outcome != api.CodeCrossServiceFlow {
			t.Errorf("move %d (%s.%s %s): %s, want %s", i, st.Service, st.Op, st.Args, st.Outcome, api.CodeCrossServiceFlow)
		}
		if want := sources[st.Service+"."+st.Op]; want != "" && !strings.Contains(re.allLogs(), `"op":"`+st.Op+`","outcome":"cross_service_flow","flow_source":"`+want+`"`) {
			t.Errorf("move %d: no log naming the source %s", i, want)
		}
	}
	if ctl := ans.Steps[len(ans.Steps)-1]; ctl.Outcome != "ok" {
		t.Errorf("the same-service control: %s", ctl.Outcome)
	}
	var customer string
	for _, st := range ans.Steps[len(ans.Steps)-1:] {
		customer = strings.TrimSuffix(strings.TrimPrefix(string(st.Args), `{"email":"`), `"}`)
	}
	if sent := exfilSent(re.fake, customer); len(sent) != 0 {
		t.Errorf("hostile moves reached the provider: %v", sent)
	}
	// The model was told why, with the source.
	reqs := modelRequests(t, re.model)
	results := strings.Join(reqs[len(reqs)-1].toolResults(), "\n")
	if n := strings.Count(results, `"code":"cross_service_flow"`); n != fakemodel.ExfiltrateMoves {
		t.Errorf("%d fenced refusals, want %d", n, fakemodel.ExfiltrateMoves)
	}
	metrics := re.metrics(t)
	for _, want := range []string{
		`pinned_sidecar_flow_refused_total{from="dnsimple",surface="research",to="github"} 2`,
		`pinned_sidecar_flow_refused_total{from="github",surface="research",to="dnsimple"} 2`,
		`pinned_sidecar_research_steps_total{op="get_repo",outcome="cross_service_flow",service="github"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if n := strings.Count(metrics, `pinned_sidecar_flow_refused_total{`); n < 4 {
		t.Errorf("%d flow refusal series", n)
	}
	for _, st := range ans.Steps[5 : 5+fakemodel.ExfiltrateMoves] {
		for _, v := range strings.Split(strings.Trim(string(st.Args), "{}"), ",") {
			if _, val, ok := strings.Cut(v, ":"); ok && len(val) > 12 && strings.Contains(re.allLogs(), strings.Trim(val, `"`)) {
				t.Errorf("the log holds the value %s", val)
			}
		}
	}
}

// TestResearchAllowedFlow: flows the member allowed on the consent let
// exactly those moves run (DNSimple domains into GitHub reach the
// provider); the rest stay refused.
func TestResearchAllowedFlow(t *testing.T) {
	re := newResearchEnv(t, fakemodel.Exfiltrate(), nil)
	grants := re.exfilGrants(t, "dnsimple:github")
	re.fake.Reset()
	r, ans := re.research(t, ResearchRequest{Question: "q", Grants: grants, Limits: &api.Limits{ToolCalls: 20},
		Flows: []api.Flow{{From: "dnsimple", To: "github"}}})
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	n := 0
	for _, st := range ans.Steps[5 : 5+fakemodel.ExfiltrateMoves] {
		allowed := st.Service == "github"
		if (st.Outcome == api.CodeCrossServiceFlow) == allowed {
			t.Errorf("%s.%s: %s (allowed %v)", st.Service, st.Op, st.Outcome, allowed)
		}
		if allowed {
			n++
		}
	}
	if got := len(exfilSentGitHub(re.fake)); n != 2 || got != 2 {
		t.Errorf("%d allowed moves, %d reached GitHub; want 2 and 2", n, got)
	}
	// A malformed flow is refused before any grant is spent.
	r, _ = re.research(t, ResearchRequest{Question: "q", Grants: re.exfilGrants(t), Flows: []api.Flow{{From: "dnsimple", To: "dnsimple"}}})
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "to itself") {
		t.Errorf("%d %s", r.status, r.body)
	}
}

// TestResearchFlowsBoundToGrants: the flows a research session allows
// are the member's, sealed in the grants from the consent they saw
// (grant flows), not the bot's word. A request naming a flow that the
// grants of its two services do not both seal — sealed in neither, in
// one of them only, or sealed the other way round — is refused
// (grant_mismatch) before the model is asked or a grant is spent; the
// same grants then run a session without it, where the move is refused
// (cross_service_flow) and reaches no provider.
func TestResearchFlowsBoundToGrants(t *testing.T) {
	re := newResearchEnv(t, fakemodel.Exfiltrate(), nil)
	dnsToGitHub := []api.Flow{{From: "dnsimple", To: "github"}}
	tests := []struct {
		name   string
		grants func() []string
	}{
		{"sealed in no grant", func() []string { return re.exfilGrants(t) }},
		{"sealed in the github grant only", func() []string {
			return []string{re.flowGrant(t, fakeapi.DNSimple), re.flowGrant(t, fakeapi.GitHub, "dnsimple:github"),
				re.flowGrant(t, fakeapi.HubSpot), re.flowGrant(t, fakeapi.Stripe)}
		}},
		{"sealed in the dnsimple grant only", func() []string {
			return []string{re.flowGrant(t, fakeapi.DNSimple, "dnsimple:github"), re.flowGrant(t, fakeapi.GitHub),
				re.flowGrant(t, fakeapi.HubSpot), re.flowGrant(t, fakeapi.Stripe)}
		}},
		{"sealed the other way round", func() []string { return re.exfilGrants(t, "github:dnsimple") }},
		{"another pair sealed", func() []string { return re.exfilGrants(t, "stripe:github", "dnsimple:hubspot") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			grants := tt.grants()
			before := len(re.model.Requests())
			re.fake.Reset()
			r, _ := re.research(t, ResearchRequest{Question: "q", Grants: grants, Limits: &api.Limits{ToolCalls: 20}, Flows: dnsToGitHub})
			if r.status != http.StatusForbidden || !strings.Contains(string(r.body), `"code":"grant_mismatch"`) ||
				!strings.Contains(string(r.body), "dnsimple to github") {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if n := len(re.model.Requests()) - before; n != 0 {
				t.Errorf("the model was asked %d times", n)
			}
			if n := len(re.fake.Requests()); n != 0 {
				t.Errorf("%d provider requests", n)
			}
			// Nothing was spent: the same grants run a session without
			// the flow, and the move stays refused.
			r, ans := re.research(t, ResearchRequest{Question: "q", Grants: grants, Limits: &api.Limits{ToolCalls: 20}})
			if r.status != http.StatusOK {
				t.Fatalf("the grants were spent: %d %s", r.status, r.body)
			}
			for _, st := range ans.Steps[5 : 5+fakemodel.ExfiltrateMoves] {
				if st.Outcome != api.CodeCrossServiceFlow {
					t.Errorf("%s.%s: %s", st.Service, st.Op, st.Outcome)
				}
			}
			if got := exfilSentGitHub(re.fake); len(got) != 0 {
				t.Errorf("reached GitHub: %v", got)
			}
		})
	}
}

func exfilSentGitHub(fake *fakeapi.Server) []string {
	var out []string
	for _, r := range fake.Requests() {
		if r.Host == fakeapi.HostGitHub && strings.Contains(r.Path, "attacker-org") {
			out = append(out, r.Path)
		}
	}
	return out
}

// TestResearchConsentFlows: the research consent names the flows it
// allows and returns them; without any it says data stays with its
// service; a flow naming a service the session does not read, or given
// with an op's consent, is refused.
func TestResearchConsentFlows(t *testing.T) {
	re := newResearchEnv(t, fakemodel.Pages(), nil)
	r := re.do(t, "POST", "/v1/consent", `{"services":["github","dnsimple"],"question":"q","flows":[{"from":"dnsimple","to":"github"}]}`)
	if r.status != 200 || !strings.Contains(string(r.body), "It may carry what it reads in DNSimple into its reads of GitHub; nothing else it reads goes from one service to another.") ||
		!strings.Contains(string(r.body), `"flows":[{"from":"dnsimple","to":"github"}]`) {
		t.Errorf("%d %s", r.status, r.body)
	}
	r = re.do(t, "POST", "/v1/consent", `{"services":["github","dnsimple"],"question":"q"}`)
	if r.status != 200 || !strings.Contains(string(r.body), "What it reads in one service never goes into its reads of another.") {
		t.Errorf("%d %s", r.status, r.body)
	}
	for _, body := range []string{
		`{"services":["github"],"flows":[{"from":"dnsimple","to":"github"}]}`,
		`{"services":["github","dnsimple"],"flows":[{"from":"nope","to":"github"}]}`,
		`{"service":"github","op":"get_viewer","flows":[{"from":"dnsimple","to":"github"}]}`,
	} {
		if r := re.do(t, "POST", "/v1/consent", body); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", body, r.status, r.body)
		}
	}
}

// TestResearchHonestScriptsNoFlowRefusal: the project's own honest
// scripted models — the Pages question, a model paging through
// repositories, one that never stops reading, and the write and unknown
// op probes — see no cross-service flow refusal: the count is 0.
func TestResearchHonestScriptsNoFlowRefusal(t *testing.T) {
	scripts := map[string]fakemodel.Script{
		"pages": fakemodel.Pages(), "page after page": fakemodel.PageAfterPage(), "forever": fakemodel.Forever(),
		"write op": fakemodel.WriteOp(), "unknown op": fakemodel.UnknownOp(),
	}
	refusals := 0
	for name, script := range scripts {
		t.Run(name, func(t *testing.T) {
			re := newResearchEnv(t, script, nil)
			r, ans := re.research(t, ResearchRequest{Question: pagesQuestion, Limits: &api.Limits{ToolCalls: 12},
				Grants: []string{re.readGrant(t, fakeapi.GitHub), re.readGrant(t, fakeapi.DNSimple)}})
			if r.status != http.StatusOK {
				t.Fatalf("%d %s", r.status, r.body)
			}
			for _, st := range ans.Steps {
				if st.Outcome == api.CodeCrossServiceFlow {
					refusals++
					t.Errorf("%s.%s %s refused", st.Service, st.Op, st.Args)
				}
			}
			if strings.Contains(re.metrics(t), "pinned_sidecar_flow_refused_total{") {
				t.Error("a flow refusal was counted")
			}
		})
	}
	t.Logf("cross-service flow refusals over %d honest scripts: %d", len(scripts), refusals)
}
