package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/secret"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/testing/testenv"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// clearSidecarEnv unsets every PINNED_SIDECAR_* and PINNED_REDIS_*
// variable for the test.
func clearSidecarEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "PINNED_SIDECAR_") || strings.HasPrefix(k, "PINNED_REDIS_") {
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
	empty := filepath.Join(dir, "empty.token")
	_ = os.WriteFile(empty, []byte("\n"), 0o600)
	openTok := filepath.Join(dir, "open.token")
	_ = os.WriteFile(openTok, []byte("0123456789abcdef0123456789abcdef\n"), 0o644)
	_ = os.Chmod(openTok, 0o644) // whatever the umask
	notKey := filepath.Join(dir, "notkey.key")
	_ = os.WriteFile(notKey, []byte("xx\n"), 0o600)
	const brokerTok = "broker-instance-token-0123456789abcdefghij"

	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		stderr string
		stdout string
	}{
		{name: "help", args: []string{"--help"}, code: 0, stdout: "Usage: pinned sidecar --key-file FILE"},
		{name: "help lists env", args: []string{"--help"}, code: 0, stdout: "$PINNED_SIDECAR_MAX_CONCURRENCY"},
		{name: "help placeholders", args: []string{"-h"}, code: 0, stdout: "  -connect-to ip:port\n"},
		{name: "unknown flag", args: []string{"--bogus"}, code: 2, stderr: "pinned sidecar: flag provided but not defined: -bogus\nrun 'pinned sidecar --help' for usage\n"},
		{name: "key file not a key", args: []string{"--key-file", notKey}, code: 2,
			stderr: "pinned sidecar: key file " + notKey + ": a private key is 44 characters of standard base64 (32 bytes)\n"},
		{name: "connect-to not ip:port", args: []string{"--key-file", key, "--connect-to", "localhost", "--cacert", good}, code: 2,
			stderr: `pinned sidecar: --connect-to "localhost": want ip:port, the address pinned fakeapi printed (e.g. 127.0.0.1:8443)` + "\n"},
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
		{name: "token file readable by others", args: []string{"--key-file", key, "--token-file", openTok}, code: 2,
			stderr: "--token-file " + openTok + " has mode 0644: it is accessible by group or others; run `chmod 600 " + openTok + "`"},
		{name: "broker token file readable by others", env: map[string]string{"PINNED_SIDECAR_BROKER_URL": "https://connect.example.com"},
			args: []string{"--key-file", key, "--broker-token-file", openTok}, code: 2, stderr: "--broker-token-file " + openTok + " has mode 0644"},
		{name: "cacert without a certificate", args: []string{"--key-file", key, "--connect-to", "127.0.0.1:8443", "--cacert", good}, code: 2,
			stderr: "pinned sidecar: --cacert " + good + ": no PEM certificate in it (pinned fakeapi --ca-out writes one)\n"},
		{name: "missing token file", args: []string{"--key-file", key, "--token-file", filepath.Join(dir, "nope")}, code: 2, stderr: "--token-file"},
		{name: "bad env duration", env: map[string]string{"PINNED_SIDECAR_OP_TIMEOUT": "fast"}, args: []string{"--key-file", key}, code: 2, stderr: `PINNED_SIDECAR_OP_TIMEOUT="fast" is not a duration`},
		{name: "bad env integer", env: map[string]string{"PINNED_SIDECAR_MAX_CONCURRENCY": "many"}, args: []string{"--key-file", key}, code: 2, stderr: "PINNED_SIDECAR_MAX_CONCURRENCY"},
		{name: "write timeout below op timeout", args: []string{"--key-file", key, "--op-timeout", "30s", "--write-timeout", "20s"}, code: 2, stderr: "--write-timeout (20s) must exceed --op-timeout (30s)"},
		{name: "zero concurrency", args: []string{"--key-file", key, "--max-concurrency", "0"}, code: 2, stderr: "must be positive"},
		{name: "bad log level", args: []string{"--key-file", key, "--log-level", "loud"}, code: 2, stderr: "--log-level"},
		{name: "connect-to without cacert", args: []string{"--key-file", key, "--connect-to", "127.0.0.1:8443"}, code: 2, stderr: "go together"},
		{name: "fake model and a model key", env: map[string]string{"PINNED_SIDECAR_MODEL_KEY": "sk-ant-0123456789abcdef"},
			args: []string{"--key-file", key, "--connect-to", "127.0.0.1:8443", "--cacert", good, "--fake-model"}, code: 2, stderr: "--fake-model and a model key"},
		{name: "fake model without the fake", args: []string{"--key-file", key, "--fake-model"}, code: 2, stderr: "--fake-model answers from the provider fake's data: use it with --connect-to and --cacert"},
		{name: "stray argument", args: []string{"--key-file", key, "serve"}, code: 2, stderr: `unexpected argument "serve"`},
		{name: "help lists the broker", args: []string{"--help"}, code: 0, stdout: "$PINNED_SIDECAR_BROKER_URL"},
		{name: "broker url without token", args: []string{"--key-file", key, "--broker-url", "https://connect.example.com"}, code: 2,
			stderr: "--broker-url needs the broker instance token: --broker-token-file or PINNED_SIDECAR_BROKER_TOKEN"},
		{name: "broker token without url", env: map[string]string{"PINNED_SIDECAR_BROKER_TOKEN": brokerTok}, args: []string{"--key-file", key}, code: 2,
			stderr: "--broker-url is empty"},
		{name: "broker token file without url", args: []string{"--key-file", key, "--broker-token-file", good}, code: 2, stderr: "--broker-url is empty"},
		{name: "broker token file and env", env: map[string]string{"PINNED_SIDECAR_BROKER_TOKEN": brokerTok},
			args: []string{"--key-file", key, "--broker-url", "https://connect.example.com", "--broker-token-file", good}, code: 2, stderr: "not both"},
		{name: "short broker token", env: map[string]string{"PINNED_SIDECAR_BROKER_TOKEN": "0123456789abcdef"},
			args: []string{"--key-file", key, "--broker-url", "https://connect.example.com"}, code: 2, stderr: "broker instance token must be at least 32 characters"},
		{name: "empty broker token file", args: []string{"--key-file", key, "--broker-url", "https://connect.example.com", "--broker-token-file", empty}, code: 2, stderr: "is empty"},
		{name: "plain http broker off loopback", env: map[string]string{"PINNED_SIDECAR_BROKER_TOKEN": brokerTok},
			args: []string{"--key-file", key, "--broker-url", "http://connect.example.com"}, code: 2, stderr: "plain http is allowed on loopback only"},
		{name: "broker url with credentials", env: map[string]string{"PINNED_SIDECAR_BROKER_TOKEN": brokerTok},
			args: []string{"--key-file", key, "--broker-url", "https://user:pw@connect.example.com"}, code: 2, stderr: "--broker-url"},
		{name: "write timeout too short to rotate", env: map[string]string{"PINNED_SIDECAR_BROKER_URL": "https://connect.example.com", "PINNED_SIDECAR_BROKER_TOKEN": brokerTok},
			args: []string{"--key-file", key, "--op-timeout", "20s", "--write-timeout", "50s"}, code: 2, stderr: "must exceed twice --op-timeout plus --refresh-timeout (1m0s)"},
		{name: "write timeout below pages timeout", args: []string{"--key-file", key, "--pages-timeout", "60s"}, code: 2, stderr: "--write-timeout (1m0s) must exceed --pages-timeout (1m0s)"},
		{name: "write timeout too short to rotate a paged call", env: map[string]string{"PINNED_SIDECAR_BROKER_URL": "https://connect.example.com", "PINNED_SIDECAR_BROKER_TOKEN": brokerTok},
			args: []string{"--key-file", key, "--pages-timeout", "30s"}, code: 2, stderr: "must exceed --op-timeout plus --refresh-timeout plus --pages-timeout (1m5s)"},
		{name: "zero refresh margin", args: []string{"--key-file", key, "--refresh-margin", "0s"}, code: 2, stderr: "--refresh-margin must be positive"},
		{name: "bad env refresh timeout", env: map[string]string{"PINNED_SIDECAR_REFRESH_TIMEOUT": "soon"}, args: []string{"--key-file", key}, code: 2,
			stderr: `PINNED_SIDECAR_REFRESH_TIMEOUT="soon" is not a duration`},
	}
	stateKey := filepath.Join(dir, "state.key")
	_ = os.WriteFile(stateKey, []byte(strings.Repeat("ab", 32)+"\n"), 0o600)
	shortKey := filepath.Join(dir, "short-state.key")
	_ = os.WriteFile(shortKey, []byte(strings.Repeat("ab", 16)+strings.Repeat("zz", 16)+"\n"), 0o600)
	redisCases := []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		stderr string
		stdout string
	}{
		{name: "help lists redis", args: []string{"--help"}, code: 0, stdout: "$PINNED_REDIS_URL]"},
		{name: "help lists the state key", args: []string{"--help"}, code: 0, stdout: "-state-key-file file"},
		{name: "redis without state key", args: []string{"--key-file", key, "--redis-url", "redis://127.0.0.1:6379"}, code: 2,
			stderr: "--redis-url needs the state key shared by the replicas: --state-key-file or PINNED_SIDECAR_STATE_KEY"},
		{name: "state key not hex", args: []string{"--key-file", key, "--redis-url", "redis://127.0.0.1:6379", "--state-key-file", shortKey}, code: 2,
			stderr: "the state key must be 64 hex characters"},
		{name: "state key readable by others", args: []string{"--key-file", key, "--redis-url", "redis://127.0.0.1:6379", "--state-key-file", openTok}, code: 2,
			stderr: "--state-key-file " + openTok + " has mode 0644"},
		{name: "password in the redis url", env: map[string]string{"PINNED_REDIS_URL": "redis://pinned:hunter2-secret@127.0.0.1:6379"},
			args: []string{"--key-file", key, "--state-key-file", stateKey}, code: 2, stderr: "--redis-url: the Redis URL carries a password; remove it and pass the password from a file or the environment"},
		{name: "redis url scheme", args: []string{"--key-file", key, "--state-key-file", stateKey, "--redis-url", "http://127.0.0.1:6379"}, code: 2, stderr: "want redis, rediss (TLS) or unix"},
		{name: "state key without redis", args: []string{"--key-file", key, "--state-key-file", stateKey}, code: 2, stderr: "--redis-url is empty"},
		{name: "redis password without redis", env: map[string]string{"PINNED_REDIS_PASSWORD": "pw"}, args: []string{"--key-file", key}, code: 2, stderr: "--redis-url is empty"},
		{name: "zero redis timeout", args: []string{"--key-file", key, "--redis-timeout", "0s"}, code: 2, stderr: "--redis-timeout must be positive"},
	}
	tests = append(tests, redisCases...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var stdout, stderr testutil.SyncBuffer
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // if it ever got as far as serving, stop at once
			code := runSidecarContext(ctx, tt.args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.stderr) || !strings.Contains(stdout.String(), tt.stdout) {
				t.Fatalf("exit %d, stderr %q, stdout %.80q; want %d, %q and %q", code, stderr.String(), stdout.String(), tt.code, tt.stderr, tt.stdout)
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
	t.Setenv("PINNED_SIDECAR_CACHE_DIR", testenv.CacheDir())
	dir := t.TempDir()
	fake := testutil.Fake(t)
	ca := testutil.CAFile(t, fake)

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

	// a broker wired to the fake, for token rotation
	const brokerToken = "cli-test-broker-instance-token-0123456789"
	brokerURL := startTestBroker(t, fake, brokerToken)

	// sidecar, with a caller token and the broker instance token from the
	// environment
	const token = "test-caller-token-0123456789"
	t.Setenv("PINNED_SIDECAR_TOKEN", token)
	t.Setenv("PINNED_SIDECAR_BROKER_TOKEN", brokerToken)
	var stdout, stderr testutil.SyncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		// An empty cache directory: a first start, on the interpreter until
		// the guest's machine code is compiled.
		done <- runSidecarContext(ctx, []string{"--key-file", keyFile, "--listen", "127.0.0.1:0", "--cache-dir", filepath.Join(dir, "cache"),
			"--connect-to", fake.Addr(), "--cacert", ca, "--log-level", "debug", "--broker-url", brokerURL}, &stdout, &stderr)
	}()
	re := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+) \(bot public key (\S+)\)`)
	var base string
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
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
	// The log says which isolation strategy the ops run with: reset on
	// Linux, and off it the fallback and why (never a silent pretend).
	wantIsolation := `"isolation":"reset"`
	if runtime.GOOS != "linux" {
		wantIsolation = `"isolation":"fresh (`
	}
	if logs := stderr.String(); !strings.Contains(logs, `"event":"engine_ready"`) || !strings.Contains(logs, wantIsolation) {
		t.Fatalf("the engine_ready event does not carry %s: %s", wantIsolation, logs)
	}
	// With the reset pool, built while the sidecar serves, a pool_ready
	// event says how it scans, its page classes (how many pages every
	// reset copies, learned at this start or read from the cache) and
	// where its template came from.
	// engine_ready names the tier ops start on: the interpreter when the
	// cache held no machine code (a first start), and then a compiled
	// event comes before the pool, which runs on that code.
	tier := regexp.MustCompile(`"event":"engine_ready","isolation":"[^"]*","tier":"(compiler|interpreter)"`).FindStringSubmatch(stderr.String())
	if tier == nil || tier[1] != "interpreter" {
		t.Fatalf("the engine_ready event does not name the interpreter's tier (the cache is empty): %s", stderr.String())
	}
	if runtime.GOOS == "linux" {
		poolReady := regexp.MustCompile(`"event":"pool_ready","reset_scan":"(write tracking|pagemap[^"]*)","page_classes":"[0-9]+ write, [0-9]+ read of [0-9]+ pages, from the (probe|cache)","template":"(warm-up|cache)"`)
		for deadline := time.Now().Add(2 * time.Minute); !poolReady.MatchString(stderr.String()); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) || strings.Contains(stderr.String(), `"pool_failed"`) {
				t.Fatalf("no pool_ready event with the reset scan, page classes and template: %s", stderr.String())
			}
		}
		logs := stderr.String()
		if c := strings.Index(logs, `"event":"compiled","tier":"compiler"`); c < 0 || c > poolReady.FindStringIndex(logs)[0] {
			t.Fatalf("started on the interpreter, but no compiled event before pool_ready: %s", logs)
		}
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

	// Token rotation through the broker: an expired GitHub pair is
	// refreshed before the call and comes back sealed to the member.
	member, _ := grant.GenerateKey(nil)
	old := mintExpiredGitHubPair(t, fake)
	botPub, _ := grant.ParsePublicKey(pub)
	oauthGrant, err := grant.Seal(&grant.Grant{
		Service: "github", Access: grant.AccessRead, Kind: grant.KindOAuth,
		Secret: secret.Secret(old.access), Refresh: secret.Secret(old.refresh), TokenExpiresAt: old.expiresAt,
		ExpiresAt: time.Now().Add(2 * time.Minute), MemberKey: member.Public().String(),
	}, botPub, nil)
	if err != nil {
		t.Fatal(err)
	}
	code, b = call("POST", "/v1/ops", `{"service":"github","op":"get_viewer","grant":"`+oauthGrant+`"}`, token)
	var rot struct {
		Status  int    `json:"status"`
		Rotated string `json:"rotated"`
	}
	if code != 200 || json.Unmarshal(b, &rot) != nil || rot.Status != 200 || rot.Rotated == "" {
		t.Fatalf("op with an expired pair: %d %s", code, b)
	}
	fresh, err := grant.OpenRotated(rot.Rotated, member)
	if err != nil || fresh.Access == "" || string(fresh.Access) == old.access || string(fresh.Refresh) == old.refresh {
		t.Fatalf("rotated pair: %v", err)
	}
	if _, refreshes := fake.TokenRequests("github"); refreshes != 1 {
		t.Fatalf("the fake saw %d refreshes, want 1", refreshes)
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
	for _, want := range []string{`"event":"listening"`, `"event":"access"`, `"event":"egress"`, `"component":"host"`, `"event":"stopped"`, `"event":"dev_override"`,
		`"event":"rotation","broker":"` + brokerURL, `"event":"token_refresh"`, `"rotation":"before_call"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s", want)
		}
	}
	k, _ := grant.LoadKeyFile(keyFile)
	for _, secret := range []string{fakeapi.Token("github"), sealed[40:80], token, k.Encode(), brokerToken,
		old.access, old.refresh, string(fresh.Access), string(fresh.Refresh), rot.Rotated[40:80], oauthGrant[40:80]} {
		if strings.Contains(logs+stdout.String(), secret) {
			t.Fatalf("a secret (%.6s…) is in the output", secret)
		}
	}
}

// startTestBroker serves a broker on loopback with the fake's default
// clients of GitHub and services, its provider calls sent to the fake.
func startTestBroker(t *testing.T, fake *fakeapi.Server, instanceToken string, services ...string) string {
	t.Helper()
	return testenv.Broker(t, fake, instanceToken, testenv.BrokerOptions{Services: append(services, fakeapi.GitHub)})
}

type testPair struct{ access, refresh, expiresAt string }

// mintExpiredGitHubPair connects GitHub at the fake's OAuth endpoints with
// the fake's clock set back 9 hours, so the 8-hour pair is expired.
func mintExpiredGitHubPair(t *testing.T, fake *fakeapi.Server) testPair {
	t.Helper()
	p := testutil.MintPair(t, fake, "github", 9*time.Hour)
	if p.ExpiresAt.IsZero() {
		t.Fatal("token exchange: no expires_in")
	}
	return testPair{p.Access, p.Refresh, p.ExpiresAt.UTC().Format(time.RFC3339)}
}

// TestSidecarRestartRefusesReplay restarts a real `pinned sidecar`
// process (killed with SIGKILL, no shutdown) inside a write grant's TTL:
// on the default store, a file under the state directory, the replay of
// the captured grant is refused with grant_replayed and the provider sees
// one POST. The control, the same with --state-dir "" (in memory), runs
// the write a second time.
func TestSidecarRestartRefusesReplay(t *testing.T) {
	bin := pinnedBinary(t)
	fake := testutil.Fake(t)
	ca := testutil.CAFile(t, fake)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "bot.key")
	key, err := grant.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := grant.WriteKeyFile(keyFile, key, false); err != nil {
		t.Fatal(err)
	}
	const token = "restart-test-caller-token-0123456789"
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PINNED_") && !strings.HasPrefix(kv, "XDG_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+dir, "PINNED_SIDECAR_TOKEN="+token,
		"PINNED_SIDECAR_CACHE_DIR="+testenv.CacheDir())
	// start runs the sidecar until the test ends or it is killed.
	start := func(t *testing.T, extra ...string) (string, *exec.Cmd) {
		t.Helper()
		addrFile := filepath.Join(t.TempDir(), "addr")
		cmd := exec.Command(bin, append([]string{"sidecar", "--key-file", keyFile, "--listen", "127.0.0.1:0",
			"--connect-to", fake.Addr(), "--cacert", ca, "--addr-file", addrFile}, extra...)...)
		cmd.Env = env
		stderr := &testutil.SyncBuffer{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if b, err := os.ReadFile(addrFile); err == nil && strings.HasSuffix(string(b), "\n") {
				return "http://" + strings.TrimSpace(string(b)), cmd
			}
		}
		t.Fatalf("the sidecar never listened: %s", stderr.String())
		return "", nil
	}
	post := func(t *testing.T, base, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/v1/ops", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tt := range []struct {
		name      string
		args      []string
		wantCode  int
		wantPosts int
	}{
		{"default store: a file under the state directory", nil, http.StatusConflict, 1},
		{"control: in memory", []string{"--state-dir", ""}, http.StatusOK, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake.Reset()
			sealed, err := grant.Seal(&grant.Grant{Service: "github", Access: grant.AccessWrite, Kind: grant.KindPAT,
				Secret: secret.Secret(fakeapi.Token("github")), ExpiresAt: time.Now().Add(5 * time.Minute)}, key.Public(), nil)
			if err != nil {
				t.Fatal(err)
			}
			body := `{"service":"github","op":"create_issue","args":{"owner":"pinned-tester","repo":"notes","title":"once"},"grant":"` + sealed + `"}`
			base, cmd := start(t, tt.args...)
			if code, b := post(t, base, body); code != http.StatusOK || !strings.Contains(b, `"status":201`) {
				t.Fatalf("first run: %d %s", code, b)
			}
			_ = cmd.Process.Kill() // no shutdown: what was answered is on disk
			_ = cmd.Wait()
			base, _ = start(t, tt.args...)
			code, b := post(t, base, body)
			if code != tt.wantCode || (tt.wantCode == http.StatusConflict && !strings.Contains(b, `"code":"grant_replayed"`)) {
				t.Fatalf("the replay after a restart: %d %s, want %d", code, b, tt.wantCode)
			}
			posts := 0
			for _, r := range fake.Requests() {
				if r.Method == "POST" {
					posts++
				}
			}
			if posts != tt.wantPosts {
				t.Errorf("%d POSTs reached the provider, want %d", posts, tt.wantPosts)
			}
		})
	}
}
