package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// TestGrantSealStanding: --standing seals a standing read grant with a
// fresh series id, printed on stderr; --series renews that series; a
// write, an op binding, a lifetime past the standing bound or --series
// alone is a usage error.
func TestGrantSealStanding(t *testing.T) {
	t.Setenv("PINNED_TOKEN", "ghp_fake_pinned_github_token_000000000000")
	bot, err := grant.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"seal", "--bot-key", bot.Public().String(), "--service", "github"}
	seal := func(t *testing.T, extra ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := runGrant(append(append([]string(nil), base...), extra...), &stdout, &stderr)
		return code, strings.TrimSpace(stdout.String()), stderr.String()
	}

	code, out, errText := seal(t, "--access", "read", "--standing", "--ttl", "10m", "--only", "pinned-tester/notes")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errText)
	}
	g, err := grant.Open(out, bot)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`standing series (\S+): renew with --standing --series (\S+) before`).FindStringSubmatch(errText)
	if m == nil || m[1] != g.Standing || m[2] != g.Standing || len(g.Standing) < grant.MinNonceLen {
		t.Fatalf("stderr %q does not name the series %q", errText, g.Standing)
	}
	if g.Access != grant.AccessRead || g.Resources != `{"repository":["pinned-tester/notes"]}` || time.Until(g.ExpiresAt) > 10*time.Minute {
		t.Fatalf("sealed %+v", g)
	}

	code, out, errText = seal(t, "--access", "read", "--standing", "--series", g.Standing, "--only", "pinned-tester/notes")
	if code != 0 || errText != "" {
		t.Fatalf("renewal: exit %d: %q", code, errText)
	}
	r, err := grant.Open(out, bot)
	if err != nil || r.Standing != g.Standing || r.StandingScope() != g.StandingScope() || r.Nonce == g.Nonce {
		t.Fatalf("renewal %+v, %v: want the same series and scope, a new nonce", r, err)
	}

	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"write", []string{"--access", "write", "--standing"}, "a standing grant is read-only"},
		{"an op", []string{"--access", "read", "--standing", "--op", "get_repo"}, "leave out --op"},
		{"too long", []string{"--access", "read", "--standing", "--ttl", "1h"}, "a standing grant lives at most 15m"},
		{"series alone", []string{"--access", "read", "--series", g.Standing}, "add --standing"},
		{"a malformed series", []string{"--access", "read", "--standing", "--series", "short"}, "standing is not 16 to 128 printable ASCII bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errText := seal(t, tt.args...)
			if code == 0 || out != "" || !strings.Contains(errText, tt.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want a refusal saying %q", code, out, errText, tt.stderr)
			}
		})
	}
}
