package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/testing/testutil"
)

func TestWebUsage(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "caller.token")
	if err := os.WriteFile(tok, []byte("caller-token-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open.token")
	if err := os.WriteFile(open, []byte("caller-token-0123456789abcdef\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{name: "help", args: []string{"--help"}, code: 0},
		{name: "no bot", args: nil, code: 2, stderr: "--bot NAME=URL is required"},
		{name: "bot without url", args: []string{"--bot", "eleven"}, code: 2, stderr: "want NAME=URL"},
		{name: "bot twice", args: []string{"--bot", "a=http://127.0.0.1:1", "--bot", "a=http://127.0.0.1:2"}, code: 2, stderr: "a is given twice"},
		{name: "bad bot url", args: []string{"--bot", "a=ftp://x"}, code: 2, stderr: "the URL must be http(s)"},
		{name: "token for no bot", args: []string{"--bot", "a=http://127.0.0.1:1", "--bot-token-file", "b=" + tok}, code: 2, stderr: "no --bot of that name"},
		{name: "token file readable by others", args: []string{"--bot", "a=http://127.0.0.1:1", "--bot-token-file", "a=" + open}, code: 2, stderr: "chmod 600"},
		{name: "bad log level", args: []string{"--bot", "a=http://127.0.0.1:1", "--log-level", "loud"}, code: 2, stderr: "--log-level"},
		{name: "stray argument", args: []string{"extra"}, code: 2, stderr: "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb strings.Builder
			code := runWebContext(context.Background(), tt.args, &out, &errb)
			if code != tt.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tt.code, errb.String())
			}
			if tt.code == 0 && !strings.Contains(out.String(), "Usage: pinned web") {
				t.Errorf("help = %q", out.String())
			}
			if tt.stderr != "" && !strings.Contains(errb.String(), tt.stderr) {
				t.Errorf("stderr = %q, want it to contain %q", errb.String(), tt.stderr)
			}
			if tt.code == 2 && !strings.HasPrefix(errb.String(), "pinned web: ") {
				t.Errorf("stderr = %q, want one line starting pinned web:", errb.String())
			}
		})
	}
}

// TestRunWebServes: pinned web serves the catalog and relays to its bot
// with the caller token from the file.
func TestRunWebServes(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "caller.token")
	if err := os.WriteFile(tok, []byte("caller-token-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auth := make(chan string, 1)
	sc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case auth <- r.Header.Get("Authorization"):
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"public_key":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=","registry":"sha256:x"}`)
	}))
	defer sc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	out, errb := &testutil.SyncBuffer{}, &testutil.SyncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- runWebContext(ctx, []string{"--listen", "127.0.0.1:0", "--bot", "eleven=" + sc.URL, "--bot-token-file", "eleven=" + tok}, out, errb)
	}()
	// Like the log, the line with the address is on stderr.
	re := regexp.MustCompile(`the catalog is at (http://127\.0\.0\.1:\d+/)`)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(errb.String()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		cancel()
		t.Fatalf("no URL printed: %q %q", out.String(), errb.String())
	}
	resp, err := http.Get(base + "api/bots")
	if err != nil {
		t.Fatal(err)
	}
	var bots []map[string]string
	_ = json.NewDecoder(resp.Body).Decode(&bots)
	resp.Body.Close()
	if len(bots) != 1 || bots[0]["name"] != "eleven" || bots[0]["public_key"] == "" {
		t.Errorf("bots = %v", bots)
	}
	if got := <-auth; got != "Bearer caller-token-0123456789abcdef" {
		t.Errorf("the sidecar got Authorization %q", got)
	}
	if strings.Contains(errb.String(), "caller-token-0123456789abcdef") {
		t.Error("the log holds the caller token")
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}

// TestDemoWeb: pinned demo --web prints the catalog's URL, which serves
// the catalog and a bot with a public key, and stops when told.
func TestDemoWeb(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", filepath.Join(os.TempDir(), "pinned-test-cmd-xdg-cache"))
	ctx, cancel := context.WithCancel(context.Background())
	out, errb := &testutil.SyncBuffer{}, &testutil.SyncBuffer{}
	done := make(chan int, 1)
	go func() { done <- runDemoWeb(ctx, "127.0.0.1:0", out, errb) }()
	re := regexp.MustCompile(`Open the catalog:  (http://127\.0\.0\.1:\d+)/`)
	var base string
	for deadline := time.Now().Add(60 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		cancel()
		t.Fatalf("no URL printed: %q %q", out.String(), errb.String())
	}
	for path, want := range map[string]string{"/": "<h1>Integrations</h1>", "/api/bots": `"name":"demo-bot","public_key":"`} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), want) {
			t.Errorf("GET %s = %.200s, want %q", path, b, want)
		}
	}
	if !strings.Contains(out.String(), "ghp_fake_pinned_github_token") || !strings.Contains(out.String(), "--proxy-server=http://127.0.0.1:") {
		t.Errorf("the demo does not print the fake tokens and the proxy: %s", out.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}
