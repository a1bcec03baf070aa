package host

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/abi"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/jsonv"
	"github.com/elevenmessenger/pinned/registry"
)

// bindArgs gives every declared arg of ops of the embedded registry a
// valid value, so that every element of each op's templates is rendered;
// an op not listed here binds its fixture's example args
// (fakeapi.Example), which give every declared arg a value too
// (TestBindingEveryOp fails when an op has neither, or an arg is missing).
var bindArgs = map[string]string{
	"dnsimple.check_domain":      `{"account":1385,"domain":"example.com"}`,
	"dnsimple.get_viewer":        `{}`,
	"dnsimple.list_domains":      `{"account":1385,"name_like":"ex","page":1,"per_page":5}`,
	"dnsimple.list_zone_records": `{"account":1385,"zone":"example.com","name":"www","page":1,"per_page":5,"type":"A"}`,
	"dnsimple.register_domain":   `{"account":1385,"domain":"member-wanted-two.com","registrant_id":2715,"whois_privacy":false,"auto_renew":false}`,
	"github.create_issue":        `{"owner":"pinned-tester","repo":"notes","title":"Q3 plan","body":"some text","labels":["bug","question"],"assignees":["carol-fake"]}`,
	"github.get_pages":           `{"owner":"pinned-tester","repo":"notes"}`,
	"github.get_repo":            `{"owner":"pinned-tester","repo":"notes"}`,
	"github.get_viewer":          `{}`,
	"github.list_issues":         `{"owner":"pinned-tester","repo":"notes","page":1,"per_page":5,"state":"open","labels":["question"]}`,
	"github.list_repos":          `{"page":1,"per_page":5,"sort":"updated","visibility":"all"}`,
	"hubspot.create_contact":     `{"email":"a.b@example.org","firstname":"A","lastname":"B"}`,
	"hubspot.get_contact":        `{"contact_id":"42"}`,
	"hubspot.get_viewer":         `{}`,
	"hubspot.list_companies":     `{"after":"abc","limit":5}`,
	"hubspot.list_contacts":      `{"after":"abc","limit":5}`,
	"linear.create_issue":        `{"team_id":"0f0e0d0c-0b0a-4909-8807-060504030201","title":"T","description":"D"}`,
	"linear.get_issue":           `{"id":"ENG-1"}`,
	"linear.get_viewer":          `{}`,
	"linear.list_issues":         `{"first":5,"team":"ENG","after":"abc"}`,
	"linear.list_teams":          `{"first":5}`,
	"stripe.create_customer":     `{"email":"a.b@example.org","name":"A B","description":"d"}`,
	"stripe.get_balance":         `{}`,
	"stripe.get_viewer":          `{}`,
	"stripe.list_charges":        `{"customer":"cus_abc","limit":5,"starting_after":"ch_abc"}`,
	"stripe.list_customers":      `{"email":"a.b@example.org","limit":5,"starting_after":"cus_abc"}`,
}

// bodyPaths lists the "/"-separated paths of every value inside a
// body_json template (the root excluded): each member and element, nested
// ones included.
func bodyPaths(v *jsonv.Value, prefix string) []string {
	var out []string
	switch v.Kind {
	case jsonv.Object:
		for i := range v.O {
			p := v.O[i].Key
			if prefix != "" {
				p = prefix + "/" + p
			}
			out = append(out, p)
			out = append(out, bodyPaths(&v.O[i].Value, p)...)
		}
	case jsonv.Array:
		for i := range v.A {
			p := strconv.Itoa(i)
			if prefix != "" {
				p = prefix + "/" + p
			}
			out = append(out, p)
			out = append(out, bodyPaths(&v.A[i], p)...)
		}
	}
	return out
}

// bindMutations are the single-element changes for one op: each path
// placeholder, each query value, each body member (nested too) and each
// form field changed, each declared header removed and changed, one extra
// header, one extra query key, one extra body member or form field.
func bindMutations(t *testing.T, m *registry.Manifest, op *registry.Op) []string {
	t.Helper()
	var muts []string
	for i, seg := range strings.Split(op.Path[1:], "/") {
		if strings.Contains(seg, "{") {
			muts = append(muts, "pathz:"+strconv.Itoa(i))
		}
	}
	for _, k := range op.QueryKeys() {
		// The key as the request carries it: a query key's brackets are
		// percent-encoded (RFC 3986 section 3.4 leaves them reserved).
		muts = append(muts, "qz:"+strings.NewReplacer("[", "%5B", "]", "%5D").Replace(k))
	}
	muts = append(muts, "qadd:zz=1")
	if len(op.BodyJSON) > 0 {
		v, err := jsonv.Parse(op.BodyJSON)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range bodyPaths(&v, "") {
			muts = append(muts, "bz:"+p)
		}
		muts = append(muts, "badd")
	}
	for _, k := range op.FormKeys() {
		muts = append(muts, "fz:"+k)
	}
	if op.BodyForm != nil {
		muts = append(muts, "fadd:zz=1")
	}
	names := make([]string, 0, len(m.Headers))
	for k := range m.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		muts = append(muts, "hdel:"+k, "hz:"+k)
	}
	return append(muts, "hadd:X-Extra:1")
}

