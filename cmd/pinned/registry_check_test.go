package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/registry"
)

func TestRunRegistry(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	github := write("github.json", string(registry.Default().Raw("github")))
	linear := write("linear.json", string(registry.Default().Raw("linear")))
	if err := os.Mkdir(filepath.Join(dir, "slip"), 0o755); err != nil {
		t.Fatal(err)
	}
	slip := write("slip/linear.json", strings.Replace(string(registry.Default().Raw("linear")), "{ nodes {", "{nodes {", 1))
	renamed := write("gh.json", string(registry.Default().Raw("github")))
	acmeYAML := filepath.Join("..", "..", "registry", "openapi", "testdata", "acmenotes.yaml")
	acmeJSON := filepath.Join("..", "..", "registry", "openapi", "testdata", "acmenotes.json")
	draft := filepath.Join(dir, "acmenotes.json")

	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     []string // fragments of stdout
		stderr     []string // fragments of stderr
		stderrRows int      // when > 0, the exact number of stderr lines
	}{
		{name: "check passes", args: []string{"check", github, linear}, code: 0, stdout: []string{"ok: 2 manifests\n"}},
		{name: "check refuses a slip", args: []string{"check", github, slip}, code: 1,
			stderr: []string{slip + ":", `op "list_teams": body_json.query: "{nodes" starts a placeholder`}, stderrRows: 1},
		{name: "check reports every file", args: []string{"check", slip, renamed}, code: 1,
			stderr: []string{`"{nodes"`, renamed + `:3:9: id: "github" must equal the file name`}, stderrRows: 2},
		{name: "check the same id twice", args: []string{"check", github, github}, code: 1,
			stderr: []string{`id: "github" is also the id of ` + github}},
		{name: "check missing file", args: []string{"check", filepath.Join(dir, "nope.json")}, code: 1, stderr: []string{"nope.json: cannot read"}},
		{name: "check without files", args: []string{"check"}, code: 2, stderr: []string{"pinned registry: check: no files given\nrun 'pinned registry --help' for usage\n"}, stderrRows: 2},
		{name: "check unknown flag", args: []string{"check", "-x", github}, code: 2,
			stderr: []string{"pinned registry: check: flag provided but not defined: -x\nrun 'pinned registry --help' for usage\n"}, stderrRows: 2},
		{name: "check file after --", args: []string{"check", "--", github}, code: 0, stdout: []string{"ok: 1 manifest\n"}},
		{name: "check a directory", args: []string{"check", filepath.Join("..", "..", "registry", "manifests")}, code: 0, stdout: []string{fmt.Sprintf("ok: %d manifests\n", len(registry.Default().Services()))}},
		{name: "help", args: []string{"--help"}, code: 0, stdout: []string{"pinned registry check FILE|DIR...", "Exit status"}},
		{name: "list --json is the registry document", args: []string{"list", "--json"}, code: 0, stdout: []string{`{"digest":"sha256:`, `"services":[{"manifest":1,"id":"` + registry.Default().IDs()[0] + `"`}},
		{name: "list --output json", args: []string{"list", "--output", "json"}, code: 0, stdout: []string{`"services":[`}},
		{name: "list --output yaml", args: []string{"list", "--output", "yaml"}, code: 2, stderr: []string{`pinned registry list: --output "yaml": want table or json`}},
		{name: "show a service", args: []string{"show", "github"}, code: 0, stdout: []string{"GitHub (github)", "host:  https://api.github.com", "create_issue  write   POST /repos/{owner}/{repo}/issues"}},
		{name: "show an op", args: []string{"show", "dnsimple", "register_domain"}, code: 0,
			stdout: []string{"dnsimple.register_domain (write)", "confirm (shown to the member before it runs, after its target", "target (shown first): account, domain", "costs real money", "request:\n  POST https://api.dnsimple.com/", "args:\n", "registrant_id", "returns (pick; nothing else comes back):"}},
		{name: "show an op as JSON", args: []string{"show", "github", "create_issue", "--json"}, code: 0, stdout: []string{`"access": "write"`, `"confirm": "Open an issue titled \"{title}\" in {owner}/{repo}?"`}},
		{name: "show a typo", args: []string{"show", "github", "create_isue"}, code: 1, stderr: []string{`service github has no op "create_isue" (did you mean "create_issue"?)`}},
		{name: "show nothing", args: []string{"show"}, code: 2, stderr: []string{"show takes SERVICE and optionally OP"}},
		{name: "check help", args: []string{"check", "--help"}, code: 0, stdout: []string{"FILE:LINE:COL"}},
		{name: "no subcommand", args: nil, code: 2, stderr: []string{"missing subcommand"}},
		{name: "unknown subcommand", args: []string{"lnit"}, code: 2, stderr: []string{`unknown subcommand "lnit" (did you mean "lint"?)`}},
		{name: "import lists operations", args: []string{"import", "openapi", acmeYAML, "--list"}, code: 0,
			stdout: []string{"METHOD  PATH", "GET     /v2/notebooks                      listNotebooks"}},
		{name: "import writes a draft check refuses", args: []string{"import", "openapi", acmeYAML, "getCurrentUser", "POST /v2/notebooks/{notebook_id}/notes", "--id", "acmenotes", "-o", draft}, code: 0,
			stderr: []string{"wrote the draft " + draft}},
		{name: "import never overwrites", args: []string{"import", "openapi", acmeYAML, "getCurrentUser", "-o", draft}, code: 1, stderr: []string{"file exists"}},
		{name: "check refuses the draft", args: []string{"check", draft}, code: 1,
			stderr: []string{draft + ":2:12: draft: this manifest is a draft written by `pinned registry import`"}, stderrRows: 1},
		{name: "import an unknown operation", args: []string{"import", "openapi", acmeYAML, "listNotebok"}, code: 1, stderr: []string{`did you mean "listNotebooks"?`}},
		{name: "import without operations", args: []string{"import", "openapi", acmeYAML}, code: 2, stderr: []string{"no operations given"}},
		{name: "import of another format", args: []string{"import", "raml", acmeYAML}, code: 2, stderr: []string{`unknown format "raml"`}},
		{name: "import help", args: []string{"import", "--help"}, code: 0, stdout: []string{"DRAFT manifest", "Adding a service in an afternoon"}},
		{name: "lint agrees", args: []string{"lint", "--openapi", acmeYAML, acmeJSON}, code: 0, stdout: []string{"ok: 4 ops agree with acmenotes.yaml\n"}},
		{name: "lint one op", args: []string{"lint", "--openapi", acmeYAML, "--op", "list_notes", acmeJSON}, code: 0, stdout: []string{"ok: 1 op agree"}},
		{name: "lint disagrees", args: []string{"lint", "--openapi", acmeYAML, github}, code: 1,
			stderr: []string{github + `: op "get_viewer": path: "/user" is not a path of the description`}},
		{name: "lint without a description", args: []string{"lint", github}, code: 2, stderr: []string{"--openapi FILE is required"}},
		{name: "list", args: []string{"list"}, code: 0, stdout: []string{"SERVICE", "OP", "ACCESS", "github", "api.github.com", "create_issue", "linear", "api.linear.app", "list_teams"}},
		{name: "list help", args: []string{"list", "--help"}, code: 0, stdout: []string{"list prints one line per op"}},
		{name: "list with args", args: []string{"list", "x"}, code: 2, stderr: []string{"pinned registry: list takes no arguments\nrun 'pinned registry --help' for usage\n"}, stderrRows: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runRegistry(tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, &stdout, &stderr)
			}
			for _, f := range tt.stdout {
				if !strings.Contains(stdout.String(), f) {
					t.Errorf("stdout lacks %q:\n%s", f, &stdout)
				}
			}
			for _, f := range tt.stderr {
				if !strings.Contains(stderr.String(), f) {
					t.Errorf("stderr lacks %q:\n%s", f, &stderr)
				}
			}
			if n := strings.Count(stderr.String(), "\n"); tt.stderrRows > 0 && n != tt.stderrRows {
				t.Errorf("stderr has %d lines, want %d (one per problem):\n%s", n, tt.stderrRows, &stderr)
			}
		})
	}
}

