package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/fakeapi"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// sidecarOutput is a goroutine-safe output sink for the sidecar command.
type sidecarOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *sidecarOutput) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *sidecarOutput) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// clearSidecarEnv unsets every PINNED_SIDECAR_* variable for the test.
func clearSidecarEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "PINNED_SIDECAR_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

func writeKey(t *testing.T, dir string) (string, *grant.PrivateKey) {
	t.Helper()
	k, err := grant.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "bot.key")
	if err := grant.WriteKeyFile(p, k, false); err != nil {
		t.Fatal(err)
	}
	return p, k
}

// TestRunSidecarRefuses: bad configuration stops the sidecar before it
// binds anything, with a message that says what to do.
func TestRunSidecarRefuses(t *testing.T) {
	clearSidecarEnv(t)
	dir := t.TempDir()
	key, _ := writeKey(t, dir)
	open := filepath.Join(dir, "open.key")
	data, _ := os.ReadFile(key)
	if err := os.WriteFile(open, data, 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.token")
	_ = os.WriteFile(short, []byte("abc\n"), 0o600)
	good := filepath.Join(dir, "good.token")
	_ = os.WriteFile(good, []byte("0123456789abcdef0123456789abcdef\n"), 0o600)

	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		stderr string
	}{
		{name: "help", args: []string{"--help"}, code: 0, stderr: "Usage: pinned sidecar --key-file FILE"},
		{name: "help lists env", args: []string{"--help"}, code: 0, stderr: "$PINNED_SIDECAR_MAX_CONCURRENCY"},
		{name: "no key file", args: nil, code: 2, stderr: "--key-file is required"},
		{name: "missing key file", args: []string{"--key-file", filepath.Join(dir, "nope")}, code: 2, stderr: "no such file"},
		{name: "key file readable by others", args: []string{"--key-file", open}, code: 2, stderr: "chmod 600"},
		{name: "non-loopback without token", args: []string{"--key-file", key, "--listen", "0.0.0.0:8080"}, code: 2, stderr: "is not a loopback address: set a caller token"},
		{name: "all interfaces without token", args: []string{"--key-file", key, "--listen", ":8080"}, code: 2, stderr: "not a loopback address"},
		{name: "host name without token", args: []string{"--key-file", key, "--listen", "example.com:8080"}, code: 2, stderr: "not a loopback address"},
		{name: "non-loopback from env", env: map[string]string{"PINNED_SIDECAR_LISTEN": "10.0.0.1:8080"}, args: []string{"--key-file", key}, code: 2, stderr: "--listen 10.0.0.1:8080 is not a loopback address"},
		{name: "bad listen", args: []string{"--key-file", key, "--listen", "8080"}, code: 2, stderr: "want host:port"},
		{name: "short token", args: []string{"--key-file", key, "--token-file", short}, code: 2, stderr: "at least 16 characters"},
		{name: "token file and env", env: map[string]string{"PINNED_SIDECAR_TOKEN": "0123456789abcdef0123"}, args: []string{"--key-file", key, "--token-file", good}, code: 2, stderr: "not both"},
		{name: "missing token file", args: []string{"--key-file", key, "--token-file", filepath.Join(dir, "nope")}, code: 2, stderr: "--token-file"},
		{name: "bad env duration", env: map[string]string{"PINNED_SIDECAR_OP_TIMEOUT": "fast"}, args: []string{"--key-file", key}, code: 2, stderr: `PINNED_SIDECAR_OP_TIMEOUT="fast" is not a duration`},
		{name: "bad env integer", env: map[string]string{"PINNED_SIDECAR_MAX_CONCURRENCY": "many"}, args: []string{"--key-file", key}, code: 2, stderr: "PINNED_SIDECAR_MAX_CONCURRENCY"},
		{name: "write timeout below op timeout", args: []string{"--key-file", key, "--op-timeout", "30s", "--write-timeout", "20s"}, code: 2, stderr: "--write-timeout (20s) must exceed --op-timeout (30s)"},
		{name: "zero concurrency", args: []string{"--key-file", key, "--max-concurrency", "0"}, code: 2, stderr: "must be positive"},
		{name: "bad log level", args: []string{"--key-file", key, "--log-level", "loud"}, code: 2, stderr: "--log-level"},
		{name: "connect-to without cacert", args: []string{"--key-file", key, "--connect-to", "127.0.0.1:8443"}, code: 2, stderr: "go together"},
		{name: "stray argument", args: []string{"--key-file", key, "serve"}, code: 2, stderr: `unexpected argument "serve"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var stdout, stderr sidecarOutput
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // if it ever got as far as serving, stop at once
			code := runSidecarContext(ctx, tt.args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr.String(), tt.code, tt.stderr)
			}
		})
	}
}

func TestIsLoopback(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8080", true}, {"127.1.2.3:1", true}, {"[::1]:8080", true}, {"localhost:8080", true},
		{"[::ffff:127.0.0.1]:80", true}, {"0.0.0.0:8080", false}, {":8080", false}, {"[::]:8080", false},
		{"192.168.1.2:8080", false}, {"example.com:80", false}, {"[fe80::1%lo]:80", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			got, err := isLoopback(tt.addr)
			if err != nil || got != tt.want {
				t.Fatalf("isLoopback(%q) = %v, %v; want %v", tt.addr, got, err, tt.want)
			}
		})
	}
}

// TestRunSidecarAgainstFake runs the README's steps in-process: keygen,
// grant seal, `pinned sidecar --connect-to` a running fake, POST /v1/ops,
// GET /v1/tools, with a caller token; then a clean shutdown.
func TestRunSidecarAgainstFake(t *testing.T) {
	clearSidecarEnv(t)
	t.Setenv("PINNED_SIDECAR_CACHE_DIR", filepath.Join(os.TempDir(), "pinned-test-wazero-cache"))
	dir := t.TempDir()
	fake, err := fakeapi.New()
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, fake.CACertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}

	// keygen
	keyFile := filepath.Join(dir, "bot.key")
	var out, errb bytes.Buffer
	if code := runKeygen([]string{"--out", keyFile}, &out, &errb); code != 0 {
		t.Fatalf("keygen: %s", errb.String())
	}
	pub := strings.TrimSpace(out.String())

	// grant seal
	t.Setenv("PINNED_TOKEN", fakeapi.Token("github"))
	out.Reset()
	if code := runGrant([]string{"seal", "--bot-key", pub, "--service", "github", "--access", "write", "--ttl", "2m"}, &out, &errb); code != 0 {
		t.Fatalf("grant seal: %s", errb.String())
	}
	sealed := strings.TrimSpace(out.String())

	// sidecar, with a caller token from the environment
	const token = "test-caller-token-0123456789"
	t.Setenv("PINNED_SIDECAR_TOKEN", token)
	var stdout, stderr sidecarOutput
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- runSidecarContext(ctx, []string{"--key-file", keyFile, "--listen", "127.0.0.1:0",
			"--connect-to", fake.Addr(), "--cacert", ca, "--log-level", "debug"}, &stdout, &stderr)
	}()
	re := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+) \(bot public key (\S+)\)`)
	var base string
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
			if m[2] != pub {
				t.Fatalf("the sidecar announces key %s, keygen printed %s", m[2], pub)
			}
			break
		}
		select {
		case code := <-done:
			t.Fatalf("sidecar exited %d: %s", code, stderr.String())
		default:
		}
	}
	if base == "" {
		t.Fatalf("the sidecar never listened: %s", stderr.String())
	}
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	call := func(method, path, body, auth string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	opBody := `{"service":"github","op":"create_issue","args":{"owner":"pinned-tester","repo":"notes","title":"From the CLI"},"grant":"` + sealed + `"}`
	if code, b := call("POST", "/v1/ops", opBody, ""); code != 401 {
		t.Fatalf("without the caller token: %d %s", code, b)
	}
	code, b := call("POST", "/v1/ops", opBody, token)
	var res struct {
		Status int `json:"status"`
		Data   struct {
			Title string `json:"title"`
		} `json:"data"`
	}
	if code != 200 || json.Unmarshal(b, &res) != nil || res.Status != 201 || res.Data.Title != "From the CLI" {
		t.Fatalf("create_issue: %d %s", code, b)
	}
	if code, b := call("GET", "/v1/tools", "", token); code != 200 || !bytes.Contains(b, []byte(`"name":"service_op"`)) {
		t.Fatalf("tools: %d %.200s", code, b)
	}
	if code, b := call("GET", "/metrics", "", token); code != 200 || !bytes.Contains(b, []byte("go_goroutines")) || !bytes.Contains(b, []byte("pinned_egress_total")) {
		t.Fatalf("metrics: %d", code)
	}
	if code, _ := call("GET", "/readyz", "", ""); code != 200 {
		t.Fatalf("readyz: %d", code)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d after shutdown: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the sidecar did not stop")
	}
	logs := stderr.String()
	for _, want := range []string{`"event":"listening"`, `"event":"access"`, `"event":"egress"`, `"component":"host"`, `"event":"stopped"`, `"event":"dev_override"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s", want)
		}
	}
	k, _ := grant.LoadKeyFile(keyFile)
	for _, secret := range []string{fakeapi.Token("github"), sealed[40:80], token, k.Encode()} {
		if strings.Contains(logs+stdout.String(), secret) {
			t.Fatalf("a secret (%.6s…) is in the output", secret)
		}
	}
}
