package host

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/jsonv"
	"github.com/elevenmessenger/pinned/registry"
)

// Red team of request binding (issue 10; docs/SECURITY.md, rule 2b): the
// requests a compromised guest could send that differ in meaning from the
// one the caller's args render, each refused, and the ones the check lets
// through because they are truly the same request.

// TestBindRefusesBodies: through the engine and the fake, a guest that
// spells the caller's U+FFFD as an escaped lone surrogate (jsonv decodes
// every one of the 2,048 to U+FFFD, so before the fix they all passed: a
// channel into the caller's text), or an integer arg in another number
// form, is refused with not_bound and the fake receives nothing; the
// honest request with the same args goes out.
func TestBindRefusesBodies(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.Guest = hostileGuest(t, "egress") })
	// The honest linear create_issue body with the title's U+FFFD spelt
	// as a lone surrogate (bset would re-encode it as UTF-8).
	lm, _ := registry.Default().Service("linear")
	lop, _ := lm.Op("create_issue")
	tmpl, err := jsonv.Parse(lop.BodyJSON)
	if err != nil {
		t.Fatal(err)
	}
	linearBody := `{"query":` + string(jsonv.AppendString(nil, tmpl.Get("query").S)) +
		`,"variables":{"teamId":"0f0e0d0c-0b0a-4909-8807-060504030201","title":"\udbff"}}`
	for _, tt := range []struct {
		name, service, op, args string
		mut                     []string // nil: the honest request, which must be sent
	}{
		{"github create_issue honest, U+FFFD in the title", "github", "create_issue",
			`{"owner":"pinned-tester","repo":"notes","title":"Q3 \ufffd plan"}`, nil},
		{"github create_issue U+FFFD as \\ud800", "github", "create_issue",
			`{"owner":"pinned-tester","repo":"notes","title":"Q3 \ufffd plan"}`,
			[]string{`braw:{"title":"Q3 \ud800 plan"}`}},
		{"github create_issue U+FFFD as \\udc01", "github", "create_issue",
			`{"owner":"pinned-tester","repo":"notes","title":"Q3 \ufffd plan"}`,
			[]string{`braw:{"title":"Q3 \udc01 plan"}`}},
		{"linear create_issue U+FFFD as \\udbff", "linear", "create_issue",
			`{"team_id":"0f0e0d0c-0b0a-4909-8807-060504030201","title":"\ufffd"}`,
			[]string{"braw:" + linearBody}},
		{"dnsimple register_domain registrant_id 2715.0", "dnsimple", "register_domain",
			`{"account":1385,"domain":"member-wanted-two.com","registrant_id":2715}`,
			[]string{"bset:registrant_id=2715.0"}},
		{"dnsimple register_domain registrant_id 2715e0", "dnsimple", "register_domain",
			`{"account":1385,"domain":"member-wanted-two.com","registrant_id":2715}`,
			[]string{"bset:registrant_id=2715e0"}},
		{"linear list_teams first 5e0", "linear", "list_teams", `{"first":5}`,
			[]string{"bset:variables/first=5e0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mut := tt.mut
			env.fake.Reset()
			harness := `{"attack":"honest"}`
			if mut != nil {
				mj, _ := json.Marshal(mut)
				harness = `{"attack":"mut","mut":` + string(mj) + `}`
			}
			res, err := env.runHarness(tt.service, tt.op, tt.args, harness)
			if mut == nil {
				if err != nil {
					t.Fatalf("the honest request was refused: %v", err)
				}
				if n := len(env.fake.Requests()); n != 1 {
					t.Fatalf("the fake received %d requests, want 1", n)
				}
				return
			}
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

// TestBindApplied: a write whose 2xx status arrived says applied
// "yes" with that status even when its body then fails (before the fix
// the transport error dropped the status and said "maybe"); a GraphQL
// mutation answered 200 with a RATELIMITED error says "maybe" (before:
// "yes", as for any 2xx).
func TestBindApplied(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.Timeout = 2 * time.Second })
	for _, tt := range []struct {
		name, service, op, args string
		handler                 func(w http.ResponseWriter, r *http.Request) bool
		code                    api.Code
		status                  int
		applied                 api.Applied
	}{
		{"201, then the body never comes", "github", "create_issue", `{"owner":"pinned-tester","repo":"notes","title":"t"}`,
			func(w http.ResponseWriter, r *http.Request) bool {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write([]byte(`{"number":`))
				w.(http.Flusher).Flush()
				select { // bounded: the op's deadline ends it first
				case <-r.Context().Done():
				case <-time.After(5 * time.Second):
				}
				return true
			}, api.CodeTimeout, 201, api.AppliedYes},
		{"200 with a GraphQL RATELIMITED error", "linear", "create_issue", `{"team_id":"0f0e0d0c-0b0a-4909-8807-060504030201","title":"t"}`,
			func(w http.ResponseWriter, r *http.Request) bool {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"data":null,"errors":[{"message":"rate limited","extensions":{"code":"RATELIMITED"}}]}`))
				return true
			}, api.CodeRateLimited, 200, api.AppliedMaybe},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.Reset()
			env.fake.SetHandler(tt.handler)
			defer env.fake.SetHandler(nil)
			_, err := env.run(tt.service, tt.op, tt.args)
			if err == nil || err.Code != tt.code || err.Status != tt.status || err.Applied != tt.applied {
				t.Fatalf("got %+v, want %s HTTP %d applied %q", err, tt.code, tt.status, tt.applied)
			}
		})
	}
}
