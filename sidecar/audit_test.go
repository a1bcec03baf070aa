package sidecar

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/elevenmessenger/pinned/internal/audit"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/demo/fakemodel"
	"github.com/elevenmessenger/pinned/sidecar/api"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

func auditKey() ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, ed25519.SeedSize))
}

// openAudit opens replica's chain under dir, closed at the test's end.
func openAudit(t testing.TB, dir, replica string) *audit.Log {
	t.Helper()
	l, err := audit.Open(dir, audit.Options{Replica: replica, Key: auditKey(), SealEvery: 50})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// auditRecords reads every op record of replica's chain.
func auditRecords(t testing.TB, dir, replica string) []*audit.Record {
	t.Helper()
	files, err := audit.Files(filepath.Join(dir, replica))
	if err != nil {
		t.Fatal(err)
	}
	var out []*audit.Record
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, ln := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			r, err := audit.DecodeRecord(ln)
			if err != nil {
				t.Fatalf("%s: %v", ln, err)
			}
			if r.Kind == audit.KindOp {
				out = append(out, r)
			}
		}
	}
	return out
}

type receiptBody struct {
	Receipt *api.Receipt `json:"receipt"`
}

// TestAuditRecordsOpsAndRefusals: every op and every refusal of one gets
// a record with its fields and a receipt in the answer; the chain
// verifies whole; no secret is in it.
func TestAuditRecordsOpsAndRefusals(t *testing.T) {
	dir := t.TempDir()
	log := openAudit(t, dir, "r1")
	env := newTestEnv(t, func(c *Config) { c.Audit = log })

	const listArgs = `{"owner":"pinned-tester","repo":"notes","per_page":3}`
	read := env.seal(t, grant.Grant{Access: grant.AccessRead})
	type want struct {
		op, code string
		status   int
	}
	var wants []want
	var receipts []*api.Receipt
	check := func(r response, w want) {
		t.Helper()
		var rb receiptBody
		if err := json.Unmarshal(r.body, &rb); err != nil || rb.Receipt == nil {
			t.Fatalf("%s: no receipt in %s", w.op, r.body)
		}
		if r.status != w.status || (w.code != "" && r.err.Error.Code != w.code) {
			t.Fatalf("%s: %d %s", w.op, r.status, r.body)
		}
		wants, receipts = append(wants, w), append(receipts, rb.Receipt)
	}
	check(env.op(t, "github", "list_issues", listArgs, read), want{"list_issues", "", 200})
	check(env.op(t, "github", "list_issues", listArgs, read), want{"list_issues", string(CodeGrantReplayed), 409})
	check(env.op(t, "github", "create_issue", createArgs, env.seal(t, grant.Grant{Access: grant.AccessRead})), want{"create_issue", string(CodeAccessDenied), 403})
	check(env.op(t, "stripe", "list_customers", `{}`, env.seal(t, grant.Grant{Access: grant.AccessRead})), want{"list_customers", string(CodeServiceMismatch), 403})
	check(env.op(t, "github", "list_issues", `{"owner":"pinned-tester","repo":"notes","per_page":"many"}`, env.seal(t, grant.Grant{Access: grant.AccessRead})), want{"list_issues", string(CodeBadArgs), 422})
	hash, _ := grant.ArgsSHA256([]byte(createArgs))
	check(env.op(t, "github", "create_issue", `{"owner":"pinned-tester","repo":"notes","title":"other"}`,
		env.seal(t, grant.Grant{Access: grant.AccessWrite, Op: "create_issue", ArgsSHA256: hash})), want{"create_issue", string(CodeGrantMismatch), 403})
	check(env.op(t, "github", "create_issue", createArgs, env.seal(t, grant.Grant{Access: grant.AccessWrite})), want{"create_issue", "", 200})

	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	recs := auditRecords(t, dir, "r1")
	if len(recs) != len(wants) {
		t.Fatalf("%d records for %d ops", len(recs), len(wants))
	}
	for i, r := range recs {
		w, rc := wants[i], receipts[i]
		if r.Op != w.op || r.Code != w.code || r.Source != "ops" || r.Bot != env.srv.bot || len(r.Bot) != 16 {
			t.Errorf("record %d: %+v, want %+v", i, r, w)
		}
		if rc.Replica != "r1" || rc.Seq != r.Seq {
			t.Errorf("record %d: receipt %+v, record seq %d", i, rc, r.Seq)
		}
		if r.Code != string(CodeServiceMismatch) && len(r.Grant) != 16 {
			t.Errorf("record %d: grant id %q", i, r.Grant)
		}
	}
	// The success: target as sent, status, bytes, args digest.
	first := recs[0]
	if first.Target != "/repos/pinned-tester/notes/issues?per_page=3&state=open" || first.Status != 200 || first.Bytes == 0 {
		t.Errorf("record of the read: %+v", first)
	}
	if sum, _ := grant.ArgsSHA256([]byte(listArgs)); first.ArgsSHA256 != sum {
		t.Errorf("args digest %q, want %q", first.ArgsSHA256, sum)
	}
	// Refusals before the sandbox sent nothing, and say so.
	for _, r := range recs[1:4] {
		if r.Target != "" || r.Status != 0 {
			t.Errorf("refusal record %+v has a target or status", r)
		}
	}
	if last := recs[len(recs)-1]; last.Status != 201 || last.Target != "/repos/pinned-tester/notes/issues" {
		t.Errorf("record of the write: %+v", last)
	}
	// A receipt's digest is its record's line.
	files, _ := audit.Files(filepath.Join(dir, "r1"))
	all, _ := os.ReadFile(files[0])
	for i, rc := range receipts {
		found := false
		for _, ln := range bytes.Split(all, []byte("\n")) {
			if len(ln) > 0 && audit.Digest(ln) == rc.Digest {
				found = true
			}
		}
		if !found {
			t.Errorf("receipt %d's digest is no record's", i)
		}
	}
	reps, err := audit.Verify(dir, auditKey().Public().(ed25519.PublicKey))
	if err != nil || len(reps) != 1 || !reps[0].Whole() {
		t.Fatalf("verify: %v %+v", err, reps)
	}
	// The secret scan: no credential, no sealed grant, no body in the log.
	assertNoSecrets(t, string(all), fakeapi.Token("github"), fakeapi.Token("stripe"), read, "Opened through the sandbox.")
}

