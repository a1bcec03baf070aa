package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/broker"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
)

func TestRunBrokerExits(t *testing.T) {
	key := broker.GenerateStateKey()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		env    []string
		code   int
		stdout []string
		stderr []string
	}{
		{name: "help", args: []string{"--help"}, code: 0, stdout: []string{"LCHAT_OAUTH_<ID>_CLIENT_ID", "PINNED_BROKER_STATE_KEY", "-public-url", "-allow-return",
			"-state-key-file", "-instance-tokens-file", "-refresh-rate", "-provider-timeout", "-proxy", "-provider-addr", "-gen-state-key", "-bind-browser", "-listen"}},
		{name: "gen-state-key", args: []string{"--gen-state-key"}, code: 0},
		{name: "no state key", code: 2, stderr: []string{"refusing to start without a state key", "--gen-state-key"}},
		{name: "bad state key", env: []string{"PINNED_BROKER_STATE_KEY=abcd"}, code: 2, stderr: []string{"PINNED_BROKER_STATE_KEY: state key is 3 bytes"}},
		{name: "key in env and file", args: []string{"--state-key-file", keyFile}, env: []string{"PINNED_BROKER_STATE_KEY=" + key}, code: 2, stderr: []string{"use one"}},
		{name: "bad env flag value", env: []string{"PINNED_BROKER_STATE_KEY=" + key, "PINNED_BROKER_STATE_TTL=soon"}, code: 2, stderr: []string{"PINNED_BROKER_STATE_TTL"}},
		{name: "half a client", env: []string{"PINNED_BROKER_STATE_KEY=" + key, "LCHAT_OAUTH_GITHUB_CLIENT_ID=x"}, code: 2,
			stderr: []string{"LCHAT_OAUTH_GITHUB_CLIENT_SECRET is empty"}},
		{name: "short instance token", args: []string{"--state-key-file", keyFile}, env: []string{"PINNED_BROKER_INSTANCE_TOKENS=short"}, code: 2, stderr: []string{"instance token #1"}},
		{name: "bad origin", args: []string{"--state-key-file", keyFile, "--allow-return", "https://a.example/path"}, code: 2, stderr: []string{"without path"}},
		{name: "unspecified listen needs a public URL", args: []string{"--state-key-file", keyFile, "--listen", "0.0.0.0:0"}, code: 2, stderr: []string{"--public-url"}},
		{name: "provider-ca alone", args: []string{"--state-key-file", keyFile, "--provider-ca", keyFile}, code: 2, stderr: []string{"needs --provider-addr"}},
		{name: "unknown flag", args: []string{"--nope"}, code: 2, stderr: []string{"pinned broker: flag provided but not defined: -nope\nrun 'pinned broker --help' for usage\n"}},
		{name: "help placeholders", args: []string{"-h"}, code: 0, stdout: []string{"  -provider-addr ip:port\n", "  -log-format format\n", "Exit status: 0 after a clean shutdown"}},
		{name: "argument", args: []string{"serve"}, code: 2, stderr: []string{`unexpected argument "serve"`}},
		{name: "cannot listen", args: []string{"--state-key-file", keyFile, "--listen", "127.0.0.1:99999"}, code: 1, stderr: []string{"listen"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr testutil.SyncBuffer
			code := runBrokerContext(context.Background(), tt.args, brokerIO{environ: tt.env, stdout: &stdout, stderr: &stderr})
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout.String(), stderr.String())
			}
			for _, s := range tt.stdout {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout misses %q", s)
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr misses %q:\n%s", s, stderr.String())
				}
			}
			if tt.name == "gen-state-key" {
				if k, err := broker.ParseStateKey(stdout.String()); err != nil || len(k) != broker.StateKeySize {
					t.Fatalf("generated key %q: %v", stdout.String(), err)
				}
			}
		})
	}
}

