package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/secret"
)

// What each op puts on the wire, asserted byte for byte against what the
// provider fake received: host, method, escaped path, raw query, body,
// every header (and no other), the credential in each provider's scheme,
// and that the result holds only the fields the op's pick declares.

// Linear's GraphQL documents, copied from registry/manifests/linear.json:
// the body is asserted exactly, so a manifest edit shows up here.
const (
	linViewerQuery = `query Viewer { viewer { id name displayName email organization { id name urlKey } } }`
	linTeamsQuery  = `query Teams($first: Int!) { teams(first: $first) { nodes { id key name description } } }`
	linIssuesQuery = `query Issues($first: Int!, $team: String, $after: String) { issues(first: $first, after: $after, orderBy: updatedAt, filter: { team: { key: { eq: $team } } }) { nodes { id identifier title url priority priorityLabel state { name type } assignee { name } team { key } updatedAt } pageInfo { hasNextPage endCursor } } }`
	linIssueQuery  = `query Issue($id: String!) { issue(id: $id) { id identifier title description url priority priorityLabel estimate dueDate state { name type } assignee { name email } creator { name } team { key name } labels { nodes { name } } createdAt updatedAt } }`
	linCreateQuery = `mutation IssueCreate($teamId: String!, $title: String!, $description: String) { issueCreate(input: { teamId: $teamId, title: $title, description: $description }) { success issue { id identifier title url } } }`
)

// HubSpot's fixed properties query values, percent-encoded (',' is %2C).
const (
	hsContactProps = "properties=email%2Cfirstname%2Clastname%2Ccompany%2Cphone%2Cjobtitle"
	hsGetProps     = "properties=email%2Cfirstname%2Clastname%2Ccompany%2Cphone%2Cjobtitle%2Clifecyclestage%2Cwebsite%2Ccity%2Ccountry"
	hsCompanyProps = "properties=name%2Cdomain%2Cindustry%2Ccity%2Ccountry%2Cnumberofemployees"
)

