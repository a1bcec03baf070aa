package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
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
		{name: "check without files", args: []string{"check"}, code: 2, stderr: []string{"check: no files given", "Usage:"}},
		{name: "check unknown flag", args: []string{"check", "-x", github}, code: 2, stderr: []string{`unknown flag "-x"`}},
		{name: "check file after --", args: []string{"check", "--", github}, code: 0, stdout: []string{"ok: 1 manifests"}},
		{name: "help", args: []string{"--help"}, code: 0, stdout: []string{"pinned registry check FILE...", "Exit status"}},
		{name: "check help", args: []string{"check", "--help"}, code: 0, stdout: []string{"FILE:LINE:COL"}},
		{name: "no subcommand", args: nil, code: 2, stderr: []string{"missing subcommand"}},
		{name: "unknown subcommand", args: []string{"lint"}, code: 2, stderr: []string{`unknown subcommand "lint"`}},
		{name: "list", args: []string{"list"}, code: 0, stdout: []string{"SERVICE", "github", "api.github.com", "linear", "api.linear.app"}},
		{name: "list with args", args: []string{"list", "x"}, code: 2, stderr: []string{"list takes no arguments"}},
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

func TestRegistryListCounts(t *testing.T) {
	var stdout bytes.Buffer
	if code := runRegistry([]string{"list"}, &stdout, &bytes.Buffer{}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	services := registry.Default().Services()
	if len(lines) != 1+len(services) {
		t.Fatalf("got %d lines, want a header and %d services:\n%s", len(lines), len(services), &stdout)
	}
	for i, m := range services {
		if f := strings.Fields(lines[i+1]); len(f) != 3 || f[0] != m.ID || f[1] != m.Host || f[2] != strconv.Itoa(len(m.Ops)) {
			t.Errorf("line %q, want %s %s %d", lines[i+1], m.ID, m.Host, len(m.Ops))
		}
	}
}
