package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/internal/fakeapi"
	"github.com/elevenmessenger/pinned/internal/fakemodel"
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
		"github__create_issue           access_denied", "dnsimple.list_zone_records     ok"} {
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
