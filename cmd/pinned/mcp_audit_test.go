package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elevenmessenger/pinned/internal/audit"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
)

// TestMCPAuditTrail: pinned mcp --audit-log writes one record per tool
// call that reached the op path, success or refusal, with source "run";
// pinned audit verify says the chain is whole; no token is in the log.
func TestMCPAuditTrail(t *testing.T) {
	p := newPinnedEnv(t)
	tok := fakeapi.Token("github")
	if code, out, errs := p.run(t, tok+"\n", append([]string{"connect", "github"}, p.fakeFlags()...)...); code != 0 {
		t.Fatalf("connect: %d %s %s", code, out, errs)
	}
	state := filepath.Join(t.TempDir(), "state")
	auditDir := filepath.Join(t.TempDir(), "audit")
	stderr := &testutil.SyncBuffer{}
	cmd := exec.Command(p.bin, append([]string{"mcp", "--state-dir", state, "--audit-log", auditDir, "--audit-replica", "mcp1"}, p.fakeFlags()...)...)
	cmd.Env, cmd.Stderr = p.env, stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "audit-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr %s", err, stderr.String())
	}
	const hostile = "ghp_HOSTILE0tokenLOOKING0value0in0an0arg"
	calls := []struct {
		args    map[string]any
		isError bool
	}{
		{map[string]any{"per_page": 2}, false},
		{map[string]any{"per_page": hostile}, true}, // bad_args: refused in the sandbox
	}
	for _, c := range calls {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "github_list_repos", Arguments: c.args})
		if err != nil || res.IsError != c.isError {
			t.Fatalf("call %v: %v %+v", c.args, err, res)
		}
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	_ = cmd.Wait()

	files, err := audit.Files(filepath.Join(auditDir, "mcp1"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no audit files: %v\nstderr %s", err, stderr.String())
	}
	var ops []*audit.Record
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
		for _, ln := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			r, err := audit.DecodeRecord(ln)
			if err != nil {
				t.Fatal(err)
			}
			if r.Kind == audit.KindOp {
				ops = append(ops, r)
			}
		}
	}
	if len(ops) != 2 || ops[0].Source != "run" || ops[0].Op != "list_repos" || ops[0].Code != "" || ops[0].Status != 200 ||
		ops[1].Code != "bad_args" || ops[1].Source != "run" {
		for _, r := range ops {
			t.Logf("%+v", *r)
		}
		t.Fatalf("%d op records, want a success and a bad_args refusal", len(ops))
	}
	for _, s := range []string{tok, hostile} {
		if bytes.Contains(all, []byte(s)) {
			t.Errorf("the audit log holds %q", s)
		}
	}
	var stdout, verr bytes.Buffer
	code := dispatch([]string{"audit", "verify", auditDir, "--pubkey", filepath.Join(state, "audit-key.pem.pub")}, &stdout, &verr)
	if code != 0 || !strings.Contains(stdout.String(), "mcp1: whole: ") {
		t.Fatalf("verify: exit %d\n%s%s", code, stdout.String(), verr.String())
	}
}