// staticHeaders are the manifest headers each service must send, written
// out so that a manifest edit has to be mirrored here.
var staticHeaders = map[string]map[string]string{
	"github":   {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"},
	"dnsimple": {"Accept": "application/json"},
	"stripe":   {},
	"hubspot":  {},
	"linear":   {},
}

// opRow is one op call and exactly what the fake must receive. Args,
// path, query and body may name anchors ($ZONE, ...) filled from live
// fake data before the rows run.
type opRow struct {
	name    string
	service string
	op      string
	args    string
	// oauth sends the fake's OAuth token with Kind "oauth"; kind sets the
	// Kind of the pasted token otherwise ("" or "pat").
	oauth bool
	kind  string

	method string
	path   string // escaped
	query  string // exact raw query
	body   string // exact bytes; "" = no body
	status int    // upstream status; 0 means 200

	// check, when set, asserts more about the result.
	check func(t *testing.T, res *Result)
}

func TestOpRequests(t *testing.T) {
	t.Parallel()
	env := newEnv(t, nil)
	anchors := opAnchors(t, env)
	fill := anchors.Replace

	rows := []opRow{
		// ---- GitHub ----
		{name: "github get_viewer", service: "github", op: "get_viewer", args: `{}`,
			method: "GET", path: "/user",
			check: func(t *testing.T, res *Result) {
				want := `{"login":"pinned-tester","id":90210001,"html_url":"https://github.com/pinned-tester","type":"User","name":"Pinned Tester","company":"@fake-org-labs","email":"pinned-tester@example.org","created_at":"2017-08-21T13:05:44Z"}`
				if string(res.Data) != want {
					t.Errorf("data:\n got %s\nwant %s", res.Data, want)
				}
			}},
		{name: "github get_viewer with an oauth token is Bearer", service: "github", op: "get_viewer", args: `{}`, oauth: true,
			method: "GET", path: "/user"},
		{name: "github get_viewer with kind pat", service: "github", op: "get_viewer", args: `{}`, kind: "pat",
			method: "GET", path: "/user"},
		{name: "github get_viewer with empty args", service: "github", op: "get_viewer", args: ``,
			method: "GET", path: "/user"},
		{name: "github list_repos applies the per_page default", service: "github", op: "list_repos", args: `{}`,
			method: "GET", path: "/user/repos", query: "per_page=30",
			check: wantLen(30)},
		{name: "github list_repos per_page=100 is projected under the cap", service: "github", op: "list_repos", args: `{"per_page":100}`,
			method: "GET", path: "/user/repos", query: "per_page=100",
			check: func(t *testing.T, res *Result) {
				if res.RawBytes < 500_000 {
					t.Errorf("raw %d bytes, want >= 500000 (a realistic 100-repo page)", res.RawBytes)
				}
				if len(res.Data) > 64<<10 {
					t.Errorf("projected %d bytes, want <= 65536", len(res.Data))
				}
				wantLen(100)(t, res)
			}},
		{name: "github list_repos every query arg, sent in sorted key order", service: "github", op: "list_repos",
			args:   `{"visibility":"private","sort":"full_name","page":2,"per_page":5}`,
			method: "GET", path: "/user/repos", query: "page=2&per_page=5&sort=full_name&visibility=private",
			check: wantLen(5)},
		{name: "github list_repos integer written 1e1 renders as 10", service: "github", op: "list_repos", args: `{"per_page":1e1}`,
			method: "GET", path: "/user/repos", query: "per_page=10", check: wantLen(10)},
		{name: "github list_repos integer written 7.0 renders as 7", service: "github", op: "list_repos", args: `{"per_page":7.0}`,
			method: "GET", path: "/user/repos", query: "per_page=7", check: wantLen(7)},
		{name: "github get_repo", service: "github", op: "get_repo", args: `{"owner":"pinned-tester","repo":"notes"}`,
			method: "GET", path: "/repos/pinned-tester/notes",
			check: func(t *testing.T, res *Result) {
				var r struct {
					FullName string `json:"full_name"`
					Owner    struct {
						Login string `json:"login"`
					} `json:"owner"`
				}
				mustUnmarshal(t, res.Data, &r)
				if r.FullName != "pinned-tester/notes" || r.Owner.Login != fakeapi.GitHubViewer {
					t.Errorf("data %s", res.Data)
				}
			}},
		{name: "github get_repo dots and mixed case stay literal", service: "github", op: "get_repo",
			args:   `{"owner":"Pinned-Tester","repo":"pinned-tester.github.io"}`,
			method: "GET", path: "/repos/Pinned-Tester/pinned-tester.github.io"},
		{name: "github get_pages", service: "github", op: "get_pages", args: `{"owner":"pinned-tester","repo":"notes"}`,
			method: "GET", path: "/repos/pinned-tester/notes/pages",
			check: func(t *testing.T, res *Result) {
				var p struct {
					CNAME  string `json:"cname"`
					Source struct {
						Branch string `json:"branch"`
					} `json:"source"`
				}
				mustUnmarshal(t, res.Data, &p)
				if p.CNAME != "www.pinned-notes.dev" || p.Source.Branch == "" {
					t.Errorf("data %s", res.Data)
				}
			}},
		{name: "github list_issues defaults", service: "github", op: "list_issues", args: `{"owner":"pinned-tester","repo":"notes"}`,
			method: "GET", path: "/repos/pinned-tester/notes/issues", query: "per_page=30&state=open"},
		{name: "github list_issues every arg", service: "github", op: "list_issues",
			args:   `{"owner":"pinned-tester","repo":"notes","state":"all","per_page":3,"page":2}`,
			method: "GET", path: "/repos/pinned-tester/notes/issues", query: "page=2&per_page=3&state=all",
			check: wantLen(3)},
		{name: "github create_issue escapes JSON text and keeps manifest key order", service: "github", op: "create_issue",
			args:   `{"body":"line 1\nline 2\ttab \\ back","title":"Fix \"quotes\" & <tags> / ünï 😀","repo":"notes","owner":"pinned-tester"}`,
			method: "POST", path: "/repos/pinned-tester/notes/issues", status: 201,
			body: `{"title":"Fix \"quotes\" & <tags> / ünï 😀","body":"line 1\nline 2\ttab \\ back"}`,
			check: func(t *testing.T, res *Result) {
				var r struct {
					Title string `json:"title"`
					State string `json:"state"`
				}
				mustUnmarshal(t, res.Data, &r)
				if r.Title != "Fix \"quotes\" & <tags> / ünï 😀" || r.State != "open" {
					t.Errorf("data %s", res.Data)
				}
			}},
		{name: "github create_issue leaves an absent optional body member out", service: "github", op: "create_issue",
			args:   `{"owner":"pinned-tester","repo":"notes","title":"Only a title"}`,
			method: "POST", path: "/repos/pinned-tester/notes/issues", status: 201,
			body: `{"title":"Only a title"}`},

		// ---- DNSimple ----
		{name: "dnsimple get_viewer", service: "dnsimple", op: "get_viewer", args: `{}`,
			method: "GET", path: "/v2/whoami",
			check: func(t *testing.T, res *Result) {
				want := `{"user":{"id":2201,"email":"pinned-tester@example.org"},"account":{"id":1385,"email":"pinned-tester@example.org","plan_identifier":"dnsimple-professional"}}`
				if string(res.Data) != want {
					t.Errorf("data:\n got %s\nwant %s", res.Data, want)
				}
			}},
		{name: "dnsimple get_viewer oauth", service: "dnsimple", op: "get_viewer", args: `{}`, oauth: true,
			method: "GET", path: "/v2/whoami"},
		{name: "dnsimple list_domains integer path segment and default", service: "dnsimple", op: "list_domains", args: `{"account":1385}`,
			method: "GET", path: "/v2/1385/domains", query: "per_page=30", check: wantLen(30)},
		{name: "dnsimple list_domains every arg", service: "dnsimple", op: "list_domains",
			args:   `{"account":1385,"name_like":"$ZONE","page":1,"per_page":5}`,
			method: "GET", path: "/v2/1385/domains", query: "name_like=$ZONE&page=1&per_page=5", check: wantLen(1)},
		{name: "dnsimple list_zone_records", service: "dnsimple", op: "list_zone_records", args: `{"account":1385,"zone":"$ZONE"}`,
			method: "GET", path: "/v2/1385/zones/$ZONE/records", query: "per_page=30"},
		{name: "dnsimple list_zone_records every arg", service: "dnsimple", op: "list_zone_records",
			args:   `{"account":1385,"zone":"$ZONE","name":"www","type":"CNAME","page":1,"per_page":100}`,
			method: "GET", path: "/v2/1385/zones/$ZONE/records", query: "name=www&page=1&per_page=100&type=CNAME",
			check: func(t *testing.T, res *Result) {
				var recs []map[string]any
				mustUnmarshal(t, res.Data, &recs)
				if len(recs) != 1 || recs[0]["type"] != "CNAME" || recs[0]["name"] != "www" {
					t.Errorf("data %s", res.Data)
				}
			}},
		{name: "dnsimple check_domain", service: "dnsimple", op: "check_domain", args: `{"account":1385,"domain":"pinned-check-domain.dev"}`,
			method: "GET", path: "/v2/1385/registrar/domains/pinned-check-domain.dev/check",
			check: func(t *testing.T, res *Result) {
				want := `{"domain":"pinned-check-domain.dev","available":true,"premium":false}`
				if string(res.Data) != want {
					t.Errorf("data:\n got %s\nwant %s", res.Data, want)
				}
			}},
		{name: "dnsimple register_domain typed integer and boolean defaults", service: "dnsimple", op: "register_domain",
			args:   `{"account":1385,"domain":"pinned-register-one.com","registrant_id":2715}`,
			method: "POST", path: "/v2/1385/registrar/domains/pinned-register-one.com/registrations", status: 201,
			body: `{"registrant_id":2715,"whois_privacy":false,"auto_renew":false}`,
			check: func(t *testing.T, res *Result) {
				var r map[string]any
				mustUnmarshal(t, res.Data, &r)
				if r["registrant_id"] != float64(2715) || r["auto_renew"] != false || r["whois_privacy"] != false {
					t.Errorf("data %s", res.Data)
				}
			}},
		{name: "dnsimple register_domain booleans true, args in another order", service: "dnsimple", op: "register_domain",
			args:   `{"auto_renew":true,"whois_privacy":true,"registrant_id":2715,"domain":"pinned-register-two.io","account":1385}`,
			method: "POST", path: "/v2/1385/registrar/domains/pinned-register-two.io/registrations", status: 201,
			body: `{"registrant_id":2715,"whois_privacy":true,"auto_renew":true}`},

		// ---- Stripe ----
		{name: "stripe get_viewer", service: "stripe", op: "get_viewer", args: `{}`,
			method: "GET", path: "/v1/account",
			check: func(t *testing.T, res *Result) {
				var r map[string]any
				mustUnmarshal(t, res.Data, &r)
				if r["id"] != fakeapi.StripeAccountID {
					t.Errorf("data %s", res.Data)
				}
			}},
		{name: "stripe get_viewer oauth", service: "stripe", op: "get_viewer", args: `{}`, oauth: true,
			method: "GET", path: "/v1/account"},
		{name: "stripe list_customers default limit", service: "stripe", op: "list_customers", args: `{}`,
			method: "GET", path: "/v1/customers", query: "limit=10", check: wantLen(10)},
		{name: "stripe list_customers percent-encodes a query value", service: "stripe", op: "list_customers",
			args:   `{"email":"a.b_c%d+e-f@x-y.io","limit":3}`,
			method: "GET", path: "/v1/customers", query: "email=a.b_c%25d%2Be-f%40x-y.io&limit=3",
			check: wantLen(0)},
		{name: "stripe list_customers starting_after", service: "stripe", op: "list_customers",
			args:   `{"starting_after":"$CUSTOMER","limit":1}`,
			method: "GET", path: "/v1/customers", query: "limit=1&starting_after=$CUSTOMER", check: wantLen(1)},
		{name: "stripe list_charges of a customer", service: "stripe", op: "list_charges", args: `{"customer":"$CUSTOMER","limit":2}`,
			method: "GET", path: "/v1/charges", query: "customer=$CUSTOMER&limit=2"},
		{name: "stripe list_charges starting_after", service: "stripe", op: "list_charges", args: `{"starting_after":"$CHARGE"}`,
			method: "GET", path: "/v1/charges", query: "limit=10&starting_after=$CHARGE", check: wantLen(10)},
		{name: "stripe get_balance", service: "stripe", op: "get_balance", args: `{}`,
			method: "GET", path: "/v1/balance",
			check: func(t *testing.T, res *Result) {
				var r struct {
					Available []map[string]any `json:"available"`
					Livemode  *bool            `json:"livemode"`
				}
				mustUnmarshal(t, res.Data, &r)
				if len(r.Available) != 1 || r.Available[0]["currency"] != "usd" || r.Livemode == nil || *r.Livemode {
					t.Errorf("data %s", res.Data)
				}
			}},
		{name: "stripe create_customer form body, sorted keys, form encoding", service: "stripe", op: "create_customer",
			args:   `{"name":"Zoë & Co / Ltd","email":"new.customer+1@example.com","description":"vip=yes; 100% ~sure"}`,
			method: "POST", path: "/v1/customers",
			body: "description=vip%3Dyes%3B+100%25+~sure&email=new.customer%2B1%40example.com&name=Zo%C3%AB+%26+Co+%2F+Ltd",
			check: func(t *testing.T, res *Result) {
				var r map[string]any
				mustUnmarshal(t, res.Data, &r)
				if r["email"] != "new.customer+1@example.com" || r["name"] != "Zoë & Co / Ltd" || r["description"] != "vip=yes; 100% ~sure" {
					t.Errorf("data %s", res.Data)
				}
			}},
		{name: "stripe create_customer leaves absent form keys out", service: "stripe", op: "create_customer",
			args:   `{"email":"only.email@example.com"}`,
			method: "POST", path: "/v1/customers", body: "email=only.email%40example.com"},

		// ---- HubSpot ----
		{name: "hubspot get_viewer", service: "hubspot", op: "get_viewer", args: `{}`,
			method: "GET", path: "/account-info/v3/details",
			check: func(t *testing.T, res *Result) {
				want := `{"portalId":24601234,"accountType":"STANDARD","timeZone":"Europe/Berlin","companyCurrency":"EUR","uiDomain":"app-eu1.hubspot.com","dataHostingLocation":"eu1"}`
				if string(res.Data) != want {
					t.Errorf("data:\n got %s\nwant %s", res.Data, want)
				}
			}},
		{name: "hubspot get_viewer oauth", service: "hubspot", op: "get_viewer", args: `{}`, oauth: true,
			method: "GET", path: "/account-info/v3/details"},
		{name: "hubspot list_contacts default and literal query value", service: "hubspot", op: "list_contacts", args: `{}`,
			method: "GET", path: "/crm/v3/objects/contacts", query: "limit=10&" + hsContactProps, check: wantLen(10)},
		{name: "hubspot list_contacts after", service: "hubspot", op: "list_contacts", args: `{"limit":2,"after":"$CONTACT"}`,
			method: "GET", path: "/crm/v3/objects/contacts", query: "after=$CONTACT&limit=2&" + hsContactProps,
			check: func(t *testing.T, res *Result) {
				var r []map[string]any
				mustUnmarshal(t, res.Data, &r)
				if len(r) != 2 || r[0]["id"] != anchors.get("$CONTACT") {
					t.Errorf("data %s", res.Data)
				}
			}},
		{name: "hubspot get_contact", service: "hubspot", op: "get_contact", args: `{"contact_id":"$CONTACT"}`,
			method: "GET", path: "/crm/v3/objects/contacts/$CONTACT", query: hsGetProps},
		{name: "hubspot list_companies", service: "hubspot", op: "list_companies", args: `{}`,
			method: "GET", path: "/crm/v3/objects/companies", query: "limit=10&" + hsCompanyProps, check: wantLen(10)},
		{name: "hubspot list_companies every arg", service: "hubspot", op: "list_companies", args: `{"after":"$COMPANY","limit":100}`,
			method: "GET", path: "/crm/v3/objects/companies", query: "after=$COMPANY&limit=100&" + hsCompanyProps},
		{name: "hubspot create_contact nested body_json", service: "hubspot", op: "create_contact",
			args:   `{"lastname":"O'Brien","firstname":"Zoë","email":"zoe.obrien@example.org"}`,
			method: "POST", path: "/crm/v3/objects/contacts", status: 201,
			body: `{"properties":{"email":"zoe.obrien@example.org","firstname":"Zoë","lastname":"O'Brien"}}`,
			check: func(t *testing.T, res *Result) {
				var r struct {
					Properties map[string]any `json:"properties"`
				}
				mustUnmarshal(t, res.Data, &r)
				if r.Properties["firstname"] != "Zoë" || r.Properties["email"] != "zoe.obrien@example.org" {
					t.Errorf("data %s", res.Data)
				}
			}},
		{name: "hubspot create_contact leaves nested members out", service: "hubspot", op: "create_contact",
			args:   `{"email":"only.email@example.org"}`,
			method: "POST", path: "/crm/v3/objects/contacts", status: 201,
			body: `{"properties":{"email":"only.email@example.org"}}`},

		// ---- Linear ----
		{name: "linear get_viewer personal key is the bare Authorization", service: "linear", op: "get_viewer", args: `{}`,
			method: "POST", path: "/graphql", body: `{"query":"` + linViewerQuery + `"}`,
			check: func(t *testing.T, res *Result) {
				var r map[string]any
				mustUnmarshal(t, res.Data, &r)
				if r["email"] != "pinned-tester@example.org" || r["organization"].(map[string]any)["urlKey"] != fakeapi.LinearOrgKey {
					t.Errorf("data %s", res.Data)
				}
			}},
		{name: "linear get_viewer kind pat is bare too", service: "linear", op: "get_viewer", args: `{}`, kind: "pat",
			method: "POST", path: "/graphql", body: `{"query":"` + linViewerQuery + `"}`},
		{name: "linear get_viewer oauth is Bearer", service: "linear", op: "get_viewer", args: `{}`, oauth: true,
			method: "POST", path: "/graphql", body: `{"query":"` + linViewerQuery + `"}`},
		{name: "linear list_teams typed integer variable default", service: "linear", op: "list_teams", args: `{}`,
			method: "POST", path: "/graphql", body: `{"query":"` + linTeamsQuery + `","variables":{"first":50}}`,
			check: wantLen(4)},
		{name: "linear list_teams first", service: "linear", op: "list_teams", args: `{"first":2.0}`,
			method: "POST", path: "/graphql", body: `{"query":"` + linTeamsQuery + `","variables":{"first":2}}`,
			check: wantLen(2)},
		{name: "linear list_issues leaves the absent variable out", service: "linear", op: "list_issues", args: `{}`,
			method: "POST", path: "/graphql", body: `{"query":"` + linIssuesQuery + `","variables":{"first":25}}`,
			check: wantLen(25)},
		{name: "linear list_issues after a cursor", service: "linear", op: "list_issues", args: `{"first":2,"after":"$LINISSUE"}`,
			method: "POST", path: "/graphql", body: `{"query":"` + linIssuesQuery + `","variables":{"first":2,"after":"$LINISSUE"}}`,
			check: wantLen(2)},
		{name: "linear list_issues of a team", service: "linear", op: "list_issues", args: `{"team":"ENG","first":3}`,
			method: "POST", path: "/graphql", body: `{"query":"` + linIssuesQuery + `","variables":{"first":3,"team":"ENG"}}`,
			check: func(t *testing.T, res *Result) {
				var r []struct {
					Team struct {
						Key string `json:"key"`
					} `json:"team"`
				}
				mustUnmarshal(t, res.Data, &r)
				if len(r) != 3 {
					t.Fatalf("data %s", res.Data)
				}
				for _, is := range r {
					if is.Team.Key != "ENG" {
						t.Errorf("issue of team %q in %s", is.Team.Key, res.Data)
					}
				}
			}},
		{name: "linear get_issue", service: "linear", op: "get_issue", args: `{"id":"ENG-1"}`,
			method: "POST", path: "/graphql", body: `{"query":"` + linIssueQuery + `","variables":{"id":"ENG-1"}}`,
			check: func(t *testing.T, res *Result) {
				var r map[string]any
				mustUnmarshal(t, res.Data, &r)
				if r["identifier"] != "ENG-1" {
					t.Errorf("data %s", res.Data)
				}
			}},
		{name: "linear create_issue string variables in manifest order", service: "linear", op: "create_issue",
			args:   `{"description":"# Notes\n- \"é\" \\ done","title":"Ship \"it\" <now>","team_id":"$TEAM"}`,
			method: "POST", path: "/graphql",
			body: `{"query":"` + linCreateQuery + `","variables":{"teamId":"$TEAM","title":"Ship \"it\" <now>","description":"# Notes\n- \"é\" \\ done"}}`,
			check: func(t *testing.T, res *Result) {
				var r struct {
					Success bool `json:"success"`
					Issue   struct {
						Title      string `json:"title"`
						Identifier string `json:"identifier"`
					} `json:"issue"`
				}
				mustUnmarshal(t, res.Data, &r)
				if !r.Success || r.Issue.Title != `Ship "it" <now>` || !strings.HasPrefix(r.Issue.Identifier, "ENG-") {
					t.Errorf("data %s", res.Data)
				}
			}},
		{name: "linear create_issue without description", service: "linear", op: "create_issue",
			args:   `{"team_id":"$TEAM","title":"Bare"}`,
			method: "POST", path: "/graphql",
			body: `{"query":"` + linCreateQuery + `","variables":{"teamId":"$TEAM","title":"Bare"}}`},
	}

	covered := map[string]bool{}
	for _, row := range rows {
		covered[row.service+"."+row.op] = true
		t.Run(row.name, func(t *testing.T) {
			m, ok := registry.Default().Service(row.service)
			if !ok {
				t.Fatalf("no service %q", row.service)
			}
			op, ok := m.Op(row.op)
			if !ok {
				t.Fatalf("service %s has no op %q", row.service, row.op)
			}
			token := fakeapi.Token(row.service)
			cred := Credential{Kind: row.kind, Secret: secret.Secret(token)}
			wantAuth := "Bearer " + token
			if row.oauth {
				token = fakeapi.OAuthToken(row.service)
				cred = Credential{Kind: "oauth", Secret: secret.Secret(token)}
				wantAuth = "Bearer " + token
			} else if m.Auth.Scheme == registry.SchemeNone {
				wantAuth = token
			}

			env.fake.Reset()
			res, herr := env.runWith(context.Background(), row.service, row.op, fill(row.args), cred)
			if herr != nil {
				t.Fatalf("%s.%s: %v", row.service, row.op, herr)
			}
			reqs := env.fake.Requests()
			if len(reqs) != 1 {
				t.Fatalf("the fake received %d requests, want 1", len(reqs))
			}
			got := reqs[0]
			assertRendered(t, env.eng, m, row.op, fill(row.args), got)
			if got.Host != m.Host {
				t.Errorf("host %q, want %q", got.Host, m.Host)
			}
			if got.Method != row.method || got.Method != op.Method {
				t.Errorf("method %q, want %q (manifest %q)", got.Method, row.method, op.Method)
			}
			if want := fill(row.path); got.Path != want {
				t.Errorf("path\n got %q\nwant %q", got.Path, want)
			}
			if want := fill(row.query); got.RawQuery != want {
				t.Errorf("query\n got %q\nwant %q", got.RawQuery, want)
			}
			if want := fill(row.body); string(got.Body) != want {
				t.Errorf("body\n got %s\nwant %s", got.Body, want)
			}
			if op.BodyKind() == registry.BodyKindJSON && !json.Valid(got.Body) {
				t.Errorf("body_json op sent invalid JSON: %s", got.Body)
			}
			assertRequestHeaders(t, m, op, got, wantAuth)

			wantStatus := row.status
			if wantStatus == 0 {
				wantStatus = 200
			}
			if res.Status != wantStatus {
				t.Errorf("status %d, want %d", res.Status, wantStatus)
			}
			if res.RawBytes <= 0 {
				t.Errorf("RawBytes %d", res.RawBytes)
			}
			assertPicked(t, op, res.Data)
			if row.check != nil {
				row.check(t, res)
			}
			env.assertNoLeak(t, res, nil, token)
		})
	}

	// The services with hand-written rows here are checked op by op; the
	// registry's other services run every op against the fake's fixtures
	// in TestManifestsAgainstFake (internal/demo/fakeapi) and through
	// request binding in TestBindingEveryOp.
	var missing []string
	for _, m := range registry.Default().Services() {
		if _, ok := staticHeaders[m.ID]; !ok {
			continue
		}
		for _, name := range m.OpNames() {
			if !covered[m.ID+"."+name] {
				missing = append(missing, m.ID+"."+name)
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("ops without a TestOpRequests row: %s", strings.Join(missing, ", "))
	}
	for id, hs := range staticHeaders {
		m, ok := registry.Default().Service(id)
		if !ok {
			t.Errorf("staticHeaders names unknown service %s", id)
			continue
		}
		if len(m.Headers) != len(hs) {
			t.Errorf("%s: manifest headers %v, test expects %v", id, m.Headers, hs)
		}
	}
}

// assertRequestHeaders checks that the request carried exactly the
// headers the host sends for op: the manifest's, Content-Type for a body,
// Accept-Encoding, User-Agent and the credential, each once, and nothing
// else (no Cookie, no Proxy-*, nothing the guest could smuggle).
func assertRequestHeaders(t *testing.T, m *registry.Manifest, op *registry.Op, got fakeapi.Request, wantAuth string) {
	t.Helper()
	want := map[string]string{
		"Accept-Encoding": "gzip",
		"User-Agent":      "pinned/1",
		"Authorization":   wantAuth,
	}
	for k, v := range staticHeaders[m.ID] {
		want[http.CanonicalHeaderKey(k)] = v
	}
	for k, v := range m.Headers {
		if w, ok := want[http.CanonicalHeaderKey(k)]; !ok || w != v {
			t.Errorf("manifest header %s: %s is not in the test's expectations", k, v)
		}
	}
	switch op.BodyKind() {
	case registry.BodyKindJSON:
		want["Content-Type"] = "application/json"
	case registry.BodyKindForm:
		want["Content-Type"] = "application/x-www-form-urlencoded"
	}
	if len(got.Body) > 0 {
		want["Content-Length"] = strconv.Itoa(len(got.Body))
	}
	for k, v := range want {
		if vs := got.Header.Values(k); len(vs) != 1 || vs[0] != v {
			t.Errorf("header %s: got %q, want exactly [%q]", k, vs, v)
		}
	}
	var extra []string
	for k := range got.Header {
		if _, ok := want[k]; !ok {
			extra = append(extra, k+": "+strings.Join(got.Header[k], ", "))
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("unexpected headers upstream: %q", extra)
	}
}

// assertPicked fails when the projected data holds a key the op's pick
// does not declare (at any depth; a path through an array maps over its
// elements).
func assertPicked(t *testing.T, op *registry.Op, data json.RawMessage) {
	t.Helper()
	type node = map[string]any // child name -> node (map) or true (leaf)
	tree := node{}
	for _, f := range op.Pick.Fields {
		n := tree
		segs := strings.Split(f, ".")
		for i, s := range segs {
			if i == len(segs)-1 {
				n[s] = true
				break
			}
			c, ok := n[s].(node)
			if !ok {
				if n[s] == true {
					break // a prefix field keeps the whole value
				}
				c = node{}
				n[s] = c
			}
			n = c
		}
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("projected data is not JSON: %v: %.200s", err, data)
	}
	var walk func(path string, v any, n node)
	walk = func(path string, v any, n node) {
		switch x := v.(type) {
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e, n)
			}
		case map[string]any:
			for k, e := range x {
				c, ok := n[k]
				if !ok {
					t.Errorf("projected data has undeclared field %s.%s", path, k)
					continue
				}
				if sub, ok := c.(node); ok {
					walk(path+"."+k, e, sub)
				}
			}
		}
	}
	walk("$", v, tree)
}

func wantLen(n int) func(*testing.T, *Result) {
	return func(t *testing.T, res *Result) {
		t.Helper()
		var a []json.RawMessage
		mustUnmarshal(t, res.Data, &a)
		if len(a) != n {
			t.Errorf("got %d elements, want %d", len(a), n)
		}
	}
}

func mustUnmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("unmarshal %.300s: %v", data, err)
	}
}

