package sidecar

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

const createArgs = `{"owner":"pinned-tester","repo":"notes","title":"Hello from the sidecar","body":"Opened through the sandbox."}`

// TestServiceOpEndToEnd: keygen, seal a write grant, run GitHub
// create_issue through the sidecar and the sandbox against the fake, and
// check the projected result; then every refusal, each with the fake
// receiving nothing.
func TestServiceOpEndToEnd(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "bot.key")
	k, err := grant.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := grant.WriteKeyFile(keyFile, k, false); err != nil {
		t.Fatal(err)
	}
	loaded, err := grant.LoadKeyFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	env := newTestEnv(t, func(c *Config) { c.Key = loaded })
	if env.srv.PublicKey() != k.Public() {
		t.Fatal("the server does not hold the generated key")
	}

	// The positive case: a write grant runs create_issue.
	writeGrant := env.seal(t, grant.Grant{Access: grant.AccessWrite})
	r := env.op(t, "github", "create_issue", createArgs, writeGrant)
	if r.status != http.StatusOK {
		t.Fatalf("create_issue: %d %s", r.status, r.body)
	}
	var out struct {
		Status int `json:"status"`
		Data   struct {
			Number    int    `json:"number"`
			Title     string `json:"title"`
			State     string `json:"state"`
			HTMLURL   string `json:"html_url"`
			CreatedAt string `json:"created_at"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	if out.Status != 201 || out.Data.Number < 1 || out.Data.Title != "Hello from the sidecar" || out.Data.State != "open" ||
		!strings.HasPrefix(out.Data.HTMLURL, "https://github.com/pinned-tester/notes/issues/") || out.Data.CreatedAt == "" {
		t.Fatalf("create_issue result %s", r.body)
	}
	// Only the picked fields came back.
	var data map[string]any
	_ = json.Unmarshal(mustField(t, r.body, "data"), &data)
	m, _ := registry.Default().Service("github")
	op, _ := m.Op("create_issue")
	picked := map[string]bool{}
	for _, f := range op.Pick.Fields {
		top, _, _ := strings.Cut(f, ".")
		picked[top] = true
	}
	for k := range data {
		if !picked[k] {
			t.Errorf("projected data has %q, which the pick does not name: %v", k, data)
		}
	}
	if len(data) < 5 {
		t.Fatalf("projected data has %d fields: %v", len(data), data)
	}
	reqs := env.fake.Requests()
	if len(reqs) != 1 || reqs[0].Method != "POST" || reqs[0].Host != "api.github.com" || reqs[0].Path != "/repos/pinned-tester/notes/issues" ||
		reqs[0].Header.Get("Authorization") != "Bearer "+fakeapi.Token("github") {
		t.Fatalf("the fake received %+v", reqs)
	}
	var sent map[string]string
	if err := json.Unmarshal(reqs[0].Body, &sent); err != nil || sent["title"] != "Hello from the sidecar" || sent["body"] != "Opened through the sandbox." {
		t.Fatalf("request body %s", reqs[0].Body)
	}

	// A grant bound to exactly these args runs them.
	hash, err := grant.ArgsSHA256([]byte(createArgs))
	if err != nil {
		t.Fatal(err)
	}
	env.fake.Reset()
	bound := env.seal(t, grant.Grant{Access: grant.AccessWrite, Op: "create_issue", ArgsSHA256: hash})
	reordered := `{"title":"Hello from the sidecar","body":"Opened through the sandbox.","repo":"notes","owner":"pinned-tester"}`
	if r := env.op(t, "github", "create_issue", reordered, bound); r.status != http.StatusOK || len(env.fake.Requests()) != 1 {
		t.Fatalf("bound grant with the same args (reordered): %d %s", r.status, r.body)
	}

	other, err := grant.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		op     string
		args   string
		grant  func() string
		status int
		code   string
	}{
		{name: "read grant for a write op", op: "create_issue", args: createArgs, status: 403, code: "access_denied",
			grant: func() string { return env.seal(t, grant.Grant{Access: grant.AccessRead}) }},
		{name: "legacy grant for a write op", op: "create_issue", args: createArgs, status: 403, code: "access_denied",
			grant: func() string { return env.seal(t, grant.Grant{Access: grant.AccessLegacy}) }},
		{name: "expired grant", op: "create_issue", args: createArgs, status: 403, code: "grant_expired",
			grant: func() string {
				return env.seal(t, grant.Grant{Access: grant.AccessWrite, ExpiresAt: time.Now().Add(-grant.ClockSkew - time.Minute)})
			}},
		{name: "replayed grant", op: "create_issue", args: createArgs, status: 409, code: "grant_replayed",
			grant: func() string { return writeGrant }},
		{name: "replayed bound grant", op: "create_issue", args: createArgs, status: 409, code: "grant_replayed",
			grant: func() string { return bound }},
		{name: "grant for another service", op: "create_issue", args: createArgs, status: 403, code: "service_mismatch",
			grant: func() string { return env.seal(t, grant.Grant{Service: "linear", Access: grant.AccessWrite}) }},
		{name: "grant sealed to another bot", op: "create_issue", args: createArgs, status: 403, code: "grant_invalid",
			grant: func() string { return sealTo(t, grant.Grant{Access: grant.AccessWrite}, other.Public()) }},
		{name: "grant bound to another op", op: "create_issue", args: createArgs, status: 403, code: "grant_mismatch",
			grant: func() string { return env.seal(t, grant.Grant{Access: grant.AccessWrite, Op: "get_repo"}) }},
		{name: "grant bound to other args", op: "create_issue", args: strings.Replace(createArgs, "Hello", "Goodbye", 1), status: 403, code: "grant_mismatch",
			grant: func() string {
				return env.seal(t, grant.Grant{Access: grant.AccessWrite, Op: "create_issue", ArgsSHA256: hash})
			}},
		{name: "bound grant with args that are not an object", op: "create_issue", args: `[1]`, status: 403, code: "grant_mismatch",
			grant: func() string {
				return env.seal(t, grant.Grant{Access: grant.AccessWrite, Op: "create_issue", ArgsSHA256: hash})
			}},
		{name: "garbage grant", op: "create_issue", args: createArgs, status: 403, code: "grant_invalid",
			grant: func() string { return "this is not a grant" }},
		{name: "grant expiring too far ahead", op: "create_issue", args: createArgs, status: 403, code: "grant_invalid",
			grant: func() string {
				return env.seal(t, grant.Grant{Access: grant.AccessWrite, ExpiresAt: time.Now().Add(48 * time.Hour)})
			}},
		{name: "unknown op", op: "delete_repo", args: `{}`, status: 400, code: "unknown_op",
			grant: func() string { return env.seal(t, grant.Grant{Access: grant.AccessWrite}) }},
		{name: "bad args", op: "create_issue", args: `{"owner":"pinned-tester","repo":"notes"}`, status: 422, code: "bad_args",
			grant: func() string { return env.seal(t, grant.Grant{Access: grant.AccessWrite}) }},
		{name: "secret a header cannot carry", op: "get_viewer", args: `{}`, status: 403, code: "credential_invalid",
			grant: func() string { return env.seal(t, grant.Grant{Secret: "two words"}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.Reset()
			r := env.op(t, "github", tt.op, tt.args, tt.grant())
			if r.status != tt.status || r.err.Error.Code != tt.code {
				t.Fatalf("got %d %s, want %d %s", r.status, r.body, tt.status, tt.code)
			}
			if r.err.Error.Message == "" {
				t.Fatal("no message")
			}
			if n := len(env.fake.Requests()); n != 0 {
				t.Fatalf("the fake received %d requests; a refusal must come before any upstream call", n)
			}
		})
	}

	// The unknown service is refused before the grant is looked at.
	env.fake.Reset()
	if r := env.op(t, "githb", "get_viewer", `{}`, "x"); r.status != 400 || r.err.Error.Code != "unknown_service" || len(env.fake.Requests()) != 0 {
		t.Fatalf("unknown service: %d %s", r.status, r.body)
	}

	// A grant refused for bad args is not spent: corrected args run.
	env.fake.Reset()
	g := env.seal(t, grant.Grant{Access: grant.AccessWrite})
	if r := env.op(t, "github", "create_issue", `{"owner":"pinned-tester","repo":"notes"}`, g); r.err.Error.Code != "bad_args" || r.err.Error.Arg != "title" {
		t.Fatalf("bad args: %s", r.body)
	}
	if r := env.op(t, "github", "create_issue", createArgs, g); r.status != http.StatusOK || len(env.fake.Requests()) != 1 {
		t.Fatalf("retry after bad_args: %d %s", r.status, r.body)
	}
	if r := env.op(t, "github", "create_issue", createArgs, g); r.err.Error.Code != "grant_replayed" {
		t.Fatalf("third use: %s", r.body)
	}

	// Metrics counted every outcome and the grant denials.
	metrics := env.do(t, http.MethodGet, "/metrics", nil)
	for _, want := range []string{
		`pinned_sidecar_ops_total{op="create_issue",outcome="ok",service="github"} 3`,
		`pinned_sidecar_ops_total{op="create_issue",outcome="access_denied",service="github"} 2`,
		`pinned_sidecar_ops_total{op="unknown",outcome="unknown_op",service="github"} 1`,
		`pinned_sidecar_ops_total{op="unknown",outcome="unknown_service",service="unknown"} 1`,
		`pinned_sidecar_denials_total{reason="grant_replayed",source="grant"} 3`,
		`pinned_sidecar_denials_total{reason="grant_invalid",source="grant"} 3`,
		`pinned_sidecar_op_duration_seconds_count{op="create_issue",service="github"}`,
		`pinned_sidecar_in_flight 0`,
		`pinned_egress_total{op="create_issue",outcome="ok",service="github"}`,
	} {
		if !strings.Contains(string(metrics.body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	assertNoSecrets(t, env.allLogs(), fakeapi.Token("github"), writeGrant, bound, k.Encode())
}

func mustField(t *testing.T, body []byte, name string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return m[name]
}

// assertNoSecrets fails when any secret shows up in the logs, whole or as
// a long enough piece to matter.
func assertNoSecrets(t *testing.T, logs string, secrets ...string) {
	t.Helper()
	if logs == "" {
		t.Fatal("no logs captured")
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		probe := s
		if len(probe) > 24 {
			probe = probe[len(probe)/2-12 : len(probe)/2+12]
		}
		if strings.Contains(logs, probe) {
			t.Fatalf("a secret (%.6s…) is in the logs", s)
		}
	}
}
