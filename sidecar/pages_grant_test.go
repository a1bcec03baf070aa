package sidecar

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// metricValue reads one sample of the /metrics text, 0 when absent.
func metricValue(t *testing.T, env *testEnv, series string) float64 {
	t.Helper()
	body := string(env.do(t, http.MethodGet, "/metrics", nil).body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` ([0-9.e+]+)$`).FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPagesStayWithinGrant attacks pages through POST /v1/ops with a
// model's args and a member's grant (docs/SECURITY.md, "The red team"):
//   - pages on a write op is refused with bad_args before anything is
//     sent, and the grant is not spent;
//   - a grant bound to args_sha256 binds the first page; the pages the
//     host follows change only the cursor arg (same host, path, and
//     every other query value), and the next it returns cannot run under
//     that grant again (its args differ) — nothing is sent;
//   - a paged call is one op in the sidecar's metrics and holds one slot,
//     released after it, while the host counts each page's egress.
func TestPagesStayWithinGrant(t *testing.T) {
	env := newTestEnv(t, nil)

	t.Run("write op with pages", func(t *testing.T) {
		env.fake.Reset()
		args := `{"owner":"octo","repo":"hello","title":"x"}`
		g := env.seal(t, grant.Grant{Service: "github", Access: grant.AccessWrite, Op: "create_issue", ArgsSHA256: mustHash(t, args)})
		r := env.do(t, http.MethodPost, "/v1/ops", OpRequest{Service: "github", Op: "create_issue", Args: json.RawMessage(args), Grant: g, Pages: 2})
		if r.status != http.StatusUnprocessableEntity || r.err.Error.Code != "bad_args" || !strings.Contains(r.err.Error.Message, "does not page") {
			t.Fatalf("pages on a write op: %d %s", r.status, r.body)
		}
		if n := len(env.fake.Requests()); n != 0 {
			t.Fatalf("%d requests sent for a refused write", n)
		}
		// Nothing was sent, so the grant is not spent: the write itself
		// runs once (the fake has no such repo and answers 404).
		if r := env.op(t, "github", "create_issue", args, g); r.err.Error.Code == "grant_replayed" || r.status == http.StatusUnprocessableEntity {
			t.Fatalf("the same grant without pages: %d %s", r.status, r.body)
		}
		if n := len(env.fake.Requests()); n != 1 {
			t.Fatalf("%d requests for one write, want 1", n)
		}
	})

	t.Run("bound grant follows only the cursor", func(t *testing.T) {
		env.fake.Reset()
		const args = `{"limit":50}`
		opsOK := `pinned_sidecar_ops_total{op="list_customers",outcome="ok",service="stripe"}`
		egressOK := `pinned_egress_total{op="list_customers",outcome="ok",service="stripe"}`
		ops0, egress0 := metricValue(t, env, opsOK), metricValue(t, env, egressOK)

		g := env.seal(t, grant.Grant{Service: "stripe", Access: grant.AccessRead, Op: "list_customers", ArgsSHA256: mustHash(t, args)})
		r := env.do(t, http.MethodPost, "/v1/ops", OpRequest{Service: "stripe", Op: "list_customers", Args: json.RawMessage(args), Grant: g, Pages: 2})
		var res OpResponse
		if err := json.Unmarshal(r.body, &res); err != nil || r.status != http.StatusOK {
			t.Fatalf("paged call: %d %s", r.status, r.body)
		}
		reqs := env.fake.Requests()
		if len(reqs) != 2 || res.Pages != 2 || res.Stopped != "pages" || res.Next == nil {
			t.Fatalf("%d requests, %d pages, stopped %q, next %s; want 2 pages read and next", len(reqs), res.Pages, res.Stopped, res.Next)
		}
		for i, rq := range reqs {
			q := stripStartingAfter(rq.RawQuery)
			if rq.Host != reqs[0].Host || rq.Path != reqs[0].Path || q != stripStartingAfter(reqs[0].RawQuery) || rq.Method != http.MethodGet {
				t.Errorf("page %d asked %s %s%s?%s; page 1 asked %s%s?%s", i+1, rq.Method, rq.Host, rq.Path, rq.RawQuery, reqs[0].Host, reqs[0].Path, reqs[0].RawQuery)
			}
		}
		{
			// next runs under neither the spent grant nor a fresh grant
			// bound to page 1's args.
			before := len(env.fake.Requests())
			for _, g := range []string{g, env.seal(t, grant.Grant{Service: "stripe", Access: grant.AccessRead, Op: "list_customers", ArgsSHA256: mustHash(t, args)})} {
				r := env.op(t, "stripe", "list_customers", string(res.Next), g)
				if r.status == http.StatusOK {
					t.Fatalf("next ran under a grant bound to page 1's args: %s", r.body)
				}
			}
			if n := len(env.fake.Requests()) - before; n != 0 {
				t.Errorf("%d requests sent for a refused next", n)
			}
		}
		if d := metricValue(t, env, opsOK) - ops0; d != 1 {
			t.Errorf("ops_total grew by %v for one paged call, want 1", d)
		}
		if d := metricValue(t, env, egressOK) - egress0; d != float64(res.Pages) {
			t.Errorf("egress_total grew by %v for %d pages", d, res.Pages)
		}
		if v := metricValue(t, env, "pinned_sidecar_in_flight"); v != 0 {
			t.Errorf("in_flight %v after the paged call, want 0", v)
		}
	})
}

func mustHash(t *testing.T, args string) string {
	t.Helper()
	h, err := grant.ArgsSHA256(json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// stripStartingAfter removes the starting_after parameter from a query.
func stripStartingAfter(q string) string {
	var keep []string
	for _, kv := range strings.Split(q, "&") {
		if !strings.HasPrefix(kv, "starting_after=") {
			keep = append(keep, kv)
		}
	}
	return strings.Join(keep, "&")
}
