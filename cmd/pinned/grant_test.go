package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/grant"
)

func TestRunGrantSeal(t *testing.T) {
	const token = "ghp_fake_pinned_github_token_000000000000"
	t.Setenv("PINNED_TOKEN", token)
	t.Setenv("PINNED_TEST_EMPTY", "")
	t.Setenv("PINNED_TEST_NEWLINE", "ghp_pasted_with_a_newline_0000000000000\n")
	t.Setenv("PINNED_TEST_REFRESH_SPACE", "refresh token")
	const refresh = "fake_refresh_token_from_env_0000"
	t.Setenv("PINNED_TEST_REFRESH", refresh)
	bot, err := grant.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	member, _ := grant.GenerateKey(nil)
	pub := bot.Public().String()
	args := `{"title":"Hi","owner":"pinned-tester","repo":"notes"}`
	hash, _ := grant.ArgsSHA256([]byte(args))
	keyFile := filepath.Join(t.TempDir(), "bot.key")
	if err := grant.WriteKeyFile(keyFile, bot, false); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
		stdout []string // fragments of stdout (help)
		check  func(t *testing.T, g *grant.Grant)
	}{
		{name: "read grant", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "read", "--ttl", "10m"},
			check: func(t *testing.T, g *grant.Grant) {
				if g.Service != "github" || g.Access != "read" || g.Kind != "pat" || string(g.Secret) != token || g.Op != "" || g.ArgsSHA256 != "" {
					t.Fatalf("grant %+v", g)
				}
				if d := time.Until(g.ExpiresAt); d < 9*time.Minute || d > 10*time.Minute {
					t.Fatalf("expires in %s, want about 10m", d)
				}
				if len(g.Nonce) < grant.MinNonceLen {
					t.Fatalf("nonce %q", g.Nonce)
				}
			}},
		{name: "research flows", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "read", "--ttl", "10m",
			"--flow", "dnsimple:github", "--flow", "stripe:github"},
			check: func(t *testing.T, g *grant.Grant) {
				if g.Flows != "dnsimple:github,stripe:github" || !g.SealsFlow("dnsimple", "github") || g.SealsFlow("github", "dnsimple") {
					t.Fatalf("flows %q", g.Flows)
				}
			}},
		{name: "a flow to itself", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "read", "--flow", "github:github"},
			code: 2, stderr: "own values always flow back"},
		{name: "a flow naming an unknown service", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "read", "--flow", "dnsimple:gitlub"},
			code: 2, stderr: "gitlub"},
		{name: "bound write grant", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "write", "--op", "create_issue", "--args", args,
			"--kind", "oauth", "--member-key", member.Public().String()},
			check: func(t *testing.T, g *grant.Grant) {
				if g.Access != "write" || g.Op != "create_issue" || g.ArgsSHA256 != hash || g.Kind != "oauth" || g.MemberKey != member.Public().String() {
					t.Fatalf("grant %+v", g)
				}
				if d := time.Until(g.ExpiresAt); d > 2*time.Minute || d < time.Minute {
					t.Fatalf("default ttl: expires in %s", d)
				}
			}},
		{name: "op-bound read grant", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "read", "--op", "list_repos"},
			check: func(t *testing.T, g *grant.Grant) {
				if g.Op != "list_repos" || g.ArgsSHA256 != "" {
					t.Fatalf("grant %+v", g)
				}
			}},
		{name: "long ttl warns", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "read", "--ttl", "48h"}, stderr: "warning: --ttl 48h0m0s is longer"},
		{name: "no subcommand", args: nil, code: 2, stderr: "pinned grant: missing subcommand: want seal or open\nrun 'pinned grant --help' for usage\n"},
		{name: "unknown subcommand", args: []string{"close"}, code: 2, stderr: `pinned grant: unknown subcommand "close": want seal or open` + "\nrun 'pinned grant --help' for usage\n"},
		{name: "flag before the subcommand", args: []string{"--bogus"}, code: 2, stderr: "pinned grant: flag provided but not defined: -bogus\nrun 'pinned grant --help' for usage\n"},
		{name: "unknown flag", args: []string{"seal", "--bogus"}, code: 2, stderr: "pinned grant seal: flag provided but not defined: -bogus\nrun 'pinned grant seal --help' for usage\n"},
		{name: "help shows the seal flags", args: []string{"--help"}, code: 0,
			stdout: []string{"Usage: pinned grant seal", "Flags:\n  -access read|write\n", "-bot-key key", "-args JSON", "-member-key key",
				"--max-grant-ttl, 24h unless configured (default 2m0s)\n"}},
		{name: "seal help", args: []string{"seal", "--help"}, code: 0, stdout: []string{"Usage: pinned grant seal", "-service id", "-ttl duration"}},
		{name: "missing bot key", args: []string{"seal", "--service", "github", "--access", "read"}, code: 2, stderr: "--bot-key, --service and --access are required"},
		{name: "missing access", args: []string{"seal", "--bot-key", pub, "--service", "github"}, code: 2, stderr: "are required"},
		{name: "expiring OAuth pair", args: []string{"seal", "--bot-key", pub, "--service", "hubspot", "--access", "read", "--kind", "oauth",
			"--refresh-env", "PINNED_TEST_REFRESH", "--token-expires-in", "-1m", "--member-key", member.Public().String()},
			check: func(t *testing.T, g *grant.Grant) {
				if string(g.Refresh) != refresh || g.Kind != "oauth" || string(g.Secret) != token || g.MemberKey != member.Public().String() {
					t.Fatalf("grant %+v", g)
				}
				exp, err := time.Parse(time.RFC3339, g.TokenExpiresAt)
				if err != nil {
					t.Fatalf("token_expires_at %q: %v", g.TokenExpiresAt, err)
				}
				if d := time.Until(exp); d > -50*time.Second || d < -2*time.Minute {
					t.Fatalf("token expires in %s, want about -1m", d)
				}
			}},
		{name: "refresh token without oauth", args: []string{"seal", "--bot-key", pub, "--service", "hubspot", "--access", "read",
			"--refresh-env", "PINNED_TEST_REFRESH", "--member-key", member.Public().String()}, code: 2,
			stderr: "pinned grant seal: --refresh-env: a refresh token belongs to an OAuth pair: add --kind oauth\n"},
		{name: "refresh token without member key", args: []string{"seal", "--bot-key", pub, "--service", "hubspot", "--access", "read",
			"--kind", "oauth", "--refresh-env", "PINNED_TEST_REFRESH"}, code: 2,
			stderr: "pinned grant seal: --refresh-env needs --member-key: the sidecar seals the rotated pair back to the member, and refuses to rotate without one\n"},
		{name: "refresh env empty", args: []string{"seal", "--bot-key", pub, "--service", "hubspot", "--access", "read",
			"--kind", "oauth", "--refresh-env", "PINNED_TEST_EMPTY", "--member-key", member.Public().String()}, code: 2,
			stderr: "pinned grant seal: no refresh token: set PINNED_TEST_EMPTY\n"},
		{name: "bot key given as the key file", args: []string{"seal", "--bot-key", keyFile, "--service", "github", "--access", "read"}, code: 2,
			stderr: "pinned grant seal: --bot-key: a public key is 44 characters of standard base64 (32 bytes) (pass the public key pinned keygen printed, not the key file)\n"},
		{name: "bad bot key", args: []string{"seal", "--bot-key", "abc", "--service", "github", "--access", "read"}, code: 2,
			stderr: "pinned grant seal: --bot-key: a public key is 44 characters of standard base64 (32 bytes)\n"},
		{name: "bad access", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "admin"}, code: 2, stderr: `--access must be read or write, not "admin"`},
		{name: "bad kind", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "read", "--kind", "basic"}, code: 2, stderr: "--kind must be pat or oauth"},
		{name: "unknown service", args: []string{"seal", "--bot-key", pub, "--service", "githb", "--access", "read"}, code: 2, stderr: `unknown service "githb"`},
		{name: "unknown op", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "write", "--op", "delete_repo"}, code: 2,
			stderr: `pinned grant seal: service github has no op "delete_repo" (ops: create_issue, get_pages, get_repo, get_viewer, list_issues, list_repos)` + "\n"},
		{name: "write op under read", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "read", "--op", "create_issue"}, code: 2, stderr: "needs --access write"},
		{name: "args without op", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "write", "--args", args}, code: 2, stderr: "give --op too"},
		{name: "args not JSON", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "write", "--op", "create_issue", "--args", "{title:1}"}, code: 2, stderr: "--args: not valid JSON at byte 2"},
		{name: "args not an object", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "write", "--op", "create_issue", "--args", "[1]"}, code: 2,
			stderr: "pinned grant seal: --args: must be a JSON object, e.g. '{\"per_page\":100}', not [1]\n"},
		{name: "args with a repeated key", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "write", "--op", "create_issue", "--args", `{"title":"a","title":"b"}`}, code: 2,
			stderr: "pinned grant seal: --args: args are not a JSON object (strict: unique keys, valid UTF-8)\n"},
		// Args the op refuses: the sidecar would answer bad_args to every
		// use of the grant, so it is not sealed.
		{name: "undeclared arg", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "write", "--op", "create_issue", "--args", `{"x":1}`}, code: 2,
			stderr: `pinned grant seal: bad_args: op github.create_issue has no arg "x" (args: assignees, body, labels, owner, repo, title)` + "\n"},
		{name: "missing required arg", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "write", "--op", "create_issue", "--args", `{"owner":"o","repo":"r"}`}, code: 2,
			stderr: `pinned grant seal: bad_args: arg "title" is required` + "\n"},
		{name: "arg over its max", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "read", "--op", "list_repos", "--args", `{"per_page":101}`}, code: 2,
			stderr: `pinned grant seal: bad_args: arg "per_page" must be at most 100` + "\n"},
		{name: "arg of the wrong type", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "read", "--op", "list_repos", "--args", `{"per_page":"ten"}`}, code: 2,
			stderr: `pinned grant seal: bad_args: arg "per_page" must be an integer (up to 2^53)` + "\n"},
		{name: "args larger than the host takes", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "write", "--op", "create_issue",
			"--args", `{"owner":"o","repo":"r","title":"t","body":"` + strings.Repeat("a", 70000) + `"}`}, code: 2,
			stderr: "pinned grant seal: bad_args: args are larger than 65536 bytes\n"},
		{name: "op-bound read grant with args", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "read", "--op", "list_repos", "--args", `{"per_page":100}`},
			check: func(t *testing.T, g *grant.Grant) {
				h, _ := grant.ArgsSHA256([]byte(`{"per_page":100}`))
				if g.Op != "list_repos" || g.ArgsSHA256 != h {
					t.Fatalf("grant %+v", g)
				}
			}},
		{name: "negative ttl", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "read", "--ttl", "-1m"}, code: 2, stderr: "--ttl must be positive"},
		{name: "bad member key", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "read", "--member-key", "x"}, code: 2, stderr: "--member-key"},
		{name: "empty token", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "read", "--token-env", "PINNED_TEST_EMPTY"}, code: 2, stderr: "no credential: set PINNED_TEST_EMPTY"},
		{name: "a token with a newline is refused as the host would", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "read", "--token-env", "PINNED_TEST_NEWLINE"}, code: 2,
			stderr: "pinned grant seal: credential_invalid: the credential holds characters an HTTP header cannot carry in PINNED_TEST_NEWLINE: strip the spaces and line breaks"},
		{name: "a refresh token with a space is refused", args: []string{"seal", "--bot-key", pub, "--service", "hubspot", "--access", "read", "--kind", "oauth",
			"--refresh-env", "PINNED_TEST_REFRESH_SPACE", "--member-key", member.Public().String()}, code: 2,
			stderr: "credential_invalid: the credential holds characters an HTTP header cannot carry in PINNED_TEST_REFRESH_SPACE"},
		{name: "--token-expires-at", args: []string{"seal", "--bot-key", pub, "--service", "hubspot", "--access", "read", "--kind", "oauth",
			"--refresh-env", "PINNED_TEST_REFRESH", "--token-expires-at", "2030-01-02T03:04:05+01:00", "--member-key", member.Public().String()},
			check: func(t *testing.T, g *grant.Grant) {
				if g.TokenExpiresAt != "2030-01-02T02:04:05Z" {
					t.Fatalf("token_expires_at %q", g.TokenExpiresAt)
				}
			}},
		{name: "--token-expires-at not RFC 3339", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "read", "--token-expires-at", "tomorrow"}, code: 2,
			stderr: `--token-expires-at "tomorrow": want RFC 3339`},
		{name: "stray argument", args: []string{"seal", "--bot-key", pub, "--service", "github", "--access", "read", "now"}, code: 2, stderr: `unexpected argument "now"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runGrant(tt.args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr.String(), tt.code, tt.stderr)
			}
			for _, f := range tt.stdout {
				if !strings.Contains(stdout.String(), f) {
					t.Errorf("stdout lacks %q:\n%s", f, &stdout)
				}
			}
			if strings.Contains(stdout.String()+stderr.String(), token) {
				t.Fatal("the token was printed")
			}
			if tt.code != 0 || tt.check == nil {
				return
			}
			out := stdout.String()
			if strings.Count(out, "\n") != 1 {
				t.Fatalf("stdout is not one line: %q", out)
			}
			g, err := grant.Open(strings.TrimSpace(out), bot)
			if err != nil {
				t.Fatalf("the bot cannot open the sealed grant: %v", err)
			}
			tt.check(t, g)
		})
	}
}

// TestRunGrantOpen: the member opens the rotated pair an op answer
// carried, and the printed assignments seal the next grant.
func TestRunGrantOpen(t *testing.T) {
	dir := t.TempDir()
	member, _ := grant.GenerateKey(nil)
	memberFile := filepath.Join(dir, "member.key")
	if err := grant.WriteKeyFile(memberFile, member, false); err != nil {
		t.Fatal(err)
	}
	other, _ := grant.GenerateKey(nil)
	otherFile := filepath.Join(dir, "other.key")
	if err := grant.WriteKeyFile(otherFile, other, false); err != nil {
		t.Fatal(err)
	}
	sealed, err := grant.SealRotated(&grant.Rotated{Service: "hubspot", Kind: "oauth", Access: "fresh-access-'1", Refresh: "fresh-refresh-2", TokenExpiresAt: "2030-01-02T03:04:05Z"}, member.Public(), nil)
	if err != nil {
		t.Fatal(err)
	}
	answer := filepath.Join(dir, "answer.json")
	if err := os.WriteFile(answer, []byte(`{"status":200,"data":{"id":1},"rotated":"`+sealed+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	errAnswer := filepath.Join(dir, "error.json")
	if err := os.WriteFile(errAnswer, []byte(`{"error":{"code":"upstream_error","message":"x"},"rotated":"`+sealed+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain.json")
	if err := os.WriteFile(plain, []byte(`{"status":200,"data":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := "export PINNED_TOKEN='fresh-access-'\\''1'\nexport PINNED_REFRESH='fresh-refresh-2'\nexport PINNED_TOKEN_EXPIRES_AT='2030-01-02T03:04:05Z'\n"
	tests := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string // whole stdout
		stderr string // fragment
	}{
		{name: "an op answer", args: []string{"--key", memberFile, "--in", answer}, stdout: env},
		{name: "an error answer", args: []string{"--key", memberFile, "--in", errAnswer}, stdout: env},
		{name: "the sealed pair on stdin", args: []string{"--key", memberFile}, stdin: sealed + "\n", stdout: env},
		{name: "json", args: []string{"--key", memberFile, "--in", answer, "--output", "json"},
			stdout: `{"service":"hubspot","kind":"oauth","access_token":"fresh-access-'1","refresh_token":"fresh-refresh-2","expires_at":"2030-01-02T03:04:05Z"}` + "\n"},
		{name: "another key", args: []string{"--key", otherFile, "--in", answer}, code: 1, stderr: "is --key the member key the grant named with --member-key?"},
		{name: "no rotated", args: []string{"--key", memberFile, "--in", plain}, code: 1, stderr: `the op answer has no "rotated"`},
		{name: "no key", args: []string{"--in", answer}, code: 2, stderr: "--key FILE is required"},
		{name: "--access without --bot-key", args: []string{"--key", memberFile, "--in", answer, "--access", "read"}, code: 2, stderr: "--access belongs to re-sealing: give --bot-key too"},
		{name: "bad output", args: []string{"--key", memberFile, "--output", "yaml"}, code: 2, stderr: `--output must be env or json, not "yaml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := console.in
			console.in = strings.NewReader(tt.stdin)
			defer func() { console.in = old }()
			var stdout, stderr bytes.Buffer
			code := runGrant(append([]string{"open"}, tt.args...), &stdout, &stderr)
			if code != tt.code || (tt.code == 0 && stdout.String() != tt.stdout) || !strings.Contains(stderr.String(), tt.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, &stdout, &stderr, tt.code, tt.stdout, tt.stderr)
			}
		})
	}

	t.Run("--bot-key re-seals the next grant", func(t *testing.T) {
		bot, _ := grant.GenerateKey(nil)
		var stdout, stderr bytes.Buffer
		code := runGrant([]string{"open", "--key", memberFile, "--in", answer, "--bot-key", bot.Public().String(), "--access", "read", "--ttl", "5m"}, &stdout, &stderr)
		if code != 0 || strings.Count(stdout.String(), "\n") != 1 || strings.Contains(stdout.String()+stderr.String(), "fresh-") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, &stdout, &stderr)
		}
		g, err := grant.Open(strings.TrimSpace(stdout.String()), bot)
		if err != nil {
			t.Fatal(err)
		}
		if g.Service != "hubspot" || g.Access != "read" || g.Kind != "oauth" || string(g.Secret) != "fresh-access-'1" || string(g.Refresh) != "fresh-refresh-2" ||
			g.TokenExpiresAt != "2030-01-02T03:04:05Z" || g.MemberKey != member.Public().String() {
			t.Fatalf("grant %+v", g)
		}
		if d := time.Until(g.ExpiresAt); d < 4*time.Minute || d > 5*time.Minute {
			t.Fatalf("expires in %s, want about 5m", d)
		}
	})
	t.Run("--bot-key needs --access", func(t *testing.T) {
		bot, _ := grant.GenerateKey(nil)
		var stdout, stderr bytes.Buffer
		code := runGrant([]string{"open", "--key", memberFile, "--in", answer, "--bot-key", bot.Public().String()}, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "pinned grant open: re-sealing needs --access too (read or write; the service is the pair's, hubspot)") {
			t.Fatalf("exit %d, stderr %q", code, &stderr)
		}
	})
}