// anchorSet holds ids read from the fake's generated data.
type anchorSet struct {
	vals map[string]string
}

func (a anchorSet) get(k string) string { return a.vals[k] }

func (a anchorSet) Replace(s string) string {
	keys := make([]string, 0, len(a.vals))
	for k := range a.vals {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		s = strings.ReplaceAll(s, k, a.vals[k])
	}
	return s
}

// opAnchors reads a zone, a customer, a charge, a contact, a company and a
// team id from the fake through the engine itself.
func opAnchors(t *testing.T, env *testEnv) anchorSet {
	t.Helper()
	first := func(service, op, args string) map[string]any {
		t.Helper()
		res, err := env.run(service, op, args)
		if err != nil {
			t.Fatalf("anchor %s.%s: %v", service, op, err)
		}
		var list []map[string]any
		mustUnmarshal(t, res.Data, &list)
		if len(list) == 0 {
			t.Fatalf("anchor %s.%s: empty list", service, op)
		}
		return list[0]
	}
	a := anchorSet{vals: map[string]string{}}
	a.vals["$ZONE"] = first("dnsimple", "list_domains", `{"account":1385,"per_page":1}`)["name"].(string)
	ch := first("stripe", "list_charges", `{"limit":1}`)
	a.vals["$CHARGE"] = ch["id"].(string)
	a.vals["$CUSTOMER"] = ch["customer"].(string)
	a.vals["$CONTACT"] = first("hubspot", "list_contacts", `{"limit":1}`)["id"].(string)
	a.vals["$COMPANY"] = first("hubspot", "list_companies", `{"limit":1}`)["id"].(string)
	a.vals["$LINISSUE"] = first("linear", "list_issues", `{"first":1}`)["id"].(string)
	res, err := env.run("linear", "list_teams", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var teams []struct{ ID, Key string }
	mustUnmarshal(t, res.Data, &teams)
	for _, tm := range teams {
		if tm.Key == "ENG" {
			a.vals["$TEAM"] = tm.ID
		}
	}
	for k, v := range a.vals {
		if v == "" {
			t.Fatalf("anchor %s not found", k)
		}
	}
	env.fake.Reset()
	return a
}

// pathTestManifest is a manifest for api.github.com whose path args have
// no pattern, so the executor's percent-encoding and the host's path
// checks can be seen with any value (the shipped manifests all constrain
// their path args), plus an integer arg with a bound of a million.
const pathTestManifest = `{
  "manifest": 1,
  "id": "github",
  "name": "Path encoding test",
  "host": "api.github.com",
  "auth": { "scheme": "bearer" },
  "headers": { "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28" },
  "ops": {
    "get_repo": {
      "access": "read",
      "summary": "Get one repository",
      "method": "GET",
      "path": "/repos/{owner}/{repo}",
      "args": {
        "owner": { "type": "string", "required": true },
        "repo": { "type": "string", "required": true },
        "q": { "type": "string" }
      },
      "query": { "q": "{q}", "fixed": "a b,c" },
      "pick": { "fields": { "full_name": "identifier" } }
    },
    "list_big": {
      "access": "read",
      "summary": "An integer arg with a large bound",
      "method": "GET",
      "path": "/user/repos",
      "args": { "n": { "type": "integer", "min": 1, "max": 1000000 } },
      "query": { "per_page": "{n}" },
      "pick": { "fields": { "full_name": "identifier" } }
    }
  }
}`

func pathTestEnv(t *testing.T) *testEnv {
	t.Helper()
	reg, err := registry.Load(fstest.MapFS{"github.json": {Data: []byte(pathTestManifest)}})
	if err != nil {
		t.Fatal(err)
	}
	return newEnv(t, func(c *Config) { c.Registry = reg })
}

// TestOpRequestsPathEncoding: a path arg is one percent-encoded segment
// (RFC 3986 unreserved characters stay); values that would change the
// path's shape never reach the provider.
func TestOpRequestsPathEncoding(t *testing.T) {
	t.Parallel()
	env := pathTestEnv(t)
	tests := []struct {
		name, args  string
		path, query string
		code        api.Code
		deny        api.DenyReason
		arg         string
	}{
		{name: "space, unicode and sub-delims are encoded", args: `{"owner":"a b","repo":"ü&=+;:@,$!'()*~._-"}`,
			path: "/repos/a%20b/%C3%BC%26%3D%2B%3B%3A%40%2C%24%21%27%28%29%2A~._-", query: "fixed=a%20b%2Cc"},
		{name: "a percent sign is encoded, not decoded", args: `{"owner":"%2e%2e","repo":"%2F"}`,
			path: "/repos/%252e%252e/%252F", query: "fixed=a%20b%2Cc"},
		{name: "query value with space, slash, ampersand, unicode", args: `{"owner":"o","repo":"r","q":"a b/c&d=é?#"}`,
			path: "/repos/o/r", query: "fixed=a%20b%2Cc&q=a%20b%2Fc%26d%3D%C3%A9%3F%23"},
		{name: "a dotted name is not a dot segment", args: `{"owner":"...","repo":".x"}`,
			path: "/repos/.../.x", query: "fixed=a%20b%2Cc"},
		{name: "a slash in a segment is refused by the egress policy", args: `{"owner":"a/b","repo":"r"}`,
			code: api.CodeEgressDenied, deny: api.DenyEncodedSlash},
		{name: "a backslash in a segment is refused by the egress policy", args: `{"owner":"a\\b","repo":"r"}`,
			code: api.CodeEgressDenied, deny: api.DenyEncodedSlash},
		{name: "dot-dot segment is a bad arg", args: `{"owner":"..","repo":"r"}`, code: api.CodeBadArgs, arg: "owner"},
		{name: "dot segment is a bad arg", args: `{"owner":"o","repo":"."}`, code: api.CodeBadArgs, arg: "repo"},
		{name: "empty segment is a bad arg", args: `{"owner":"","repo":"r"}`, code: api.CodeBadArgs, arg: "owner"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.Reset()
			_, herr := env.run("github", "get_repo", tt.args)
			reqs := env.fake.Requests()
			if tt.code != "" {
				if herr == nil || herr.Code != tt.code || herr.Deny != tt.deny || herr.Arg != tt.arg {
					t.Fatalf("got %+v, want code %s deny %q arg %q", herr, tt.code, tt.deny, tt.arg)
				}
				if len(reqs) != 0 {
					t.Fatalf("the fake received %d requests", len(reqs))
				}
				return
			}
			// The repository does not exist: the fake's own 404.
			if herr == nil || herr.Code != api.CodeUpstreamError || herr.Status != 404 || herr.Message != "Not Found" {
				t.Fatalf("got %+v, want the fake's 404", herr)
			}
			if len(reqs) != 1 {
				t.Fatalf("the fake received %d requests", len(reqs))
			}
			if reqs[0].Path != tt.path || reqs[0].RawQuery != tt.query {
				t.Errorf("got %q ? %q\nwant %q ? %q", reqs[0].Path, reqs[0].RawQuery, tt.path, tt.query)
			}
		})
	}
}