// TestBindingEveryOp is request binding's acceptance table: over every op
// of every manifest, a guest (host/testdata/hostile/egress, "mut") that
// renders the honest request for the op's args and changes exactly one
// element of it is refused with not_bound and the fake records no
// request; the honest request goes out unchanged.
func TestBindingEveryOp(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.Guest = hostileGuest(t, "egress") })
	seen := 0
	for _, m := range registry.Default().Services() {
		for _, name := range m.OpNames() {
			op, _ := m.Op(name)
			key := m.ID + "." + name
			args, ok := bindArgs[key]
			if !ok {
				args = string(fakeapi.Example(m.ID, name))
			}
			if args == "" {
				t.Errorf("%s: no args in bindArgs and no example in the fake's fixtures", key)
				continue
			}
			seen++
			var given map[string]any
			if err := json.Unmarshal([]byte(args), &given); err != nil {
				t.Fatal(err)
			}
			for a := range op.Args {
				if _, ok := given[a]; !ok {
					t.Errorf("%s: bindArgs lacks arg %q (every element must be rendered)", key, a)
				}
			}
			token := fakeapi.Token(m.ID)
			t.Run(key+"/honest", func(t *testing.T) {
				env.fake.Reset()
				env.logs.Reset()
				res, err := env.runHarness(m.ID, name, args, `{"attack":"honest"}`)
				if err != nil && err.Code != api.CodeUpstreamError {
					t.Fatalf("the honest request was refused: %v", err)
				}
				p, _ := env.eng.prepare(m.ID, name)
				want, _ := p.bind.Bind([]byte(args))
				reqs := env.fake.Requests()
				if len(reqs) != 1 || reqs[0].Method != op.Method {
					t.Fatalf("requests %+v", reqs)
				}
				got := reqs[0].Path
				if reqs[0].RawQuery != "" {
					got += "?" + reqs[0].RawQuery
				}
				if wantTarget := p.bind.Target(want); got != wantTarget {
					t.Fatalf("the fake received %s, the args bind %s", got, wantTarget)
				}
				env.assertNoLeak(t, res, err, token)
			})
			for _, mut := range bindMutations(t, m, op) {
				t.Run(key+"/"+mut, func(t *testing.T) {
					env.fake.Reset()
					env.logs.Reset() // each case scans only its own op's log
					mj, _ := json.Marshal([]string{mut})
					before := len(env.guestOutput())
					res, err := env.runHarness(m.ID, name, args, `{"attack":"mut","mut":`+string(mj)+`}`)
					if err == nil || err.Code != api.CodeEgressDenied || err.Deny != api.DenyNotBound {
						t.Fatalf("got %v %v, want egress_denied/not_bound", res, err)
					}
					if got := guestCode(t, env.guestOutput()[before:]); got != abi.EDENIED {
						t.Fatalf("guest saw %d", got)
					}
					if n := len(env.fake.Requests()); n != 0 {
						t.Fatalf("the fake received %d requests", n)
					}
					env.assertNoLeak(t, res, err, token)
				})
			}
		}
	}
	for key := range bindArgs {
		service, op, _ := strings.Cut(key, ".")
		if m, ok := registry.Default().Service(service); !ok || m.Ops[op] == nil {
			t.Errorf("bindArgs names %s, which is no op of the registry", key)
		}
	}
	if seen == 0 {
		t.Error("no op bound")
	}
}

