package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/abi"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
)

// Connections whose credential has two parts (HTTP Basic, a template) or
// whose host is per connection (a tenant label): the host presents both
// parts itself, pins the one host of the connection's tenant, and checks
// answers and errors for every spelling of the credential.

// TestTenantHostPinned: a guest asking for another tenant's host, the
// bare registered domain or a host around the tenant's is denied before
// anything is sent; the honest request goes to the connection's host.
func TestTenantHostPinned(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.Guest = hostileGuest(t, "egress") })
	cred := fakeCred("jira")
	if cred.Tenant != "acme-fake" || cred.User == "" {
		t.Fatalf("the fake's jira connection is %q / user %d bytes; want tenant acme-fake and a user part", cred.Tenant, len(cred.User))
	}
	for _, authority := range []string{
		"other-fake.atlassian.net",              // another tenant
		"atlassian.net",                         // the bare registered domain
		"{tenant}.atlassian.net",                // the pattern itself
		"api.acme-fake.atlassian.net",           // under the tenant's host
		"acme-fake.atlassian.net.evil.example",  // the tenant's host as a prefix
		"acme-fake.atlassian.net:8443",          // another port
		"ACME-FAKE.atlassian.net",               // another spelling
		"pinned-tester@acme-fake.atlassian.net", // userinfo
		"acme-fake.atlassian.net@evil.example",  // userinfo confusion
		"acme-fake.atlassian.net.",              // trailing dot
		"other-fake.atlassian.net/../acme-fake", // a path trick
	} {
		t.Run(authority, func(t *testing.T) {
			env.fake.Reset()
			m, _ := json.Marshal([]string{"host:" + authority})
			ctx := context.WithValue(context.Background(), harnessKey{}, `{"attack":"mut","mut":`+string(m)+`}`)
			res, err := env.runWith(ctx, "jira", "get_issue", honestArgs["jira.get_issue"], cred)
			if err == nil {
				t.Fatalf("the request to %s went through: %s", authority, res.Data)
			}
			if err.Code != api.CodeEgressDenied {
				t.Fatalf("got %s/%s (%s), want %s", err.Code, err.Deny, err.Message, api.CodeEgressDenied)
			}
			if reqs := env.fake.Requests(); len(reqs) != 0 {
				t.Fatalf("the fake received %d requests: %+v", len(reqs), reqs[0])
			}
			env.assertNoLeak(t, res, err, string(cred.Secret), string(cred.User))
		})
	}
	t.Run("control: the honest request goes to the tenant's host", func(t *testing.T) {
		env.fake.Reset()
		before := len(env.guestOutput())
		ctx := context.WithValue(context.Background(), harnessKey{}, `{"attack":"honest"}`)
		_, err := env.runWith(ctx, "jira", "get_issue", honestArgs["jira.get_issue"], cred)
		if err != nil {
			t.Fatalf("honest request refused: %v", err)
		}
		if got := guestCode(t, env.guestOutput()[before:]); got != abi.OK {
			t.Fatalf("guest saw %d", got)
		}
		reqs := env.fake.Requests()
		if len(reqs) != 1 || reqs[0].Host != "acme-fake.atlassian.net" || reqs[0].Path != "/rest/api/3/issue/CAT-3" {
			t.Fatalf("requests = %+v", reqs)
		}
	})
	if got := env.metricsText(t); !strings.Contains(got, `pinned_egress_denied_total{reason="host",service="jira"}`) {
		t.Errorf("tenant host denials not counted by reason host:\n%s", got)
	}
	_ = api.DenyHost
}

