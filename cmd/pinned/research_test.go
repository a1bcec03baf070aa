package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/demo/fakemodel"
	"github.com/elevenmessenger/pinned/sidecar/api"
)

// TestRunResearchFake: pinned research --fake answers the seed's question
// with exactly the right domains, labelled as scripted, and prints each
// step, the refused write among them.
func TestRunResearchFake(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", filepath.Join(os.TempDir(), "pinned-test-cmd-xdg-cache"))
	var stdout, stderr bytes.Buffer
	code := runResearch([]string{"--fake", "--service", "github", "--service", "dnsimple", "Which of my DNSimple domains", "point at GitHub Pages?"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, &stdout, &stderr)
	}
	out := stdout.String()
	_, answer, _ := strings.Cut(out, "result bytes):\n")
	for _, d := range fakeapi.ResearchDomains {
		if got, want := strings.Contains(answer, d), slices.Contains(fakeapi.PagesDomains, d); got != want {
			t.Errorf("answer mentions %s: %v, want %v", d, got, want)
		}
	}
	for _, want := range []string{"SCRIPTED MODEL", "question: Which of my DNSimple domains point at GitHub Pages?", fakemodel.ScriptedLabel,
		"github.create_issue            access_denied", "^ on purpose: a repository description", "dnsimple.list_zone_records     ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

func TestRunResearchUsage(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("PINNED_TOKEN_GITHUB", "")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no question", []string{"--fake", "--service", "github"}, "the question is required"},
		{"no service", []string{"--fake", "q"}, "name at least one --service"},
		{"unknown service", []string{"--fake", "--service", "nope", "q"}, `unknown service "nope"`},
		{"unknown flag", []string{"--bogus", "q"}, "flag provided but not defined: -bogus"},
		{"fake and a key", []string{"--fake", "--model-key-file", "k", "--service", "github", "q"}, "--fake uses the scripted model"},
		{"no model key", []string{"--service", "github", "q"}, "no API key: give a key file or set ANTHROPIC_API_KEY"},
		{"bad tool calls", []string{"--fake", "--service", "github", "--tool-calls", "1000", "q"}, "tool_calls must be between 1 and 64"},
		{"fractional wall time", []string{"--fake", "--service", "github", "--wall-time", "1.5s", "q"}, "--wall-time must be whole seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := runResearch(tt.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("exit %d, stderr %q, want 2 and %q", code, &stderr, tt.want)
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if code := runResearch([]string{"--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "Usage: pinned research") {
		t.Errorf("--help: %d %s", code, &stdout)
	}
}

// TestResearchOutputCannotDriveTerminal: what `pinned research` prints of a model's
// choosing (the answer, a step's tool name and args) cannot drive the
// terminal: ANSI CSI and OSC sequences, C1 controls, bidi overrides and
// tag characters come out as visible escapes; the answer keeps its lines.
func TestResearchOutputCannotDriveTerminal(t *testing.T) {
	tests := []struct {
		name, in  string
		keepLines bool
		want      string
	}{
		{"plain", "example.com points at GitHub Pages.", true, "example.com points at GitHub Pages."},
		{"lines kept in the answer", "a\n\tb", true, "a\n\tb"},
		{"lines escaped in a step", "a\nb", false, `a\u000ab`},
		{"csi clear screen", "\x1b[2J\x1b[Hdone", true, `\u001b[2J\u001b[Hdone`},
		{"osc 8 link", "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07", true, `\u001b]8;;https://evil.example\u0007click\u001b]8;;\u0007`},
		{"c1 csi", "\u009b31mred", true, `\u009b31mred`},
		{"bidi override", "abc\u202edef", true, `abc\u202edef`},
		{"tag characters", "x\U000E0069\U000E0067", true, `x\U000e0069\U000e0067`},
		{"carriage return", "safe\rEVIL", true, `safe\u000dEVIL`},
		{"line separator", "safe\u2028EVIL\u2029", true, `safe\u2028EVIL\u2029`},
		{"invalid utf-8", "a\xffb", true, "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := termSafe(tt.in, tt.keepLines); got != tt.want {
				t.Errorf("termSafe(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	line := stepLine(api.Step{Tool: "x\x1b[2J", Args: json.RawMessage(`{"a":"\u009b"}`), Outcome: "unknown_op"})
	if strings.ContainsAny(line, "\x1b\u009b") {
		t.Errorf("stepLine %q holds a control", line)
	}
	// One spelling for people: a tool outside the palette is service.op too.
	for _, st := range []api.Step{{Service: "github", Op: "get_viewer", Outcome: "ok"}, {Tool: "github__create_issue", Outcome: "access_denied"}} {
		if line := stepLine(st); strings.Contains(line, "__") || !strings.HasPrefix(line, "github.") {
			t.Errorf("stepLine(%+v) = %q, want service.op", st, line)
		}
	}
}
