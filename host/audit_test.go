package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/secret"
)

// egressEvents returns the audit events in the captured log.
func egressEvents(t *testing.T, logs string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if line == "" {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if ev["event"] == "egress" {
			out = append(out, ev)
		}
	}
	return out
}

// TestAuditTrail: one event per egress attempt, sent or denied, with the
// documented fields and the request target as sent (path and query);
// never the credential or a body value.
func TestAuditTrail(t *testing.T) {
	env := newEnv(t, nil)
	const marker = "AUDIT-ARG-VALUE-7d1e"
	if _, err := env.run("github", "create_issue", `{"owner":"pinned-tester","repo":"notes","title":"`+marker+`","body":"`+marker+`"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := env.run("github", "get_repo", `{"owner":"pinned-tester","repo":"no-such-repo-`+strings.ToLower(marker)+`"}`); err == nil || err.Code != api.CodeUpstreamError {
		t.Fatalf("want a 404, got %v", err)
	}
	if _, err := env.run("github", "get_repo", `{"owner":"pinned-tester","repo":".."}`); err == nil || err.Code != api.CodeBadArgs {
		t.Fatalf("want bad_args, got %v", err) // refused in the guest: no egress attempt, no event
	}
	evs := egressEvents(t, env.logs.String())
	if len(evs) != 2 {
		t.Fatalf("%d egress events, want 2: %v", len(evs), evs)
	}
	want := []map[string]any{
		{"service": "github", "op": "create_issue", "method": "POST", "host": "api.github.com", "path": "/repos/{owner}/{repo}/issues",
			"target": "/repos/pinned-tester/notes/issues", "status": 201.0, "outcome": "ok"},
		{"service": "github", "op": "get_repo", "method": "GET", "host": "api.github.com", "path": "/repos/{owner}/{repo}",
			"target": "/repos/pinned-tester/no-such-repo-" + strings.ToLower(marker), "status": 404.0, "outcome": "upstream_error"},
	}
	for i, w := range want {
		for k, v := range w {
			if evs[i][k] != v {
				t.Errorf("event %d: %s = %v, want %v", i, k, evs[i][k], v)
			}
		}
		for _, k := range []string{"bytes_raw", "bytes_projected", "duration_ms"} {
			if _, ok := evs[i][k]; !ok {
				t.Errorf("event %d lacks %s", i, k)
			}
		}
	}
	if evs[0]["bytes_raw"].(float64) < 1000 || evs[0]["bytes_projected"].(float64) < 50 {
		t.Errorf("byte counts look wrong: %v", evs[0])
	}
	logs := env.logs.String() + env.metricsText(t)
	for _, s := range []string{marker, fakeapi.Token("github")} { // the title and body, the credential
		if strings.Contains(logs, s) {
			t.Errorf("logs or metrics contain %q", s)
		}
	}
}

// TestAuditTargetRedactsSecretArgs: the audit target is the request as
// sent with the value of every arg the manifest marks secret replaced by
// "[redacted]" (a registry where list_issues' repo and state are secret).
func TestAuditTargetRedactsSecretArgs(t *testing.T) {
	var m map[string]any
	if err := json.Unmarshal(registry.Default().Raw("github"), &m); err != nil {
		t.Fatal(err)
	}
	args := m["ops"].(map[string]any)["list_issues"].(map[string]any)["args"].(map[string]any)
	args["repo"].(map[string]any)["secret"] = true
	args["state"].(map[string]any)["secret"] = true
	raw, _ := json.Marshal(m)
	reg, err := registry.Load(fstest.MapFS{"github.json": {Data: raw}})
	if err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, func(c *Config) { c.Registry = reg })
	const secretRepo, secretState = "hidden-repo-4c1b", "closed"
	res, herr := env.run("github", "list_issues", `{"owner":"pinned-tester","repo":"`+secretRepo+`","state":"`+secretState+`","per_page":7}`)
	if herr != nil && herr.Code != api.CodeUpstreamError {
		t.Fatal(herr)
	}
	evs := egressEvents(t, env.logs.String())
	if len(evs) != 1 {
		t.Fatalf("%d events", len(evs))
	}
	const want = "/repos/pinned-tester/%5Bredacted%5D/issues?per_page=7&state=%5Bredacted%5D"
	if got := evs[0]["target"]; got != want {
		t.Fatalf("target %v, want %v", got, want)
	}
	// The result (or error) carries the same redacted target, for the
	// sidecar's audit records.
	got := ""
	if res != nil {
		got = res.Target
	} else {
		got = herr.Target
	}
	if got != want {
		t.Fatalf("Result/Error.Target %q, want %q", got, want)
	}
	if reqs := env.fake.Requests(); len(reqs) != 1 || !strings.Contains(reqs[0].Path, secretRepo) {
		t.Fatalf("the request sent was not the caller's: %+v", reqs)
	}
	if strings.Contains(env.logs.String(), secretRepo) || strings.Contains(env.logs.String(), "state=closed") {
		t.Fatal("a secret arg's value reached the log")
	}
}

// TestAuditDenied: a denied request is an egress attempt too: one event
// with its deny reason, and the denial counter by reason.
func TestAuditDenied(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.Guest = hostileGuest(t, "egress") })
	env.run("github", "list_issues", `{"attack":"set_authorization"}`)
	evs := egressEvents(t, env.logs.String())
	if len(evs) != 1 || evs[0]["deny"] != string(api.DenyHeaderForbidden) || evs[0]["outcome"] != string(api.CodeEgressDenied) {
		t.Fatalf("events: %v", evs)
	}
	m := env.metricsText(t)
	if !strings.Contains(m, `pinned_egress_denied_total{reason="header_forbidden",service="github"} 1`) {
		t.Fatalf("metrics:\n%s", m)
	}
	if strings.Contains(env.logs.String(), "stolen") {
		t.Fatal("the guest's forged header value reached the log")
	}
}

// TestAuditUsesContextLogger: a logger carried by the context (the
// sidecar's, with the request id) receives the op's events.
func TestAuditUsesContextLogger(t *testing.T) {
	env := newEnv(t, nil)
	var buf testutil.SyncBuffer
	l := zerolog.New(&buf).With().Str("request_id", "req-42").Logger()
	ctx := l.WithContext(context.Background())
	if _, err := env.runWith(ctx, "github", "get_viewer", `{}`, Credential{Secret: secret.Secret(fakeapi.Token("github"))}); err != nil {
		t.Fatal(err)
	}
	evs := egressEvents(t, buf.String())
	if len(evs) != 1 || evs[0]["request_id"] != "req-42" {
		t.Fatalf("events: %v", evs)
	}
	if len(egressEvents(t, env.logs.String())) != 0 {
		t.Fatal("the event also went to the engine's logger")
	}
}