// TestTenantLabelRefused: a connection's tenant label that is not a
// lower-case DNS label, or a tenant for a service with one host, fails
// the op before any guest runs or any request is sent.
func TestTenantLabelRefused(t *testing.T) {
	env := newEnv(t, nil)
	base := fakeCred("jira")
	for _, tt := range []struct {
		name, service, tenant string
	}{
		{"empty", "jira", ""},
		{"upper case", "jira", "Acme-Fake"},
		{"a dot: another domain", "jira", "acme-fake.evil"},
		{"the whole host", "jira", "acme-fake.atlassian.net"},
		{"leading hyphen", "jira", "-acme"},
		{"trailing hyphen", "jira", "acme-"},
		{"underscore", "jira", "acme_fake"},
		{"percent-encoded dot", "jira", "acme%2eevil"},
		{"userinfo", "jira", "x@evil"},
		{"port", "jira", "acme:8443"},
		{"slash", "jira", "acme/x"},
		{"64 characters", "jira", strings.Repeat("a", 64)},
		{"non-ASCII", "jira", "acmé"},
		{"a tenant for a fixed host", "github", "acme"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.Reset()
			cred := base
			if tt.service != "jira" {
				cred = fakeCred(tt.service)
			}
			cred.Tenant = tt.tenant
			args := honestArgs[tt.service+".get_issue"]
			op := "get_issue"
			if tt.service == "github" {
				op, args = "list_issues", honestArgs["github.list_issues"]
			}
			res, err := env.runWith(context.Background(), tt.service, op, args, cred)
			if err == nil || err.Code != api.CodeCredentialInvalid {
				t.Fatalf("tenant %q: got %v / %v, want %s", tt.tenant, res, err, api.CodeCredentialInvalid)
			}
			if reqs := env.fake.Requests(); len(reqs) != 0 {
				t.Fatalf("the fake received %d requests", len(reqs))
			}
			var he *Error
			if e := env.eng.CheckCredentialFor(tt.service, cred); !errors.As(e, &he) || he.Code != api.CodeCredentialInvalid {
				t.Fatalf("CheckCredentialFor accepted tenant %q: %v", tt.tenant, e)
			}
		})
	}
	if e := env.eng.CheckCredentialFor("jira", base); e != nil {
		t.Fatalf("control: the fake's connection refused: %v", e)
	}
}

// TestTwoPartCredential: HTTP Basic carries both parts, encoded, only in
// the host's Authorization; a connection lacking a part, or a part a
// one-part service does not take, is refused; an answer holding either
// part or the encoded pair is withheld, and an error message holding
// one is redacted.
func TestTwoPartCredential(t *testing.T) {
	env := newEnv(t, nil)
	cred := fakeCred("jira")
	user, secret := string(cred.User), string(cred.Secret)
	encoded := base64.StdEncoding.EncodeToString([]byte(user + ":" + secret))

	env.fake.Reset()
	if _, err := env.runWith(context.Background(), "jira", "get_viewer", "{}", cred); err != nil {
		t.Fatalf("get_viewer: %v", err)
	}
	reqs := env.fake.Requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Basic "+encoded {
		t.Fatalf("requests %+v: want Authorization: Basic of the user part and the token", reqs)
	}

	refused := []struct {
		name    string
		service string
		mod     func(c *Credential)
	}{
		{"no user part", "jira", func(c *Credential) { c.User = "" }},
		{"a colon in a Basic user-id", "jira", func(c *Credential) { c.User = "pinned:tester" }},
		{"a line break in the user part", "jira", func(c *Credential) { c.User = "pinned\r\nX-Evil: 1" }},
		{"a user part for a one-part service", "github", func(c *Credential) { c.User = "someone" }},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.Reset()
			c := fakeCred(tt.service)
			tt.mod(&c)
			op, args := "get_viewer", "{}"
			res, err := env.runWith(context.Background(), tt.service, op, args, c)
			if err == nil || err.Code != api.CodeCredentialInvalid {
				t.Fatalf("got %v / %v, want %s", res, err, api.CodeCredentialInvalid)
			}
			if n := len(env.fake.Requests()); n != 0 {
				t.Fatalf("the fake received %d requests", n)
			}
		})
	}

	for _, tt := range []struct{ name, echo string }{
		{"the token", secret},
		{"the user part", user},
		{"the encoded pair", encoded},
	} {
		t.Run("answer echoing "+tt.name, func(t *testing.T) {
			env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(map[string]any{"accountId": "5f0c", "displayName": "x " + tt.echo})
				return true
			})
			defer env.fake.SetHandler(nil)
			res, err := env.runWith(context.Background(), "jira", "get_viewer", "{}", cred)
			if err == nil || err.Code != api.CodeCredentialEcho {
				t.Fatalf("got %v / %v, want %s", res, err, api.CodeCredentialEcho)
			}
			env.assertNoLeak(t, res, err, secret, user, encoded)
		})
		t.Run("error echoing "+tt.name, func(t *testing.T) {
			env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_ = json.NewEncoder(w).Encode(map[string]any{"errorMessages": []string{"refused " + tt.echo + " today"}, "errors": map[string]string{}})
				return true
			})
			defer env.fake.SetHandler(nil)
			res, err := env.runWith(context.Background(), "jira", "get_viewer", "{}", cred)
			if err == nil || err.Code != api.CodeUpstreamError {
				t.Fatalf("got %v / %v, want %s", res, err, api.CodeUpstreamError)
			}
			if !strings.Contains(err.Message, "refused") {
				t.Fatalf("message %q lost the provider's words", err.Message)
			}
			env.assertNoLeak(t, res, err, secret, user, encoded)
		})
	}
	_ = fakeapi.Token
}
