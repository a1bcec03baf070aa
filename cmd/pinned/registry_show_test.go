package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRegistryShowArgs: pinned registry show SERVICE OP --args renders
// the request host.Render builds (the host's binding code) for the args.
func TestRegistryShowArgs(t *testing.T) {
	dir := t.TempDir()
	argsFile := filepath.Join(dir, "args.json")
	if err := os.WriteFile(argsFile, []byte(`{"account":1385,"domain":"example.org","registrant_id":2715}`), 0o600); err != nil {
		t.Fatal(err)
	}
	vault := filepath.Join("testdata", "vault.json")
	tests := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string // exact, when not ""
		frags  []string
		stderr []string
		never  []string // in neither stream
	}{
		{name: "read op with its default applied", args: []string{"show", "github", "list_repos", "--args", `{"sort":"pushed"}`},
			stdout: `github.list_repos (read): the request the host accepts for these args (nothing was sent)

GET https://api.github.com/user/repos?per_page=30&sort=pushed
Accept: application/vnd.github+json
X-Github-Api-Version: 2022-11-28

The host adds the credential (as Authorization: Bearer), User-Agent and Accept-Encoding: gzip,
and sends a request only if it is exactly this one (query pairs, form pairs and
JSON members in any order; the values of an array in theirs).
`},
		{name: "write op with its confirm sentence", args: []string{"show", "github", "create_issue", "--args", `{"owner":"octo","repo":"hello","title":"Fix <b> & co"}`},
			frags: []string{"github.create_issue (write)", "consent (shown to the member before it runs):\n  [GitHub: owner \"octo\", repo \"hello\"] Open an issue titled \"Fix <b> & co\" in octo/hello?\n",
				"\nPOST https://api.github.com/repos/octo/hello/issues\n", "Content-Type: application/json\n\n{\"title\":\"Fix <b> & co\"}\n"}},
		{name: "write op as JSON", args: []string{"show", "github", "create_issue", "--json", "--args", `{"owner":"octo","repo":"hello","title":"T"}`},
			frags: []string{`"service": "github"`, `"access": "write"`, `"url": "https://api.github.com/repos/octo/hello/issues"`,
				`"body": "{\"title\":\"T\"}"`, `"confirm": "[GitHub: owner \"octo\", repo \"hello\"] Open an issue titled \"T\" in octo/hello?"`}},
		{name: "--output table is text", args: []string{"show", "github", "get_viewer", "--output", "table", "--args", `{}`},
			frags: []string{"GET https://api.github.com/user\n"}},
		{name: "secret arg redacted", args: []string{"show", "vault", "put_secret", "--manifest", vault, "--args", `{"name":"db","value":"hunter2"}`},
			frags:  []string{"POST https://api.vault.example/v1/secrets/db?check=[redacted]\n", `{"value":"[redacted]","days":30}`, "Store a secret named db for 30 days?", "Secret args show as [redacted]."},
			stderr: []string{"pinned registry show: WARNING: --manifest testdata/vault.json adds service vault for this run only"},
			never:  []string{"hunter2"}},
		{name: "secret arg redacted in JSON", args: []string{"show", "vault", "put_secret", "--manifest", vault, "--json", "--args", `{"name":"db","value":"hunter2"}`},
			frags: []string{`"url": "https://api.vault.example/v1/secrets/db?check=[redacted]"`, `"body": "{\"value\":\"[redacted]\",\"days\":30}"`},
			never: []string{"hunter2"}},
		{name: "args from @file", args: []string{"show", "dnsimple", "register_domain", "--args", "@" + argsFile},
			frags: []string{"dnsimple.register_domain (write)", "costs real money", "POST https://api.dnsimple.com/v2/1385/registrar/domains/example.org/registrations\n", "\"registrant_id\":2715"}},
		{name: "args from stdin", args: []string{"show", "github", "list_repos", "--args", "-"}, stdin: `{"per_page":100}`,
			frags: []string{"GET https://api.github.com/user/repos?per_page=100\n"}},
		{name: "bad args: pinned op's bad_args message", args: []string{"show", "github", "create_issue", "--args", `{"owner":"octo"}`},
			code: 1, stderr: []string{"pinned registry show: bad_args: arg \"repo\" is required\n"}},
		{name: "bad args: above max", args: []string{"show", "github", "list_repos", "--args", `{"per_page":101}`},
			code: 1, stderr: []string{"pinned registry show: bad_args: arg \"per_page\" must be at most 100\n"}},
		{name: "bad args: undeclared", args: []string{"show", "github", "list_repos", "--args", `{"perpage":1}`},
			code: 1, stderr: []string{`pinned registry show: bad_args: op github.list_repos has no arg "perpage" (args: page, per_page, sort, visibility)`}},
		{name: "args not JSON", args: []string{"show", "github", "list_repos", "--args", `{per_page:100}`},
			code: 2, stderr: []string{"pinned registry show: --args: not valid JSON at byte 2", `object keys need double quotes`}},
		{name: "missing @file", args: []string{"show", "github", "list_repos", "--args", "@" + filepath.Join(dir, "nope.json")},
			code: 2, stderr: []string{"nope.json: no such file or directory"}},
		{name: "empty args are refused", args: []string{"show", "github", "list_repos", "--args", ""},
			code: 2, stderr: []string{"pinned registry show: --args: empty: give a JSON object"}},
		{name: "args without an op", args: []string{"show", "github", "--args", `{}`},
			code: 2, stderr: []string{"show --args renders one op's request: name the op"}},
		{name: "help names --args", args: []string{"show", "--help"},
			frags: []string{"show SERVICE OP --args JSON renders the request", "-args JSON", "-manifest file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := console.in
			console.in = strings.NewReader(tt.stdin)
			defer func() { console.in = old }()
			var stdout, stderr bytes.Buffer
			code := runRegistry(tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, &stdout, &stderr)
			}
			if tt.stdout != "" && stdout.String() != tt.stdout {
				t.Errorf("stdout\n%s\nwant\n%s", &stdout, tt.stdout)
			}
			for _, f := range tt.frags {
				if !strings.Contains(stdout.String(), f) {
					t.Errorf("stdout lacks %q:\n%s", f, &stdout)
				}
			}
			for _, f := range tt.stderr {
				if !strings.Contains(stderr.String(), f) {
					t.Errorf("stderr lacks %q:\n%s", f, &stderr)
				}
			}
			for _, f := range tt.never {
				if strings.Contains(stdout.String()+stderr.String(), f) {
					t.Errorf("output shows %q:\n%s\n%s", f, &stdout, &stderr)
				}
			}
			if code == 0 && strings.Contains(strings.Join(tt.args, " "), "--json") && !json.Valid(stdout.Bytes()) {
				t.Errorf("--json output is not JSON: %s", &stdout)
			}
		})
	}
}