// failingAuditor is an Auditor whose Ready or Append fails.
type failingAuditor struct {
	ready, append error
	mu            sync.Mutex
	appended      int
}

func (f *failingAuditor) Ready() error { return f.ready }
func (f *failingAuditor) Append(context.Context, api.AuditEvent) (api.Receipt, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.append != nil {
		return api.Receipt{}, f.append
	}
	f.appended++
	return api.Receipt{Replica: "x", Seq: uint64(f.appended), Digest: strings.Repeat("0", 64)}, nil
}

// TestAuditFailsClosed: an audit trail that cannot be written refuses ops
// before anything is sent, and a result whose record cannot be written is
// withheld (a write says applied).
func TestAuditFailsClosed(t *testing.T) {
	tests := []struct {
		name    string
		aud     *failingAuditor
		op      string
		args    string
		access  string
		sent    int
		applied string
	}{
		{name: "not ready: nothing sent", aud: &failingAuditor{ready: errors.New("disk full")}, op: "list_issues", args: `{"owner":"pinned-tester","repo":"notes"}`, access: grant.AccessRead, sent: 0},
		{name: "append fails after a read", aud: &failingAuditor{append: errors.New("disk full")}, op: "list_issues", args: `{"owner":"pinned-tester","repo":"notes"}`, access: grant.AccessRead, sent: 1},
		{name: "append fails after a write", aud: &failingAuditor{append: errors.New("disk full")}, op: "create_issue", args: createArgs, access: grant.AccessWrite, sent: 1, applied: "yes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, func(c *Config) { c.Audit = tt.aud })
			r := env.op(t, "github", tt.op, tt.args, env.seal(t, grant.Grant{Access: tt.access}))
			if r.status != http.StatusServiceUnavailable || r.err.Error.Code != string(CodeUnavailable) || r.err.Error.Applied != tt.applied {
				t.Fatalf("answer %d %s", r.status, r.body)
			}
			if bytes.Contains(r.body, []byte(`"data"`)) {
				t.Fatalf("the result went back: %s", r.body)
			}
			if got := len(env.fake.Requests()); got != tt.sent {
				t.Fatalf("the fake got %d requests, want %d", got, tt.sent)
			}
		})
	}
}

