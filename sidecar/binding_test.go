package sidecar

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/testing/testenv"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// ownEngineEnv serves a sidecar on an engine of its own built with cfg
// (wired to a fake of its own).
func ownEngineEnv(t *testing.T, mod func(*host.Config)) *testEnv {
	t.Helper()
	logs := &testutil.SyncBuffer{}
	fake, eng, hm, err := testenv.Engine(logs, mod)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	return startEnv(t, fake, eng, hm, logs, true, nil)
}

// TestBoundGrantRetargetedRefused (issue 10): a grant bound to exactly the
// member's create_issue args (args_sha256), run by a guest that renders
// the request honestly and then retargets its path to another repository
// (host/testdata/hostile/egress without a harness line), is refused with
// egress_denied: the host sends only the request the args render, so
// nothing reaches the provider. The grant is spent (docs/API.md, "Grants
// and nonces"): a refusal of the rendered request means the executor is
// not honest, and the grant must not be replayable against it.
func TestBoundGrantRetargetedRefused(t *testing.T) {
	wasm, err := os.ReadFile(filepath.Join("..", "host", "testdata", "hostile", "egress.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	env := ownEngineEnv(t, func(c *host.Config) { c.Guest = wasm })
	const args = `{"owner":"pinned-tester","repo":"notes","title":"Q3 layoffs list","body":"names: ..."}`
	hash, err := grant.ArgsSHA256([]byte(args))
	if err != nil {
		t.Fatal(err)
	}
	bound := env.seal(t, grant.Grant{Access: grant.AccessWrite, Op: "create_issue", ArgsSHA256: hash})
	r := env.op(t, "github", "create_issue", args, bound)
	if r.status != http.StatusBadGateway || r.err.Error.Code != string(CodeEgressDenied) || r.err.Error.Applied != "" {
		t.Fatalf("got %d %s", r.status, r.body)
	}
	if n := len(env.fake.Requests()); n != 0 {
		t.Fatalf("the fake received %d requests", n)
	}
	if !strings.Contains(env.hostLogs.String(), `"deny":"not_bound"`) {
		t.Fatalf("the host's audit event lacks the not_bound denial:\n%s", env.hostLogs.String())
	}
	if strings.Contains(env.allLogs(), "Q3 layoffs list") || strings.Contains(env.allLogs(), fakeapi.Token("github")) {
		t.Fatal("the caller's text or the credential reached the logs")
	}
	// The nonce stays recorded: the same grant cannot be tried again.
	if r := env.op(t, "github", "create_issue", args, bound); r.status != http.StatusConflict || r.err.Error.Code != string(CodeGrantReplayed) {
		t.Fatalf("second use: %d %s", r.status, r.body)
	}
	if n := len(env.fake.Requests()); n != 0 {
		t.Fatalf("the fake received %d requests", n)
	}
}

// TestWriteAppliedInErrorBody: a write whose answer is over the result cap
// after the provider's 201 fails with result_too_large, upstream_status
// 201 and applied "yes" in the error body: the issue was created, and the
// bot must not retry it.
func TestWriteAppliedInErrorBody(t *testing.T) {
	env := ownEngineEnv(t, func(c *host.Config) { c.MaxResultBytes = 16 })
	const args = `{"owner":"pinned-tester","repo":"notes","title":"created once"}`
	r := env.op(t, "github", "create_issue", args, env.seal(t, grant.Grant{Access: grant.AccessWrite}))
	if r.status != http.StatusBadGateway || r.err.Error.Code != string(CodeResultTooLarge) ||
		r.err.Error.UpstreamStatus != http.StatusCreated || r.err.Error.Applied != "yes" {
		t.Fatalf("got %d %s", r.status, r.body)
	}
	if n := len(env.fake.Requests()); n != 1 {
		t.Fatalf("the fake received %d requests", n)
	}
}
