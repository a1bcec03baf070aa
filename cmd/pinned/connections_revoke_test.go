package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/connstore"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/secret"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// TestConnectionsRemoveRevokes: removing an OAuth connection revokes its
// tokens at the provider through the broker, and the revoked token stops
// working. When the provider answers 5xx the connection is removed all
// the same and the member is told the token may still be valid. A pasted
// token is removed with the page where to revoke it. No token is printed.
func TestConnectionsRemoveRevokes(t *testing.T) {
	const instance = "cmd-test-broker-instance-token-0123456789"
	tests := []struct {
		name     string
		service  string
		kind     string
		fail     int  // the revocation endpoint's status instead of 200
		broker   bool // pass --broker-url
		code     int
		stdout   string
		revoked  bool // the access token stops working
		attempts int  // revocation requests the fake sees
	}{
		{name: "oauth revoked", service: fakeapi.Linear, kind: grant.KindOAuth, broker: true, code: 0,
			stdout: "removed linear\nrevoked at the provider: refresh_token, access_token\n", revoked: true, attempts: 2},
		{name: "provider 503", service: fakeapi.Linear, kind: grant.KindOAuth, fail: 503, broker: true, code: 1,
			stdout: "the provider did NOT confirm the revocation", attempts: 1},
		{name: "no broker", service: fakeapi.Linear, kind: grant.KindOAuth, code: 0,
			stdout: "not revoked at the provider: no broker to revoke with (--broker-url); the grant is still valid: revoke it at https://linear.app/settings/account/security\n"},
		{name: "oauth without a revocation endpoint", service: fakeapi.GitHub, kind: grant.KindOAuth, broker: true, code: 0,
			stdout: "GitHub declares no revocation endpoint, so the grant is still valid at the provider: revoke it at https://github.com/settings/personal-access-tokens/new\n"},
		{name: "pasted token", service: fakeapi.GitHub, kind: grant.KindPAT, broker: true, code: 0,
			stdout: "the token is still valid at the provider (a pasted token cannot be revoked from here): revoke it at https://github.com/settings/personal-access-tokens/new\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("XDG_CONFIG_HOME", dir)
			t.Setenv("PINNED_MCP_BROKER_TOKEN", "")
			os.Unsetenv("PINNED_MCP_BROKER_TOKEN")
			fake := testutil.Fake(t)
			c := connstore.Connection{Service: tt.service, Cap: connstore.CapRead, Kind: tt.kind}
			if tt.kind == grant.KindOAuth {
				p := testutil.MintPair(t, fake, tt.service, 0)
				c.Token, c.Refresh = secret.Secret(p.Access), secret.Secret(p.Refresh)
				if !p.ExpiresAt.IsZero() {
					c.TokenExpiresAt = p.ExpiresAt.UTC().Format(time.RFC3339)
				}
			} else {
				c.Token = secret.Secret(fakeapi.Token(tt.service))
			}
			store, err := connstore.Open(filepath.Join(dir, "pinned"))
			if err != nil {
				t.Fatal(err)
			}
			if err := store.Put(c); err != nil {
				t.Fatal(err)
			}
			args := []string{"connections", "remove", tt.service}
			if tt.broker {
				args = append(args, "--broker-url", startTestBroker(t, fake, instance, fakeapi.Linear))
				t.Setenv("PINNED_MCP_BROKER_TOKEN", instance)
			}
			if tt.fail != 0 {
				fake.SetRevokeStatus(tt.service, tt.fail)
			}
			var stdout, stderr bytes.Buffer
			code := dispatch(args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stdout.String(), tt.stdout) || !strings.HasPrefix(stdout.String(), "removed "+tt.service+"\n") {
				t.Fatalf("exit %d, want %d\nstdout %q\nwant   %q\nstderr %q", code, tt.code, stdout.String(), tt.stdout, stderr.String())
			}
			if _, err := store.Get(tt.service); !errors.Is(err, connstore.ErrNotConnected) {
				t.Errorf("the connection is still stored: %v", err)
			}
			if out := stdout.String() + stderr.String(); strings.Contains(out, string(c.Token)) || c.Refresh != "" && strings.Contains(out, string(c.Refresh)) {
				t.Errorf("a token was printed: %q", out)
			}
			if n := len(fake.Revocations(tt.service)); n != tt.attempts {
				t.Errorf("the fake saw %d revocation requests, want %d", n, tt.attempts)
			}
			if tt.service == fakeapi.Linear {
				want := 200
				if tt.revoked {
					want = 401
				}
				if st := testutil.ViewerStatus(t, fake, fakeapi.Linear, string(c.Token)); st != want {
					t.Errorf("the access token after remove: viewer %d, want %d", st, want)
				}
			}
		})
	}
}
