package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportTargets: every target row is written from `go test -bench`
// output (benchfmt renames benchmarks and units; the report must still
// find them), with the figures of the sample run.
func TestReportTargets(t *testing.T) {
	out := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	if err := runReport("testdata/bench.out", "", "missing-rss.json", "missing-ready.json", "", out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	report := string(b)
	tests := []struct {
		name string
		row  string // the row's first cell
		want string // a figure the row must hold
	}{
		{"viewer overhead", "| sandbox overhead per op, p50, viewer op, provider fake in process (≤ 20.0 µs) |", "µs"},
		{"repos100 overhead", "| sandbox overhead per op, p50, repos100 op, provider fake in process (≤ 40.0 µs) |", "native op p50"},
		{"sandbox alone", "| sandbox alone (instance, guest, checks, reset), p50 |", "× slower"},
		{"throughput", "| throughput with fresh-equivalent isolation, provider in its own process (≥ 5,000 ops/s) |", "ops/s"},
		{"pick", "| pick projection of a 100-repo page (≥ 5× encoding/json) |", "ms"},
		{"flow check", "| cross-service flow check per call (session of 460 recorded values): list_issues args; create_issue with a 16 KiB body |", "host.ValidateArgs"},
		{"flow record", "| recording a 100-repository page's values (flow control) |", "encoding/json decoding the same page"},
		{"redis state", "| Redis state store on loopback, added per op, p50 (≤ 100 µs; one round trip on the hot path) |", "the replay record alone: in memory"},
		{"replicas", "| throughput of 3 replicas on one Redis, 2 cores, one process |", "1 sidecar on the in-memory store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := strings.Index(report, tt.row)
			if i < 0 {
				t.Fatalf("no row %q in:\n%s", tt.row, report)
			}
			line := report[i:]
			line = line[:strings.IndexByte(line, '\n')]
			if !strings.Contains(line, tt.want) || !strings.Contains(line, "**met**") && !strings.Contains(line, "**not met**") && !strings.Contains(line, "(context)") {
				t.Fatalf("row %q lacks %q or a verdict", line, tt.want)
			}
		})
	}
	// The sample (testdata/bench.out, a `make bench` run): throughput
	// median 8448 ops/s over six runs, met; repos100 overhead 204 µs, not.
	for _, want := range []string{
		"| 8448 ops/s (7481 – 9988, n=6) | native executor 11008 ops/s (77% of it) | **met** |",
		"| 203.7 µs (151.7 µs – 319.6 µs, n=6) |",
		"**12.8×**",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