// TestBindingRefusesAttackerValues: the red team's findings against other services
// (issue 10), each the honest request for args the member approved with
// values the attacker chose: refused as not_bound, nothing sent.
func TestBindingRefusesAttackerValues(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.Guest = hostileGuest(t, "egress") })
	for _, tt := range []struct {
		name, service, op, args string
		mut                     []string
	}{
		{"dnsimple register_domain buys another domain", "dnsimple", "register_domain",
			`{"account":1385,"domain":"member-wanted-two.com","registrant_id":2715}`,
			[]string{"path:4:attacker-chosen-domain.com"}},
		{"dnsimple register_domain flips whois_privacy and auto_renew", "dnsimple", "register_domain",
			`{"account":1385,"domain":"member-wanted-two.com","registrant_id":2715}`,
			[]string{"bset:whois_privacy=true", "bset:auto_renew=true"}},
		{"dnsimple register_domain with all three", "dnsimple", "register_domain",
			`{"account":1385,"domain":"member-wanted-two.com","registrant_id":2715}`,
			[]string{"path:4:attacker-chosen-domain.com", "bset:whois_privacy=true", "bset:auto_renew=true"}},
		{"dnsimple register_domain registrant typed as a string", "dnsimple", "register_domain",
			`{"account":1385,"domain":"member-wanted-two.com","registrant_id":2715}`,
			[]string{`bset:registrant_id="2715"`}},
		{"stripe create_customer email swapped", "stripe", "create_customer", `{"email":"member@example.org"}`,
			[]string{"fset:email=attacker%40evil.example"}},
		{"stripe create_customer field added", "stripe", "create_customer", `{"email":"member@example.org"}`,
			[]string{"fadd:name=attacker"}},
		{"linear list_issues first 5 becomes 250", "linear", "list_issues", `{"first":5}`,
			[]string{"bset:variables/first=250"}},
		{"linear list_issues first as 5.0", "linear", "list_issues", `{"first":5}`,
			[]string{"bset:variables/first=5.0"}},
		{"linear list_issues team filter added", "linear", "list_issues", `{"first":5}`,
			[]string{`bset:variables/team="SECRET"`}},
		{"github list_repos visibility added", "github", "list_repos", `{}`,
			[]string{"qadd:visibility=private"}},
		{"github list_repos query key encoded", "github", "list_repos", `{}`,
			[]string{"qdel:per_page", "qadd:per%5Fpage=30"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.Reset()
			mj, _ := json.Marshal(tt.mut)
			res, err := env.runHarness(tt.service, tt.op, tt.args, `{"attack":"mut","mut":`+string(mj)+`}`)
			if err == nil || err.Code != api.CodeEgressDenied || err.Deny != api.DenyNotBound {
				t.Fatalf("got %v %v, want egress_denied/not_bound", res, err)
			}
			if n := len(env.fake.Requests()); n != 0 {
				t.Fatalf("the fake received %d requests", n)
			}
			env.assertNoLeak(t, res, err, fakeapi.Token(tt.service))
		})
	}
}

// TestHostArgRules: the host checks the caller's args itself, before any
// guest runs, so a guest that skips validation (the egress guest's
// "honest" attack never rejects) gains nothing: bad args fail with
// bad_args, the guest never runs, nothing is sent.
func TestHostArgRules(t *testing.T) {
	// Args up to 1 MiB, so the 256,000-character title reaches the arg
	// rules (with the default 64 KiB cap the size check refuses it first).
	env := newEnv(t, func(c *Config) { c.Guest = hostileGuest(t, "egress"); c.MaxArgsBytes = 1 << 20 })
	long := strings.Repeat("x", 256_000)
	for _, tt := range []struct {
		name, op, args, arg string
	}{
		{"a 256,000-character title (max_length 256)", "create_issue", `{"owner":"o","repo":"r","title":"` + long + `"}`, "title"},
		{"a 257-character title", "create_issue", `{"owner":"o","repo":"r","title":"` + long[:257] + `"}`, "title"},
		{"per_page 100000", "list_issues", `{"owner":"o","repo":"r","per_page":100000}`, "per_page"},
		{"per_page abc", "list_issues", `{"owner":"o","repo":"r","per_page":"abc"}`, "per_page"},
		{"state everything", "list_issues", `{"owner":"o","repo":"r","state":"everything"}`, "state"},
		{"state empty", "list_issues", `{"owner":"o","repo":"r","state":""}`, "state"},
		{"owner breaks its pattern", "list_issues", `{"owner":"-o","repo":"r"}`, "owner"},
		{"owner over max_length", "list_issues", `{"owner":"` + strings.Repeat("a", 40) + `","repo":"r"}`, "owner"},
		{"repo is ..", "get_repo", `{"owner":"o","repo":".."}`, "repo"},
		{"an undeclared arg", "list_issues", `{"owner":"o","repo":"r","attack":"honest"}`, "attack"},
		{"owner missing", "list_issues", `{"repo":"r"}`, "owner"},
		{"a control character", "create_issue", `{"owner":"o","repo":"r","title":"a\u0000b"}`, "title"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.Reset()
			before := len(env.guestOutput())
			res, err := env.runHarness("github", tt.op, tt.args, `{"attack":"honest"}`)
			if err == nil || err.Code != api.CodeBadArgs || err.Arg != tt.arg {
				t.Fatalf("got %v %v, want bad_args for %s", res, err, tt.arg)
			}
			if out := env.guestOutput()[before:]; strings.Contains(out, "code=") {
				t.Fatalf("the guest ran: %q", out)
			}
			if n := len(env.fake.Requests()); n != 0 {
				t.Fatalf("the fake received %d requests", n)
			}
			if err.Applied != "" {
				t.Fatalf("applied %q on an op that sent nothing", err.Applied)
			}
		})
	}
}
