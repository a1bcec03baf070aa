package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/secret"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// TestAuditVerifyTwoSidecarReplicas runs two real `pinned sidecar`s of
// one bot, each with its own state and its own chain in one --audit-log
// directory, sends them 1,000 ops, stops them, and runs `pinned audit
// verify` on the directory: both chains are whole, with a record per op.
func TestAuditVerifyTwoSidecarReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 ops through two sidecars")
	}
	clearSidecarEnv(t)
	t.Setenv("PINNED_SIDECAR_CACHE_DIR", filepath.Join(os.TempDir(), "pinned-test-wazero-cache"))
	dir := t.TempDir()
	fake := testutil.Fake(t)
	ca := testutil.CAFile(t, fake)
	keyFile, key := writeKey(t, dir)
	auditKey := filepath.Join(dir, "audit.key")
	var out, errb bytes.Buffer
	if code := dispatch([]string{"audit", "keygen", "--out", auditKey}, &out, &errb); code != 0 {
		t.Fatalf("audit keygen: %s", &errb)
	}
	auditDir := filepath.Join(dir, "audit")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type replica struct {
		base   string
		done   chan int
		stderr *testutil.SyncBuffer
	}
	var reps []*replica
	re := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	for _, name := range []string{"a", "b"} {
		r := &replica{done: make(chan int, 1), stderr: &testutil.SyncBuffer{}}
		var stdout testutil.SyncBuffer
		args := []string{"--key-file", keyFile, "--listen", "127.0.0.1:0", "--connect-to", fake.Addr(), "--cacert", ca,
			"--state-dir", filepath.Join(dir, "state-"+name), "--audit-log", auditDir, "--audit-key-file", auditKey, "--audit-replica", name,
			"--audit-seal-every", "100"}
		go func() { r.done <- runSidecarContext(ctx, args, &stdout, r.stderr) }()
		for deadline := time.Now().Add(2 * time.Minute); r.base == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if m := re.FindStringSubmatch(stdout.String() + r.stderr.String()); m != nil { // the address is on stderr
				r.base = m[1]
			}
			select {
			case code := <-r.done:
				t.Fatalf("sidecar %s exited %d: %s", name, code, r.stderr)
			default:
			}
		}
		if r.base == "" {
			t.Fatalf("sidecar %s never listened: %s", name, r.stderr)
		}
		reps = append(reps, r)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	const n = 1000
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				g := grant.Grant{Service: "github", Access: grant.AccessRead, Kind: grant.KindPAT,
					Secret: secret.Secret(fakeapi.Token("github")), ExpiresAt: time.Now().Add(2 * time.Minute)}
				sealed, err := grant.Seal(&g, key.Public(), nil)
				if err != nil {
					errs <- err
					return
				}
				body := `{"service":"github","op":"get_viewer","grant":"` + sealed + `"}`
				resp, err := client.Post(reps[i%2].base+"/v1/ops", "application/json", strings.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"receipt":{"replica":`)) {
					errs <- fmt.Errorf("op %d: %d %s", i, resp.StatusCode, b)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	cancel()
	for i, r := range reps {
		if code := <-r.done; code != 0 {
			t.Fatalf("replica %d exited %d: %s", i, code, r.stderr)
		}
	}
	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"audit", "verify", auditDir, "--pubkey", auditKey + ".pub"}, &stdout, &stderr)
	t.Logf("pinned audit verify %s:\n%s", auditDir, &stdout)
	if code != 0 || !strings.Contains(stdout.String(), "a: whole: ") || !strings.Contains(stdout.String(), "b: whole: ") {
		t.Fatalf("verify: exit %d\n%s%s", code, &stdout, &stderr)
	}
	// Each chain holds its 500 op records.
	for _, name := range []string{"a", "b"} {
		b, err := os.ReadFile(filepath.Join(auditDir, name, "audit-000001.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Count(b, []byte(`"kind":"op"`)); got != n/2 {
			t.Fatalf("replica %s: %d op records, want %d", name, got, n/2)
		}
	}
}