// TestRunBrokerServes starts `pinned broker` against the provider fake
// (--provider-addr / --provider-ca), runs a connection and a refresh, then
// stops it by cancelling the context.
func TestRunBrokerServes(t *testing.T) {
	fake := testutil.Fake(t)
	caFile := testutil.CAFile(t, fake)
	const instance = "cmd-test-instance-token-0123456789abcdefghij"
	env := []string{
		"PINNED_BROKER_STATE_KEY=" + broker.GenerateStateKey(),
		"PINNED_BROKER_INSTANCE_TOKENS=" + instance,
		"PINNED_BROKER_ALLOW_RETURN=https://app.example.test",
		"LCHAT_OAUTH_HUBSPOT_CLIENT_ID=" + fakeapi.OAuthClientID("hubspot"),
		"LCHAT_OAUTH_HUBSPOT_CLIENT_SECRET=" + fakeapi.OAuthClientSecret("hubspot"),
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	var stdout, stderr testutil.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runBrokerContext(ctx, []string{"--listen", "127.0.0.1:0", "--provider-addr", fake.Addr(), "--provider-ca", caFile},
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
	base := "http://" + addr
	local := &http.Transport{}
	defer local.CloseIdleConnections()
	browser := &http.Client{
		Transport: rtFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Host == addr {
				return local.RoundTrip(r)
			}
			return fake.Client().Transport.RoundTrip(r)
		}),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	jarless := func(u string, cookies []*http.Cookie) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		for _, c := range cookies {
			req.AddCookie(c)
		}
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if r := jarless(base+"/healthz", nil); r.StatusCode != 200 {
		t.Fatalf("healthz %d", r.StatusCode)
	}
	start := jarless(base+"/oauth/hubspot/start?cap=write&return="+url.QueryEscape("https://app.example.test/done"), nil)
	if start.StatusCode != http.StatusFound {
		t.Fatalf("start %d", start.StatusCode)
	}
	auth := jarless(start.Header.Get("Location"), nil)
	cb := jarless(auth.Header.Get("Location"), start.Cookies())
	final, err := url.Parse(cb.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	fr, _ := url.ParseQuery(final.Fragment)
	if fr.Get("access_token") == "" || fr.Get("refresh_token") == "" || fr.Get("cap") != "write" {
		t.Fatalf("final %s", final)
	}
	body := `{"service":"hubspot","refresh_token":"` + fr.Get("refresh_token") + `"}`
	req, _ := http.NewRequest(http.MethodPost, base+"/api/refresh", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+instance)
	req.Header.Set("Content-Type", "application/json")
	resp, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var ans broker.RefreshResponse
	_ = json.NewDecoder(resp.Body).Decode(&ans)
	resp.Body.Close()
	if resp.StatusCode != 200 || ans.AccessToken == "" {
		t.Fatalf("refresh %d %+v", resp.StatusCode, ans)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("did not stop")
	}
	logs := stderr.String()
	for _, want := range []string{`"message":"broker listening"`, `"oauth_enabled":["hubspot"]`, "provider override active", `"message":"broker stopped"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs miss %s:\n%s", want, logs)
		}
	}
	for _, secret := range []string{fakeapi.OAuthClientSecret("hubspot"), instance, fr.Get("access_token"), fr.Get("refresh_token"), ans.AccessToken} {
		if strings.Contains(logs, secret) {
			t.Errorf("a secret in the logs: %.8s…", secret)
		}
	}
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestConsoleLogNoColorOffTerminal: --log-format console writes no colour
// codes into a file or a pipe.
func TestConsoleLogNoColorOffTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "broker.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) || isTerminal(&bytes.Buffer{}) {
		t.Fatal("a regular file or a buffer taken for a terminal")
	}
	var buf bytes.Buffer
	_, log, _ := brokerConfig(&brokerFlags{logLevel: "info", logFormat: "console"}, nil, nil, &buf)
	log.Info().Str("event", "x").Msg("hello")
	if strings.Contains(buf.String(), "\x1b[") || !strings.Contains(buf.String(), "hello") {
		t.Fatalf("console line %q", buf.String())
	}
}
