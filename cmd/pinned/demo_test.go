package main

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/demo/fakemodel"
	"github.com/elevenmessenger/pinned/registry"
)

func TestIsolationPhrase(t *testing.T) {
	tests := []struct {
		strategy string
		want     string
	}{
		{host.IsolationReset, "in pooled sandbox instances, each restored byte for byte to its post-initialization state before the op (isolation strategy: reset)"},
		{host.IsolationFresh, "in a fresh sandbox instance each (isolation strategy: fresh)"},
		{"fresh (the guest exports a table)", "in a fresh sandbox instance each (isolation strategy: fresh (the guest exports a table))"},
	}
	for _, tt := range tests {
		t.Run(tt.strategy, func(t *testing.T) {
			if got := isolationPhrase(tt.strategy); got != tt.want {
				t.Errorf("isolationPhrase(%q)\n got %q\nwant %q", tt.strategy, got, tt.want)
			}
		})
	}
}

// TestRunDemo runs the demo against its in-process fake: every op
// succeeds, and the closing sentence names the isolation strategy the
// engine used.
func TestRunDemo(t *testing.T) {
	useTestCache(t)
	ctx := context.Background()
	eng, err := host.New(ctx, host.Config{CacheDir: defaultCacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	strategy := eng.Strategy()
	eng.Close(ctx)

	var stdout, stderr bytes.Buffer
	if code := runDemo(nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, &stdout, &stderr)
	}
	// Every service of the registry runs its viewer and a list op.
	for _, m := range registry.Default().Services() {
		if !strings.Contains(stdout.String(), "\n"+m.ID+" ") || listOp(m) == "" || !strings.Contains(stdout.String(), " "+listOp(m)+" ") {
			t.Errorf("the demo runs no viewer and list op of %s:\n%s", m.ID, &stdout)
		}
	}
	want := "\nAll " + strconv.Itoa(len(demoOps())) + " ops ran " + isolationPhrase(strategy) + "; every result holds only the fields its manifest's pick names.\n"
	if !strings.Contains(stdout.String(), want) {
		t.Errorf("stdout lacks %q:\n%s", want, &stdout)
	}
	if strategy == host.IsolationReset && strings.Contains(stdout.String(), "fresh sandbox") {
		t.Errorf("the demo claims fresh instances under the reset strategy:\n%s", &stdout)
	}
	// The research step answers with exactly the domains that point at
	// GitHub Pages, labelled as scripted.
	_, answer, _ := strings.Cut(stdout.String(), "no credential did):\n")
	for _, d := range fakeapi.ResearchDomains {
		if got, want := strings.Contains(answer, d), slices.Contains(fakeapi.PagesDomains, d); got != want {
			t.Errorf("the research answer mentions %s: %v, want %v:\n%s", d, got, want, answer)
		}
	}
	if !strings.Contains(stdout.String(), "SCRIPTED MODEL") || !strings.Contains(answer, fakemodel.ScriptedLabel) {
		t.Errorf("the research step is not labelled as scripted:\n%s", &stdout)
	}
	if strings.Contains(stdout.String(), "FAILED") || stderr.Len() > 0 {
		t.Errorf("stdout %s\nstderr %s", &stdout, &stderr)
	}
}
