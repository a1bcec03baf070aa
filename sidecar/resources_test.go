package sidecar

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// limited seals a grant limited to the repositories named.
func limited(t *testing.T, env *testEnv, g grant.Grant, repos ...string) string {
	t.Helper()
	if err := g.SetResources(map[string][]string{"repository": repos}); err != nil {
		t.Fatal(err)
	}
	return env.seal(t, g)
}

// TestResourceLimitRefusesOthers: a grant limited to pinned-tester/notes
// runs there; a call naming any other repository — or the same one
// spelled another way (case, percent-encoding, a trailing slash, dot
// segments, a NUL, white space, a duplicate key, a non-string) — is
// refused resource_denied naming the arg, before anything is sent. The
// refused grant is not spent. (A duplicate key never gets this far: the
// body is refused bad_request, and checkResources parses strictly too.)
func TestResourceLimitRefusesOthers(t *testing.T) {
	env := newTestEnv(t, nil)
	ok := limited(t, env, grant.Grant{Access: grant.AccessWrite}, "pinned-tester/notes")
	r := env.op(t, "github", "create_issue", `{"owner":"pinned-tester","repo":"notes","title":"inside the limit"}`, ok)
	if r.status != http.StatusOK {
		t.Fatalf("within the limit: %d %s", r.status, r.body)
	}
	if n := len(env.fake.Requests()); n != 1 {
		t.Fatalf("the fake received %d requests, want 1", n)
	}

	tests := []struct {
		name, op, args, arg string
	}{
		{"another repository", "create_issue", `{"owner":"pinned-tester","repo":"other","title":"x"}`, "repo"},
		{"another owner", "create_issue", `{"owner":"octo","repo":"notes","title":"x"}`, "owner"},
		{"the owner in upper case", "create_issue", `{"owner":"Pinned-Tester","repo":"notes","title":"x"}`, "owner"},
		{"the repo in upper case", "list_issues", `{"owner":"pinned-tester","repo":"NOTES"}`, "repo"},
		{"percent-encoded", "create_issue", `{"owner":"pinned-tester","repo":"not%65s","title":"x"}`, "repo"},
		{"an encoded slash", "create_issue", `{"owner":"pinned-tester","repo":"notes%2F..%2Fother","title":"x"}`, "repo"},
		{"a trailing slash", "get_repo", `{"owner":"pinned-tester","repo":"notes/"}`, "repo"},
		{"dot segments", "get_repo", `{"owner":"pinned-tester","repo":"notes/../other"}`, "repo"},
		{"the separator in the owner", "get_repo", `{"owner":"pinned-tester/notes","repo":""}`, "owner"},
		{"a dot", "get_repo", `{"owner":"pinned-tester","repo":"."}`, "repo"},
		{"a trailing space", "get_repo", `{"owner":"pinned-tester","repo":"notes "}`, "repo"},
		{"a NUL", "get_repo", `{"owner":"pinned-tester","repo":"notes\u0000"}`, "repo"},
		{"a missing repo", "get_pages", `{"owner":"pinned-tester"}`, "repo"},
		{"a number", "get_repo", `{"owner":"pinned-tester","repo":7}`, "repo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.Reset()
			access := grant.AccessRead
			if tt.op == "create_issue" {
				access = grant.AccessWrite
			}
			sealed := limited(t, env, grant.Grant{Access: access}, "pinned-tester/notes")
			r := env.op(t, "github", tt.op, tt.args, sealed)
			if r.status != http.StatusForbidden || r.err.Error.Code != string(CodeResourceDenied) || r.err.Error.Arg != tt.arg {
				t.Fatalf("got %d %s, want 403 resource_denied naming %q", r.status, r.body, tt.arg)
			}
			if n := len(env.fake.Requests()); n != 0 {
				t.Fatalf("the fake received %d requests", n)
			}
			// Not spent: the same grant runs within the limit.
			inside := `{"owner":"pinned-tester","repo":"notes"}`
			if tt.op == "create_issue" {
				inside = `{"owner":"pinned-tester","repo":"notes","title":"x"}`
			}
			if r := env.op(t, "github", tt.op, inside, sealed); r.status != http.StatusOK {
				t.Fatalf("the refused grant then within the limit: %d %s", r.status, r.body)
			}
		})
	}
}