// TestRegistryList: one line per op of the embedded registry, in
// service and op order, under a header, with aligned columns.
func TestRegistryList(t *testing.T) {
	var stdout bytes.Buffer
	if code := runRegistry([]string{"list"}, &stdout, &bytes.Buffer{}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	type row struct{ service, host, op, access, summary string }
	var want []row
	for _, m := range registry.Default().Services() {
		for _, name := range m.OpNames() {
			op, _ := m.Op(name)
			want = append(want, row{m.ID, m.Host, name, op.Access, op.Summary})
		}
	}
	if len(lines) != 1+len(want) {
		t.Fatalf("got %d lines, want a header and %d ops:\n%s", len(lines), len(want), &stdout)
	}
	if f := strings.Fields(lines[0]); strings.Join(f, " ") != "SERVICE HOST OP ACCESS SUMMARY" {
		t.Errorf("header %q", lines[0])
	}
	// The columns start where the header's do.
	cols := []int{0}
	for _, h := range []string{"HOST", "OP ", "ACCESS", "SUMMARY"} {
		cols = append(cols, strings.Index(lines[0], h))
	}
	for i, w := range want {
		t.Run(w.service+"."+w.op, func(t *testing.T) {
			line := lines[i+1]
			var got []string
			for j, c := range cols {
				end := len(line)
				if j+1 < len(cols) {
					end = cols[j+1]
				}
				if c > len(line) || end > len(line) {
					t.Fatalf("line %q is shorter than the header's columns %v", line, cols)
				}
				if c > 0 && line[c-1] != ' ' {
					t.Fatalf("line %q: column %d does not start at %d", line, j, c)
				}
				got = append(got, strings.TrimSpace(line[c:end]))
			}
			if g := (row{got[0], got[1], got[2], got[3], got[4]}); g != w {
				t.Errorf("line %q\n got %+v\nwant %+v", line, g, w)
			}
			if w.access != "read" && w.access != "write" {
				t.Errorf("access %q", w.access)
			}
		})
	}
	// Every op of a service, for a script.
	var github []string
	for _, l := range lines[1:] {
		if f := strings.Fields(l); f[0] == "github" {
			github = append(github, f[2]+":"+f[3])
		}
	}
	if g := strings.Join(github, " "); g != "create_issue:write get_pages:read get_repo:read get_viewer:read list_issues:read list_repos:read" {
		t.Errorf("github ops %q", g)
	}
}