// TestAuditTwoReplicasThousandOps: two replicas, each with its own chain
// in one directory, run 1,000 ops between them (a tenth of them
// refused); each chain verifies whole and holds its replica's records.
func TestAuditTwoReplicasThousandOps(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 ops")
	}
	dir := t.TempDir()
	logs := []*audit.Log{openAudit(t, dir, "replica-a"), openAudit(t, dir, "replica-b")}
	var envs []*testEnv
	key, _ := grant.GenerateKey(nil)
	for _, l := range logs {
		envs = append(envs, newTestEnv(t, func(c *Config) { c.Audit = l; c.Key = key }))
	}
	const n = 1000
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				env := envs[i%2]
				g := grant.Grant{Access: grant.AccessRead}
				op, want := "get_viewer", http.StatusOK
				if i%10 == 0 {
					op, want = "create_issue", http.StatusForbidden // access_denied
				}
				r := env.op(t, "github", op, `{}`, env.seal(t, g))
				if r.status != want {
					errs <- fmt.Errorf("op %d: %d %s", i, r.status, r.body)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	reps, err := audit.Verify(dir, auditKey().Public().(ed25519.PublicKey))
	if err != nil || len(reps) != 2 {
		t.Fatalf("verify: %v %d", err, len(reps))
	}
	total := 0
	for _, rep := range reps {
		if !rep.Whole() {
			t.Fatalf("%s: %v", rep.Replica, rep.Problem)
		}
		recs := auditRecords(t, dir, rep.Replica)
		total += len(recs)
		if len(recs) != n/2 {
			t.Fatalf("%s holds %d op records, want %d", rep.Replica, len(recs), n/2)
		}
	}
	if total != n {
		t.Fatalf("%d records for %d ops", total, n)
	}
}

// TestAuditRecordsResearchSteps: a research session's tool calls are
// recorded (source research), its cross-service flow refusals too, each
// under the session's grant, and the chain verifies whole.
func TestAuditRecordsResearchSteps(t *testing.T) {
	dir := t.TempDir()
	log := openAudit(t, dir, "r1")
	re := newResearchEnv(t, fakemodel.Exfiltrate(), func(c *Config) { c.Audit = log })
	r, ans := re.research(t, ResearchRequest{Question: "Summarize my accounts", Grants: re.exfilGrants(t), Limits: &api.Limits{ToolCalls: 20}})
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	recs := auditRecords(t, dir, "r1")
	if len(recs) != len(ans.Steps) {
		t.Fatalf("%d records for %d steps", len(recs), len(ans.Steps))
	}
	flows := 0
	for i, rec := range recs {
		if rec.Source != "research" || len(rec.Grant) != 16 || rec.Service != ans.Steps[i].Service || rec.Op != ans.Steps[i].Op {
			t.Errorf("record %d %+v for step %+v", i, rec, ans.Steps[i])
		}
		if rec.Code == api.CodeCrossServiceFlow {
			flows++
			if rec.Target != "" || rec.Status != 0 {
				t.Errorf("a refused flow has a target or status: %+v", rec)
			}
		}
	}
	if flows != fakemodel.ExfiltrateMoves {
		t.Fatalf("%d cross_service_flow records, want %d", flows, fakemodel.ExfiltrateMoves)
	}
	reps, err := audit.Verify(dir, auditKey().Public().(ed25519.PublicKey))
	if err != nil || !reps[0].Whole() {
		t.Fatalf("verify: %v %+v", err, reps)
	}
}
