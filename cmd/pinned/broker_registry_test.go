package main

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/elevenmessenger/pinned/broker"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/registry/snapshot"
)

// TestRunBrokerRegistrySync runs `pinned broker --registry-url
// --registry-pubkey --registry-ca` against a local HTTPS publisher: GET
// /registry serves the synced snapshot, and the flags fail closed.
func TestRunBrokerRegistrySync(t *testing.T) {
	dir := t.TempDir()
	pubText, privText, err := snapshot.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pubFile := filepath.Join(dir, "release.pub")
	if err := os.WriteFile(pubFile, pubText, 0o644); err != nil {
		t.Fatal(err)
	}
	priv, _ := snapshot.ParsePrivateKey(privText)
	ids := registry.Default().IDs()[:2]
	files := fstest.MapFS{}
	for _, id := range ids {
		files[id+".json"] = &fstest.MapFile{Data: registry.Default().Raw(id)}
	}
	snap, err := snapshot.Build(files, 5)
	if err != nil {
		t.Fatal(err)
	}
	archive := snap.Marshal()
	sig, _ := snapshot.Sign(priv, archive)
	pubSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/snapshot.json":
			_, _ = w.Write(archive)
		case "/snapshot.json.minisig":
			_, _ = w.Write(sig)
		default:
			http.NotFound(w, r)
		}
	}))
	defer pubSrv.Close()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: pubSrv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PINNED_BROKER_STATE_KEY=" + broker.GenerateStateKey()}

	bad := []struct {
		name string
		args []string
		want string
	}{
		{name: "a URL without a key", args: []string{"--registry-url", pubSrv.URL + "/snapshot.json"}, want: "--registry-url needs --registry-pubkey"},
		{name: "a key without a URL", args: []string{"--registry-pubkey", pubFile}, want: "need --registry-url"},
		{name: "plain http", args: []string{"--registry-url", "http://127.0.0.1:1/snapshot.json", "--registry-pubkey", pubFile}, want: "want an https URL"},
		{name: "the development key", args: []string{"--registry-url", pubSrv.URL + "/snapshot.json", "--registry-pubkey", filepath.Join("..", "..", "registry", "snapshot.pub")}, want: "development key"},
		{name: "not a key", args: []string{"--registry-url", pubSrv.URL + "/snapshot.json", "--registry-pubkey", caFile}, want: "--registry-pubkey"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr testutil.SyncBuffer
			code := runBrokerContext(context.Background(), append([]string{"--listen", "127.0.0.1:0"}, tt.args...), brokerIO{environ: env, stdout: &stdout, stderr: &stderr})
			if code != 2 || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), tt.want)
			}
		})
	}

	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	var stdout, stderr testutil.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runBrokerContext(ctx, []string{"--listen", "127.0.0.1:0", "--registry-url", pubSrv.URL + "/snapshot.json",
			"--registry-pubkey", pubFile, "--registry-ca", caFile, "--registry-interval", "1h"},
			brokerIO{environ: env, stdout: &stdout, stderr: &stderr, ready: func(a string) { ready <- a }})
	}()
	var addr string
	select {
	case addr = <-ready:
	case code := <-done:
		t.Fatalf("exited %d: %s", code, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("not ready")
	}
	deadline := time.Now().Add(15 * time.Second)
	var digest string
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/registry")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var doc struct {
			Digest string `json:"digest"`
		}
		_ = json.Unmarshal(body, &doc)
		if digest = doc.Digest; digest == snap.Digest {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if digest != snap.Digest {
		t.Fatalf("GET /registry serves %s, want the synced %s\n%s", digest, snap.Digest, stderr.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if log := stderr.String(); !strings.Contains(log, `"message":"registry sync"`) || !strings.Contains(log, `"outcome":"ok"`) {
		t.Errorf("the log does not record the sync:\n%s", log)
	}
}
