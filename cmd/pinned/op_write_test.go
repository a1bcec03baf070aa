package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
)

// TestRunOpWrites: a write op shows its confirm sentence and runs only
// after a yes at a terminal, or with --yes; --args reads files and stdin;
// --manifest runs a manifest that is not embedded, with a warning; a 401
// on the real path says what to check.
func TestRunOpWrites(t *testing.T) {
	useTestCache(t)
	t.Setenv("PINNED_TOKEN", "")
	t.Setenv("PINNED_TEST_WRONG_TOKEN", "ghp_not_the_fake_token_00000000000000000")
	t.Setenv("PINNED_TEST_NEWLINE_TOKEN", "ghp_pasted_with_a_newline\n")
	const issue = `{"owner":"pinned-tester","repo":"notes","title":"From the test"}`
	const confirm = "pinned op: github.create_issue writes: [GitHub: owner \"pinned-tester\", repo \"notes\"] Open an issue titled \"From the test\" in pinned-tester/notes?\n"
	dir := t.TempDir()
	argsFile := filepath.Join(dir, "args.json")
	if err := os.WriteFile(argsFile, []byte(issue+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A copy of the embedded GitHub manifest under a new id, as an author
	// would try it before it is embedded.
	data, err := os.ReadFile(filepath.Join("..", "..", "registry", "manifests", "github.json"))
	if err != nil {
		t.Fatal(err)
	}
	newManifest := filepath.Join(dir, "ghcopy.json")
	if err := os.WriteFile(newManifest, bytes.Replace(data, []byte(`"id": "github"`), []byte(`"id": "ghcopy"`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	fake, err := fakeapi.New()
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, fake.CACertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}

	openCache := filepath.Join(dir, "open-cache")
	if err := os.Mkdir(openCache, 0o700); err != nil || os.Chmod(openCache, 0o777) != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		terminal bool
		stdin    string
		code     int
		stdout   string // fragment
		stderr   string // whole stderr
		stderrIn string // fragment of stderr, when stderr is ""
	}{
		{name: "--yes runs it", args: []string{"--fake", "--service", "github", "--op", "create_issue", "--args", issue, "--yes"},
			stdout: `"title":"From the test"`, stderr: confirm},
		{name: "yes at a terminal runs it", args: []string{"--fake", "--service", "github", "--op", "create_issue", "--args", issue},
			terminal: true, stdin: "y\n", stdout: `"title":"From the test"`, stderr: confirm + "Run it? [y/N] "},
		{name: "anything else at a terminal does not", args: []string{"--fake", "--service", "github", "--op", "create_issue", "--args", issue},
			terminal: true, stdin: "\n", code: 1, stderr: confirm + "Run it? [y/N] pinned op: not run\n"},
		{name: "bad args of a write are refused before asking", args: []string{"--fake", "--service", "github", "--op", "create_issue", "--args", `{"owner":"pinned-tester","repo":"notes"}`},
			terminal: true, code: 1, stderr: "pinned op: bad_args: arg \"title\" is required\n"},
		{name: "--args @file", args: []string{"--fake", "--service", "github", "--op", "create_issue", "--args", "@" + argsFile, "--yes"},
			stdout: `"title":"From the test"`, stderr: confirm},
		{name: "--args - for a write needs --yes even at a terminal", args: []string{"--fake", "--service", "github", "--op", "create_issue", "--args", "-"},
			terminal: true, stdin: issue, code: 2, stderr: confirm + "pinned op: not run: the args came on stdin, which cannot also confirm the write; add --yes\n"},
		{name: "--args - reads stdin", args: []string{"--fake", "--service", "github", "--op", "list_repos", "--args", "-"},
			stdin: `{"per_page":2}`, stdout: `"full_name"`},
		{name: "--args - with bad JSON", args: []string{"--fake", "--service", "github", "--op", "list_repos", "--args", "-"},
			stdin: `{"per_page":2`, code: 2, stderr: "pinned op: --args on stdin: not valid JSON: it ends early (a missing } or \")\n"},
		{name: "--manifest adds a service, with a warning", args: []string{"--connect-to", fake.Addr(), "--cacert", ca, "--token-env", "PINNED_TEST_FAKE_TOKEN", "--service", "ghcopy", "--op", "get_viewer", "--manifest", newManifest},
			stdout: `"login":"pinned-tester"`, stderrIn: "pinned op: WARNING: --manifest " + newManifest + " adds service ghcopy for this run only; the sidecar runs only embedded manifests"},
		{name: "--fake with a new manifest names the missing token", args: []string{"--fake", "--service", "ghcopy", "--op", "get_viewer", "--manifest", newManifest},
			code: 2, stderrIn: "pinned op: no credential: the provider fake has no token for service ghcopy; set PINNED_TOKEN\n"},
		{name: "a 401 on the real path says what to check", args: []string{"--connect-to", fake.Addr(), "--cacert", ca, "--token-env", "PINNED_TEST_WRONG_TOKEN", "--service", "github", "--op", "get_viewer"},
			code: 1, stderrIn: "pinned op: api.github.com refused the credential in PINNED_TEST_WRONG_TOKEN: is it a GitHub token, unexpired, with the scopes the op needs? (--kind pat sends it as Authorization: Bearer)\n"},
		{name: "a cache directory that cannot be created names --cache-dir", args: []string{"--fake", "--service", "github", "--op", "get_viewer", "--cache-dir", filepath.Join(argsFile, "pinned", "wazero")},
			code: 2, stderrIn: "cannot be created: mkdir: not a directory\npinned op: set --cache-dir to a directory only this user can write"},
		{name: "a token the host would refuse", args: []string{"--token-env", "PINNED_TEST_NEWLINE_TOKEN", "--service", "github", "--op", "get_viewer"},
			code: 2, stderr: "pinned op: credential_invalid: the credential holds characters an HTTP header cannot carry in PINNED_TEST_NEWLINE_TOKEN: " + credentialHint + "\n"},
		{name: "--output table", args: []string{"--fake", "--service", "github", "--op", "get_viewer", "--output", "table"},
			stdout: "login       pinned-tester\nid          90210001\n", stderr: ""},
		{name: "--output table of a list", args: []string{"--fake", "--service", "github", "--op", "list_repos", "--args", `{"per_page":2}`, "--output", "table"},
			stdout: "FULL_NAME  ", stderr: ""},
		{name: "--output yaml", args: []string{"--fake", "--service", "github", "--op", "get_viewer", "--output", "yaml"},
			code: 2, stderr: "pinned op: --output must be json or table, not \"yaml\"\n"},
		{name: "a cache directory others can write is refused", args: []string{"--fake", "--service", "github", "--op", "get_viewer", "--cache-dir", openCache},
			code: 2, stderr: "pinned op: cache directory " + openCache + " has mode 0777: group or others can write the machine code it holds; run `chmod 700 " + openCache + "`\n" +
				"pinned op: set --cache-dir to a directory only this user can write (or --cache-dir '' to compile in memory at every start)\n"},
	}
	t.Setenv("PINNED_TEST_FAKE_TOKEN", fakeapi.Token("github"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := console
			console.in = strings.NewReader(tt.stdin)
			console.isTerminal = func() bool { return tt.terminal }
			defer func() { console = old }()
			var stdout, stderr bytes.Buffer
			code := runOp(tt.args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stdout.String(), tt.stdout) {
				t.Fatalf("exit %d, stdout %.200q, stderr %q; want %d and %q", code, &stdout, &stderr, tt.code, tt.stdout)
			}
			if (tt.stderr != "" && stderr.String() != tt.stderr) || !strings.Contains(stderr.String(), tt.stderrIn) {
				t.Fatalf("stderr\n got %q\nwant %q%q", &stderr, tt.stderr, tt.stderrIn)
			}
		})
	}
}

// TestManifestFlagIsCLIOnly: the sidecar runs only embedded manifests;
// --manifest exists on pinned op alone.
func TestManifestFlagIsCLIOnly(t *testing.T) {
	for _, c := range commands() {
		var stdout bytes.Buffer
		dispatch([]string{c.name, "--help"}, &stdout, &bytes.Buffer{})
		if has := strings.Contains(stdout.String(), "\n  -manifest "); has != (c.name == "op") {
			t.Errorf("pinned %s --help: has --manifest = %v", c.name, has)
		}
	}
}

// TestOpPromptShowsEverySentArg: pinned op's prompt, for every write op
// of every manifest with every arg given, shows each arg the request
// carries (the confirm line or its "- arg: value" entry) before it asks;
// declined, nothing reaches the provider. A mutation that drops one
// entry from the prompt is caught by the same check.
func TestOpPromptShowsEverySentArg(t *testing.T) {
	useTestCache(t)
	for _, w := range testutil.WriteOps() {
		service, name, op, args := w.Service, w.Name, w.Op, w.Args
		t.Run(w.Key(), func(t *testing.T) {
			old := console
			console.in = strings.NewReader("n\n")
			console.isTerminal = func() bool { return true }
			defer func() { console = old }()
			var stdout, stderr bytes.Buffer
			code := runOp([]string{"--fake", "--service", service, "--op", name, "--args", string(args)}, &stdout, &stderr)
			prompt, found := strings.CutPrefix(stderr.String(), "pinned op: "+service+"."+name+" writes: ")
			if code != 1 || !found || !strings.HasSuffix(prompt, "Run it? [y/N] pinned op: not run\n") {
				t.Fatalf("exit %d, stderr %q", code, &stderr)
			}
			prompt = strings.TrimSuffix(prompt, "\nRun it? [y/N] pinned op: not run\n")
			if miss := testutil.MissingFromConsent(op, args, prompt); len(miss) > 0 {
				t.Errorf("sent but not shown: %v in\n%s", miss, prompt)
			}
			for arg, v := range testutil.Carried(op, args) {
				e := testutil.Entry(arg, v)
				if strings.Contains(prompt, e) && len(testutil.MissingFromConsent(op, args, strings.Replace(prompt, e, "", 1))) == 0 {
					t.Errorf("dropping the entry of %s went unnoticed", arg)
				}
			}
		})
	}
}