// TestOpBadArgs: every kind of arg violation is refused in the sandbox
// with api.CodeBadArgs, the arg, and a message the host writes from the
// manifest; nothing reaches the provider.
func TestOpBadArgs(t *testing.T) {
	t.Parallel()
	env := newEnv(t, nil)
	penv := pathTestEnv(t)
	long := func(r string, n int) string { return strings.Repeat(r, n) }
	tests := []struct {
		name        string
		custom      bool // run against pathTestManifest
		service, op string
		args        string
		arg, msg    string
	}{
		{name: "missing required", service: "github", op: "get_repo", args: `{"owner":"pinned-tester"}`,
			arg: "repo", msg: `arg "repo" is required`},
		{name: "missing required, first in name order", service: "github", op: "create_issue", args: `{}`,
			arg: "owner", msg: `arg "owner" is required`},
		{name: "required string given null", service: "github", op: "get_repo", args: `{"owner":null,"repo":"x"}`,
			arg: "owner", msg: `arg "owner" must be a string`},
		{name: "wrong type: string for integer", service: "github", op: "list_repos", args: `{"per_page":"10"}`,
			arg: "per_page", msg: `arg "per_page" must be an integer (up to 2^53)`},
		{name: "wrong type: fraction for integer", service: "github", op: "list_repos", args: `{"per_page":1.5}`,
			arg: "per_page", msg: `arg "per_page" must be an integer (up to 2^53)`},
		{name: "wrong type: integer beyond 2^53", service: "dnsimple", op: "list_domains", args: `{"account":9007199254740993}`,
			arg: "account", msg: `arg "account" must be an integer (up to 2^53)`},
		{name: "wrong type: null for an optional string (null is not absent)", service: "github", op: "create_issue",
			args: `{"owner":"pinned-tester","repo":"notes","title":"t","body":null}`,
			arg:  "body", msg: `arg "body" must be a string`},
		{name: "wrong type: number for string", service: "github", op: "get_repo", args: `{"owner":5,"repo":"x"}`,
			arg: "owner", msg: `arg "owner" must be a string`},
		{name: "wrong type: string for boolean", service: "dnsimple", op: "register_domain",
			args: `{"account":1385,"domain":"pinned-bad.com","registrant_id":2715,"whois_privacy":"yes"}`,
			arg:  "whois_privacy", msg: `arg "whois_privacy" must be true or false`},
		{name: "enum", service: "github", op: "list_repos", args: `{"sort":"stars"}`,
			arg: "sort", msg: `arg "sort" must be one of: created, updated, pushed, full_name`},
		{name: "enum is case-sensitive", service: "dnsimple", op: "list_zone_records", args: `{"account":1385,"zone":"a.com","type":"cname"}`,
			arg: "type", msg: `arg "type" must be one of: A, AAAA, ALIAS, CAA, CNAME, HINFO, MX, NAPTR, NS, POOL, PTR, SOA, SPF, SRV, SSHFP, TXT, URL`},
		{name: "pattern", service: "github", op: "get_repo", args: `{"owner":"-bad","repo":"x"}`,
			arg: "owner", msg: `arg "owner" must match ^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`},
		{name: "pattern refuses a slash smuggled into a path arg", service: "github", op: "get_repo", args: `{"owner":"pinned-tester","repo":"notes/../../user"}`,
			arg: "repo", msg: `arg "repo" must match ^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$`},
		{name: "pattern refuses .. as a path segment", service: "github", op: "get_repo", args: `{"owner":"pinned-tester","repo":".."}`,
			arg: "repo", msg: `arg "repo" must match ^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$`},
		{name: "min", service: "github", op: "list_repos", args: `{"per_page":0}`,
			arg: "per_page", msg: `arg "per_page" must be at least 1`},
		{name: "min, negative", service: "dnsimple", op: "list_domains", args: `{"account":-1}`,
			arg: "account", msg: `arg "account" must be at least 1`},
		{name: "max", service: "github", op: "list_repos", args: `{"per_page":101}`,
			arg: "per_page", msg: `arg "per_page" must be at most 100`},
		{name: "max on a GraphQL variable", service: "linear", op: "list_teams", args: `{"first":1000}`,
			arg: "first", msg: `arg "first" must be at most 100`},
		{name: "max_length in code points", service: "github", op: "create_issue",
			args: `{"owner":"pinned-tester","repo":"notes","title":"` + long("é", 257) + `"}`,
			arg:  "title", msg: `arg "title" must be at most 256 characters`},
		{name: "max_length of a query arg", service: "stripe", op: "list_customers", args: `{"email":"` + long("a", 250) + `@x.io"}`,
			arg: "email", msg: `arg "email" must be at most 254 characters`},
		{name: "control character", service: "github", op: "create_issue",
			args: `{"owner":"pinned-tester","repo":"notes","title":"a\u0000b"}`,
			arg:  "title", msg: `arg "title" cannot be used here (an empty, "." or ".." path segment, or a control character)`},
		{name: "undeclared", service: "github", op: "list_repos", args: `{"per_page":5,"affiliation":"owner"}`,
			arg: "affiliation", msg: `op github.list_repos has no arg "affiliation" (args: page, per_page, sort, visibility)`},
		{name: "undeclared on an op without args", service: "stripe", op: "get_balance", args: `{"x":1}`,
			arg: "x", msg: `op stripe.get_balance has no arg "x" (args: none)`},
		{name: "not an object: array", service: "github", op: "list_repos", args: `[]`,
			msg: "args must be a JSON object with unique keys"},
		{name: "not an object: string", service: "github", op: "list_repos", args: `"per_page=5"`,
			msg: "args must be a JSON object with unique keys"},
		{name: "not an object: null", service: "github", op: "list_repos", args: `null`,
			msg: "args must be a JSON object with unique keys"},
		{name: "not JSON", service: "github", op: "list_repos", args: `{per_page:5}`,
			msg: "args must be a JSON object with unique keys"},
		{name: "duplicate key", service: "github", op: "list_repos", args: `{"per_page":5,"per_page":100}`,
			msg: "args must be a JSON object with unique keys"},
		{name: "undeclared key sent twice", service: "github", op: "list_repos", args: `{"a":1,"a":2}`,
			arg: "a", msg: `op github.list_repos has no arg "a" (args: page, per_page, sort, visibility)`},
		{name: "undeclared escaped key after a duplicate", service: "github", op: "list_repos", args: `{"per_page":5,"b":1,"b":2,"\u0063":3}`,
			arg: "b", msg: `op github.list_repos has no arg "b" (args: page, per_page, sort, visibility)`},
		{name: "args over 64 KiB", service: "github", op: "create_issue",
			args: `{"owner":"pinned-tester","repo":"notes","title":"t","body":"` + long("x", 64<<10) + `"}`,
			msg:  "args are larger than 65536 bytes"},
		{name: "dot-dot path segment", custom: true, service: "github", op: "get_repo", args: `{"owner":"..","repo":"r"}`,
			arg: "owner", msg: `arg "owner" cannot be used here (an empty, "." or ".." path segment, or a control character)`},
		{name: "empty path segment", custom: true, service: "github", op: "get_repo", args: `{"owner":"o","repo":""}`,
			arg: "repo", msg: `arg "repo" cannot be used here (an empty, "." or ".." path segment, or a control character)`},
		{name: "max of a million is written in decimal", custom: true, service: "github", op: "list_big", args: `{"n":1000001}`,
			arg: "n", msg: `arg "n" must be at most 1000000`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := env
			if tt.custom {
				e = penv
			}
			e.fake.Reset()
			res, herr := e.run(tt.service, tt.op, tt.args)
			if herr == nil {
				t.Fatalf("ran: %s", res.Data)
			}
			if herr.Code != api.CodeBadArgs || herr.Arg != tt.arg || herr.Message != tt.msg || herr.Status != 0 {
				t.Errorf("got code %s arg %q status %d\n  message %q\nwant code bad_args arg %q\n  message %q",
					herr.Code, herr.Arg, herr.Status, herr.Message, tt.arg, tt.msg)
			}
			if n := len(e.fake.Requests()); n != 0 {
				t.Errorf("the fake received %d requests", n)
			}
		})
	}
}
