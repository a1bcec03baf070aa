package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/registry"
)

func TestRunOp(t *testing.T) {
	// runOp builds its own engine with the CLI's compilation cache under
	// $XDG_CACHE_HOME. One directory for the whole test, and kept across
	// runs like the host package's test cache, so the guest is compiled
	// once per machine (compiling it under -race takes many seconds).
	useTestCache(t)
	t.Setenv("PINNED_TOKEN", "")
	t.Setenv("PINNED_TEST_OTHER_TOKEN", "")

	run := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := runOp(args, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}

	t.Run("pages against the fake", func(t *testing.T) {
		code, stdout, stderr := run(t, "--fake", "--service", "dnsimple", "--op", "list_domains", "--args", `{"account":1385,"per_page":10}`, "--pages", "2")
		if code != 0 {
			t.Fatalf("exit %d, stderr %s", code, stderr)
		}
		var domains []map[string]any
		if err := json.Unmarshal([]byte(stdout), &domains); err != nil || len(domains) != 20 {
			t.Fatalf("stdout is not 20 domains: %v: %.200s", err, stdout)
		}
		want := "pages: 2\nnext: {\"account\":1385,\"per_page\":10,\"page\":3}\nstopped: pages: read the 2 pages asked for; next continues\n"
		if stderr != want {
			t.Errorf("stderr %q, want %q", stderr, want)
		}
	})

	t.Run("pages over the op's bound", func(t *testing.T) {
		code, _, stderr := run(t, "--fake", "--service", "github", "--op", "list_repos", "--pages", "11")
		if code != 1 || stderr != "pinned op: bad_args: pages must be 1 to 10 for op github.list_repos\n" {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("negative pages", func(t *testing.T) {
		code, _, stderr := run(t, "--fake", "--service", "github", "--op", "list_repos", "--pages", "-1")
		if code != 2 || !strings.Contains(stderr, "--pages must be 1 or more") {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("list_repos per_page=100 against the fake", func(t *testing.T) {
		code, stdout, stderr := run(t, "--fake", "--service", "github", "--op", "list_repos", "--args", `{"per_page":100}`, "-v")
		if code != 0 {
			t.Fatalf("exit %d, stderr %s", code, stderr)
		}
		if !strings.HasSuffix(stdout, "\n") || strings.Count(stdout, "\n") != 1 {
			t.Errorf("stdout is not one line of JSON: %.200q", stdout)
		}
		var repos []map[string]json.RawMessage
		if err := json.Unmarshal([]byte(stdout), &repos); err != nil {
			t.Fatalf("stdout is not a JSON array: %v: %.200s", err, stdout)
		}
		if len(repos) != 100 {
			t.Fatalf("%d repos, want 100", len(repos))
		}
		m, _ := registry.Default().Service("github")
		op, _ := m.Op("list_repos")
		declared := map[string]bool{}
		for _, f := range op.Pick.Fields {
			declared[f] = true
		}
		for i, r := range repos {
			for k := range r {
				if !declared[k] {
					t.Fatalf("repo %d has undeclared field %q", i, k)
				}
			}
			if _, ok := r["full_name"]; !ok {
				t.Fatalf("repo %d has no full_name: %v", i, r)
			}
		}
		// -v: "status 200, N bytes raw from upstream, M bytes projected, D"
		// then the next page's args: list_repos pages.
		sizes, next, _ := strings.Cut(stderr, "\n")
		if next != `next: {"per_page":100,"page":2}`+"\n" {
			t.Errorf("stderr after the sizes is %q, want the next page's args", next)
		}
		mm := regexp.MustCompile(`^status 200, (\d+) bytes raw from upstream, (\d+) bytes projected, \S+$`).FindStringSubmatch(sizes)
		if mm == nil {
			t.Fatalf("stderr %q does not report the sizes", stderr)
		}
		raw, _ := strconv.Atoi(mm[1])
		projected, _ := strconv.Atoi(mm[2])
		if raw < 500000 {
			t.Errorf("raw %d bytes, want >= 500000", raw)
		}
		if projected > 65536 || projected != len(stdout)-1 {
			t.Errorf("projected %d bytes (stdout %d), want <= 65536 and equal to stdout", projected, len(stdout)-1)
		}
	})

	t.Run("--kind oauth sends the fake's OAuth token as Bearer", func(t *testing.T) {
		code, stdout, stderr := run(t, "--fake", "--kind", "oauth", "--service", "linear", "--op", "get_viewer")
		if code != 0 || !strings.Contains(stdout, `"email":"pinned-tester@example.org"`) {
			t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
		}
	})

	t.Run("-v shows why the provider was unreachable", func(t *testing.T) {
		// A fake's CA, and then nothing listening at its address.
		fake, err := fakeapi.New()
		if err != nil {
			t.Fatal(err)
		}
		ca := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(ca, fake.CACertPEM(), 0o600); err != nil {
			t.Fatal(err)
		}
		addr := fake.Addr()
		fake.Close()
		t.Setenv("PINNED_TEST_OTHER_TOKEN", fakeapi.Token("github"))
		args := []string{"--connect-to", addr, "--cacert", ca, "--token-env", "PINNED_TEST_OTHER_TOKEN", "--service", "github", "--op", "get_viewer"}
		code, _, stderr := run(t, args...)
		if code != 1 || stderr != "pinned op: upstream_unreachable: the provider could not be reached: connect: api.github.com:443 refused the connection\n" {
			t.Fatalf("without -v: exit %d stderr %q", code, stderr)
		}
		code, _, stderr = run(t, append(args, "-v")...)
		if code != 1 || !strings.HasPrefix(stderr, "pinned op: upstream_unreachable: the provider could not be reached: connect: api.github.com:443 refused the connection\npinned op: cause: ") ||
			!strings.Contains(stderr, "connection refused") {
			t.Fatalf("with -v: exit %d stderr %q", code, stderr)
		}
		if strings.Contains(stderr, fakeapi.Token("github")) {
			t.Fatal("the token leaked to stderr")
		}
	})

	t.Run("--cacert without a certificate", func(t *testing.T) {
		notPEM := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PINNED_TEST_OTHER_TOKEN", "x")
		code, _, stderr := run(t, "--connect-to", "127.0.0.1:8443", "--cacert", notPEM, "--token-env", "PINNED_TEST_OTHER_TOKEN", "--service", "github", "--op", "get_viewer")
		if code != 2 || !strings.HasPrefix(stderr, "pinned op: --cacert "+notPEM+": no PEM certificate in it (pinned fakeapi --ca-out writes one)\n") {
			t.Fatalf("exit %d stderr %q", code, stderr)
		}
	})

	t.Run("the token env var is used and never printed", func(t *testing.T) {
		const bad = "ghp_wrong_token_from_env_0000000000000000"
		t.Setenv("PINNED_TEST_OTHER_TOKEN", bad)
		code, stdout, stderr := run(t, "--fake", "--token-env", "PINNED_TEST_OTHER_TOKEN", "--service", "github", "--op", "get_viewer")
		if code != 1 || stdout != "" {
			t.Fatalf("exit %d stdout %q", code, stdout)
		}
		if stderr != "pinned op: upstream_error: Bad credentials (HTTP 401)\n"+
			"pinned op: the credential came from PINNED_TEST_OTHER_TOKEN; unset it to use the fake's own token\n" {
			t.Errorf("stderr %q", stderr)
		}
		if strings.Contains(stderr, bad) {
			t.Error("the token leaked to stderr")
		}
	})

	t.Run("upstream error prints code, message and status", func(t *testing.T) {
		code, stdout, stderr := run(t, "--fake", "--service", "github", "--op", "get_repo", "--args", `{"owner":"pinned-tester","repo":"no-such-repo"}`)
		if code != 1 || stdout != "" || stderr != "pinned op: upstream_error: Not Found (HTTP 404)\n" {
			t.Errorf("exit %d stdout %q stderr %q", code, stdout, stderr)
		}
	})

	tests := []struct {
		name   string
		args   []string
		code   int
		stderr []string // fragments
		exact  string   // whole stderr, when set
		stdout []string // fragments of stdout (help); otherwise stdout must be empty
		token  string   // value of PINNED_TEST_OTHER_TOKEN for the case
	}{
		{name: "unknown service lists the services", code: 1,
			args:  []string{"--token-env", "PINNED_TEST_OTHER_TOKEN", "--service", "githb", "--op", "list_repos"},
			token: "some-token",
			exact: "pinned op: unknown_service: unknown service \"githb\" (did you mean \"github\"?) (services: " + allServices + ")\n"},
		{name: "unknown service with --fake lists the services", code: 1,
			args:  []string{"--fake", "--service", "githb", "--op", "list_repos"},
			exact: "pinned op: unknown_service: unknown service \"githb\" (did you mean \"github\"?) (services: " + allServices + ")\n"},
		{name: "unknown op lists the ops", code: 1,
			args:  []string{"--fake", "--service", "github", "--op", "delete_repo"},
			exact: `pinned op: unknown_op: service github has no op "delete_repo" (ops: create_issue, get_pages, get_repo, get_viewer, list_issues, list_repos)` + "\n"},
		{name: "bad args", code: 1,
			args:  []string{"--fake", "--service", "github", "--op", "list_repos", "--args", `{"per_page":101}`},
			exact: `pinned op: bad_args: arg "per_page" must be at most 100` + "\n"},
		{name: "missing --service", code: 2,
			args:  []string{"--fake", "--op", "list_repos"},
			exact: "pinned op: --service is required: one of " + allServices + " (pinned registry list shows their ops)\n"},
		{name: "missing --op lists the service's ops", code: 2,
			args:  []string{"--fake", "--service", "github"},
			exact: "pinned op: --op is required: github's ops are " + joinList(githubOps()) + " (pinned registry show github explains each)\n"},
		{name: "missing --op of an unknown service", code: 2,
			args:  []string{"--fake", "--service", "githb"},
			exact: "pinned op: --op is required (see pinned registry list)\n"},
		{name: "empty --args", code: 2,
			args:  []string{"--fake", "--service", "github", "--op", "list_repos", "--args", ""},
			exact: `pinned op: --args: empty: give a JSON object, e.g. '{}' or '{"per_page":100}'` + "\n"},
		{name: "invalid --args JSON", code: 2,
			args:  []string{"--fake", "--service", "github", "--op", "list_repos", "--args", `{"per_page":}`},
			exact: `pinned op: --args: not valid JSON at byte 13 (near "er_page\":}"): invalid character '}' looking for beginning of value` + "\n"},
		{name: "--args with unquoted keys says so", code: 2,
			args:  []string{"--fake", "--service", "github", "--op", "list_repos", "--args", `{per_page:100}`},
			exact: `pinned op: --args: not valid JSON at byte 2 (near "{per_page:10"): invalid character 'p' looking for beginning of object key string; object keys need double quotes, e.g. '{"per_page":100}'` + "\n"},
		{name: "--args @file that is missing", code: 2,
			args:   []string{"--fake", "--service", "github", "--op", "list_repos", "--args", "@/nonexistent/args.json"},
			stderr: []string{"pinned op: --args @/nonexistent/args.json: no such file or directory\n"}},
		{name: "a write op without a terminal needs --yes", code: 2,
			args:  []string{"--fake", "--service", "github", "--op", "create_issue", "--args", `{"owner":"pinned-tester","repo":"notes","title":"<b>Hi</b> & bye"}`},
			exact: "pinned op: github.create_issue writes: [GitHub: owner \"pinned-tester\", repo \"notes\"] Open an issue titled \"<b>Hi</b> & bye\" in pinned-tester/notes?\npinned op: not run: a write op needs confirmation; add --yes to run it without a terminal\n"},
		{name: "--timeout negative", code: 2,
			args:  []string{"--fake", "--timeout", "-1s", "--service", "github", "--op", "get_viewer"},
			exact: "pinned op: --timeout must not be negative (0 means no deadline)\n"},
		{name: "no token and no --fake names the env var", code: 2,
			args:  []string{"--service", "github", "--op", "get_viewer"},
			exact: "pinned op: no credential: set PINNED_TOKEN (or use --fake)\n"},
		{name: "no token names the --token-env var", code: 2,
			args:  []string{"--token-env", "PINNED_TEST_OTHER_TOKEN", "--service", "github", "--op", "get_viewer"},
			exact: "pinned op: no credential: set PINNED_TEST_OTHER_TOKEN (or use --fake)\n"},
		{name: "--fake and --connect-to exclude each other", code: 2,
			args:  []string{"--fake", "--connect-to", "127.0.0.1:1", "--service", "github", "--op", "get_viewer"},
			exact: "pinned op: --fake and --connect-to exclude each other\n"},
		{name: "--connect-to needs --cacert", code: 2,
			args:   []string{"--connect-to", "127.0.0.1:1", "--service", "github", "--op", "get_viewer"},
			stderr: []string{"--connect-to needs --cacert"}},
		{name: "positional argument", code: 2,
			args:  []string{"--service", "github", "--op", "get_viewer", "extra"},
			exact: `pinned op: unexpected argument "extra" (flags only; see --help)` + "\n"},
		{name: "unknown flag", code: 2,
			args:  []string{"--token", "ghp_x", "--service", "github", "--op", "get_viewer"},
			exact: "pinned op: flag provided but not defined: -token\nrun 'pinned op --help' for usage\n"},
		{name: "bad flag value", code: 2,
			args:  []string{"--timeout", "soon", "--service", "github", "--op", "get_viewer"},
			exact: "pinned op: --timeout \"soon\" is not a duration: use e.g. 500ms, 15s, 2m or 1h\nrun 'pinned op --help' for usage\n"},
		{name: "--args valid JSON but not an object", code: 2,
			args:  []string{"--fake", "--service", "github", "--op", "list_repos", "--args", `[1]`},
			exact: `pinned op: --args: must be a JSON object, e.g. '{"per_page":100}', not [1]` + "\n"},
		{name: "--args a JSON string", code: 2,
			args:  []string{"--fake", "--service", "github", "--op", "list_repos", "--args", ` "x"`},
			exact: `pinned op: --args: must be a JSON object, e.g. '{"per_page":100}', not "x"` + "\n"},
		{name: "unknown --kind", code: 2,
			args:  []string{"--fake", "--kind", "bogus", "--service", "github", "--op", "get_viewer"},
			exact: `pinned op: --kind must be pat or oauth, not "bogus"` + "\n"},
		{name: "--connect-to not ip:port", code: 2,
			args:  []string{"--connect-to", "localhost", "--cacert", "ca.pem", "--service", "github", "--op", "get_viewer"},
			exact: `pinned op: --connect-to "localhost": want ip:port, the address pinned fakeapi printed (e.g. 127.0.0.1:8443)` + "\n"},
		{name: "--connect-to a host name", code: 2,
			args:  []string{"--connect-to", "localhost:8443", "--cacert", "ca.pem", "--service", "github", "--op", "get_viewer"},
			exact: `pinned op: --connect-to "localhost:8443": want ip:port, the address pinned fakeapi printed (e.g. 127.0.0.1:8443)` + "\n"},
		{name: "--cacert without --connect-to", code: 2,
			args:  []string{"--cacert", "ca.pem", "--service", "github", "--op", "get_viewer"},
			exact: "pinned op: --cacert needs --connect-to (it is the CA of the pinned fakeapi --connect-to names; --fake and real providers need none)\n"},
		{name: "--cacert with --fake", code: 2,
			args:   []string{"--fake", "--cacert", "ca.pem", "--service", "github", "--op", "get_viewer"},
			stderr: []string{"pinned op: --cacert needs --connect-to"}},
		{name: "unreadable --cacert", code: 2, token: "some-token",
			args:   []string{"--token-env", "PINNED_TEST_OTHER_TOKEN", "--connect-to", "127.0.0.1:1", "--cacert", filepath.Join(t.TempDir(), "nope.pem"), "--service", "github", "--op", "get_viewer"},
			stderr: []string{"pinned op: --cacert: open ", "no such file"}},
		{name: "--help", code: 0,
			args: []string{"--help"},
			stdout: []string{"Usage: pinned op --service S --op O", "-service id", "-token-env variable", "-fake", "-connect-to ip:port\n",
				"-cacert file", "-kind pat|oauth", "Exit status: 0 success, 1 the op failed"}},
		{name: "-h", code: 0,
			args:   []string{"-h"},
			stdout: []string{"Usage: pinned op"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PINNED_TEST_OTHER_TOKEN", tt.token)
			code, stdout, stderr := run(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			if len(tt.stdout) == 0 && stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			for _, f := range tt.stdout {
				if !strings.Contains(stdout, f) {
					t.Errorf("stdout %q lacks %q", stdout, f)
				}
			}
			if tt.code == 0 && stderr != "" {
				t.Errorf("stderr %q, want nothing", stderr)
			}
			if tt.exact != "" && stderr != tt.exact {
				t.Errorf("stderr\n got %q\nwant %q", stderr, tt.exact)
			}
			for _, f := range tt.stderr {
				if !strings.Contains(stderr, f) {
					t.Errorf("stderr %q lacks %q", stderr, f)
				}
			}
			for _, svc := range fakeapi.Services() {
				for _, tok := range []string{fakeapi.Token(svc), fakeapi.OAuthToken(svc)} {
					if tok != "" && strings.Contains(stderr, tok) { // a service without OAuth has no OAuth token
						t.Errorf("a fake %s token leaked to stderr: %q", svc, stderr)
					}
				}
			}
		})
	}
}

// githubOps is the embedded GitHub manifest's op names, sorted.
func githubOps() []string {
	m, _ := registry.Default().Service("github")
	return m.OpNames()
}