// TestResourceLimitFiltersList: the list op runs under a limited grant
// with its result cut to the chosen repositories; the viewer (unscoped)
// runs unchanged.
func TestResourceLimitFiltersList(t *testing.T) {
	env := newTestEnv(t, nil)
	var names []string
	args, pages := json.RawMessage(`{"per_page":100}`), 0
	for ; args != nil && pages < 5; pages++ {
		sealed := limited(t, env, grant.Grant{Access: grant.AccessRead}, "pinned-tester/notes", "nobody/absent")
		r := env.op(t, "github", "list_repos", string(args), sealed)
		if r.status != http.StatusOK {
			t.Fatalf("list_repos: %d %s", r.status, r.body)
		}
		var ans struct {
			Data []struct {
				FullName string `json:"full_name"`
			} `json:"data"`
			Next json.RawMessage `json:"next"`
		}
		if err := json.Unmarshal(r.body, &ans); err != nil {
			t.Fatal(err)
		}
		for _, d := range ans.Data {
			names = append(names, d.FullName)
		}
		args = ans.Next
	}
	if pages != 3 || len(names) != 1 || names[0] != "pinned-tester/notes" {
		t.Fatalf("list_repos under the limit, %d pages: %q, want pinned-tester/notes only", pages, names)
	}
	if r := env.op(t, "github", "get_viewer", `{}`, limited(t, env, grant.Grant{Access: grant.AccessRead}, "pinned-tester/notes")); r.status != http.StatusOK {
		t.Fatalf("get_viewer: %d %s", r.status, r.body)
	}
}

// TestResourceLimitUndeclaredKindRefused: a limit of a kind the service
// does not declare cannot be enforced, so every op is refused.
func TestResourceLimitUndeclaredKindRefused(t *testing.T) {
	env := newTestEnv(t, nil)
	g := grant.Grant{Service: "stripe", Access: grant.AccessRead}
	if err := g.SetResources(map[string][]string{"repository": {"pinned-tester/notes"}}); err != nil {
		t.Fatal(err)
	}
	r := env.op(t, "stripe", "get_balance", `{}`, env.seal(t, g))
	if r.status != http.StatusForbidden || r.err.Error.Code != string(CodeResourceDenied) {
		t.Fatalf("got %d %s", r.status, r.body)
	}
	if n := len(env.fake.Requests()); n != 0 {
		t.Fatalf("the fake received %d requests", n)
	}
}

// TestResourceLimitDNSimpleAccount: DNSimple declares its account (an
// integer arg) a resource. A grant limited to account 1385 lists its
// domains and registers there; any other account, or the same number in
// another spelling (a fraction, an exponent, a sign), absent or null,
// is refused resource_denied naming account, before anything is sent.
// The viewer runs unchanged.
func TestResourceLimitDNSimpleAccount(t *testing.T) {
	env := newTestEnv(t, nil)
	seal := func(access string) string {
		g := grant.Grant{Service: "dnsimple", Access: access}
		if err := g.SetResources(map[string][]string{"account": {"1385"}}); err != nil {
			t.Fatal(err)
		}
		return env.seal(t, g)
	}
	for _, c := range []struct{ op, args, access string }{
		{"get_viewer", `{}`, grant.AccessRead},
		{"list_domains", `{"account":1385}`, grant.AccessRead},
		{"check_domain", `{"account":1385,"domain":"pinned-example-shop.com"}`, grant.AccessRead},
	} {
		if r := env.op(t, "dnsimple", c.op, c.args, seal(c.access)); r.status != http.StatusOK {
			t.Fatalf("%s inside the limit: %d %s", c.op, r.status, r.body)
		}
	}
	tests := []struct{ name, op, args, access string }{
		{"another account", "list_domains", `{"account":1386}`, grant.AccessRead},
		{"a write to another account", "register_domain", `{"account":9999,"domain":"member-wanted-two.com","registrant_id":2715}`, grant.AccessWrite},
		{"a fraction", "list_domains", `{"account":1385.0}`, grant.AccessRead},
		{"an exponent", "list_domains", `{"account":1.385e3}`, grant.AccessRead},
		{"a sign", "list_domains", `{"account":-1385}`, grant.AccessRead},
		{"missing", "list_zone_records", `{"zone":"hello-fake.io"}`, grant.AccessRead},
		{"null", "list_domains", `{"account":null}`, grant.AccessRead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.Reset()
			r := env.op(t, "dnsimple", tt.op, tt.args, seal(tt.access))
			if r.status != http.StatusForbidden || r.err.Error.Code != string(CodeResourceDenied) || r.err.Error.Arg != "account" {
				t.Fatalf("got %d %s, want 403 resource_denied naming account", r.status, r.body)
			}
			if n := len(env.fake.Requests()); n != 0 {
				t.Fatalf("the fake received %d requests", n)
			}
		})
	}
}
