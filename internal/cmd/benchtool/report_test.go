package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestReportTargets: every target row is written from `go test -bench`
// output (benchfmt renames benchmarks and units; the report must still
// find them), with the figures of the sample run.
func TestReportTargets(t *testing.T) {
	report := reportFor(t, "missing-rss.json", "missing-ready.json", "", "")
	tests := []struct {
		name string
		row  string // the row's first cell
		want string // a figure the row must hold
	}{
		{"viewer overhead", "| sandbox overhead per op, p50, viewer op, provider fake in process (≤ 20.0 µs) |", "µs"},
		{"repos100 overhead", "| sandbox overhead per op, p50, repos100 op, provider fake in process (≤ 40.0 µs) |", "native op p50"},
		{"sandbox alone", "| sandbox alone (instance, guest, checks; the reset on another goroutine unless every slot waits for one), p50 |", "× slower"},
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
	wantInReport(t, report,
		"| 8448 ops/s (7481 – 9988, n=6) | native executor 11008 ops/s (77% of it) | **met** |",
		"| 203.7 µs (151.7 µs – 319.6 µs, n=6) |",
		"**12.8×**",
	)
}

// TestReportRSS: the memory rows are written from rss.json (a real run of
// benchtool rss): the sidecar process's peak against the goal, its figure
// per op, the harness's process apart, and where the memory is.
func TestReportRSS(t *testing.T) {
	b := reportFor(t, "testdata/rss.json", "missing-ready.json", "", "")
	wantInReport(t, b,
		"| 1000 ops in flight, upstream holds each 500 ms: the sidecar process's peak RSS (≤ 150 MiB), all succeed, past the limit busy | peak RSS 132 MiB (61 KiB per op over its baseline); answers map[200 :1000]; op 1001: HTTP 503 busy; 1326 ms | sidecar process before the load 72 MiB; the harness's own process (provider fake, load generator) peaked at 100 MiB apart | **met** |",
		"| where the sidecar's memory is with 1000 ops held upstream | heap in use 49 MiB (+31 KiB per op), goroutine stacks 23 MiB (3009 goroutines, +23 KiB per op), RSS 123 MiB, PSS 105 MiB |",
		"## Memory with 1000 ops in flight (benchtool rss)",
	)
}

// TestReportRSSVerdict: the verdict follows the peak and the answers.
func TestReportRSSVerdict(t *testing.T) {
	base := rssResult{InFlight: 10, HoldMS: 500, Statuses: map[string]int{"200 ": 10}, ExtraStatus: 503, ExtraCode: "busy", PeakRSS: 100 << 20, BaselineRSS: 70 << 20}
	tests := []struct {
		name string
		edit func(*rssResult)
		want string
	}{
		{"under the goal", func(*rssResult) {}, "**met**"},
		{"over the goal", func(r *rssResult) { r.PeakRSS = 151 << 20 }, "**not met**"},
		{"an op failed", func(r *rssResult) { r.Statuses = map[string]int{"200 ": 9, "502 upstream_error": 1} }, "**not met**"},
		{"past the limit not busy", func(r *rssResult) { r.ExtraStatus, r.ExtraCode = 200, "" }, "**not met**"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base
			tt.edit(&r)
			dir := t.TempDir()
			js, _ := json.Marshal(r)
			if err := os.WriteFile(filepath.Join(dir, "rss.json"), js, 0o644); err != nil {
				t.Fatal(err)
			}
			b := reportFor(t, filepath.Join(dir, "rss.json"), "missing-ready.json", "", "")
			i := strings.Index(b, "| 10 ops in flight")
			if i < 0 {
				t.Fatalf("no rss row in:\n%s", b)
			}
			line := b[i:]
			line = line[:strings.IndexByte(line, '\n')]
			if !strings.HasSuffix(line, "| "+tt.want+" |") {
				t.Errorf("row %q: want verdict %s", line, tt.want)
			}
		})
	}
}

// TestReportReady: the start rows are written from ready.json (a real
// run of benchtool ready): the medians against the goals, when the
// reset pool took over from fresh instances, when a cold start's machine
// code was ready (it served on the interpreter until then, at the cost
// bench.out's BenchmarkSandbox/interpreter gives), and the process's own
// start as the same run's floor; beside them, what each
// dependency adds to the guest (a real run of benchtool guestsize).
func TestReportReady(t *testing.T) {
	b := reportFor(t, "testdata/rss.json", "testdata/ready.json", "", "testdata/guest-size.md")
	wantInReport(t, b,
		"| sidecar ready, compilation cache warm (≤ 50 ms) | 237 ms (median of 7 starts, 216–257 ms; [227.066 256.58 240.469 240.616 221.477 216.067 237.064]); the reset pool took over at 292 ms (ops before it run in fresh instances) | cold cache 421 ms (median of 7;",
		"the process's own start, `pinned help` from start to exit (the Go runtime and every package's initialization, no sandbox): 65 ms (median of 7; [62.468 65.199 68.335 63.24 63.828 66.457 76.629]); page faults from the start to the first 200 (medians, minor and major, file-backed ones included): warm 8024, cold 17621; `pinned help` 2016 | **not met** |",
		"| sidecar ready, compilation cache empty (≤ 400 ms) | 421 ms (median of 7 starts, 347–458 ms; 5 of them over 400 ms); it serves on wazero's interpreter until the guest's machine code is ready, at 1062 ms (median); the sandbox's part of an op there, p50: a fresh interpreter instance 20.28 ms (n=2, too few runs for a 95% interval), against a fresh instance on machine code 6.38 ms (5.96 ms – 6.93 ms, n=6) (BenchmarkSandbox/interpreter, /fresh); the reset pool took over at 1202 ms (ops before it run in fresh instances) | warm cache 237 ms | **not met** |",
		"## What each dependency adds to the guest (benchtool guestsize)",
		"| regexp/syntax | 82 | 177960 | 10.3% |",
	)
}

// TestReportReadyFaults: with bench.out's cost of a page fault, the warm
// row says what the warm start's faults would take at that cost; a
// ready.json without fault counts (off Linux) says nothing of faults.
func TestReportReadyFaults(t *testing.T) {
	bench, err := os.ReadFile("testdata/bench.out")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	withFault := filepath.Join(dir, "bench.out")
	line := "BenchmarkPageFault/fault-2 \t 1000 \t 12000 ns/op \t 10000 ns/page\n"
	if err := os.WriteFile(withFault, append(bench, line...), 0o644); err != nil {
		t.Fatal(err)
	}
	var noFaults readyResult
	rb, err := os.ReadFile("testdata/ready.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rb, &noFaults); err != nil {
		t.Fatal(err)
	}
	noFaults.ColdFaults, noFaults.WarmFaults, noFaults.HelpFaults = nil, nil, nil
	js, _ := json.Marshal(noFaults)
	noFaultsPath := filepath.Join(dir, "ready-nofaults.json")
	if err := os.WriteFile(noFaultsPath, js, 0o644); err != nil {
		t.Fatal(err)
	}
	// 8024 faults at 10 µs: 80 ms.
	wantInReport(t, reportFrom(t, withFault, "testdata/rss.json", "testdata/ready.json", "", ""),
		"`pinned help` 2016; not measured, an estimate: if each of the warm start's 8024 faults cost what BenchmarkPageFault's first write to a fresh anonymous page does, 10.0 µs (n=1, too few runs for a 95% interval), they would take 80 ms | **not met** |")
	if r := reportFrom(t, withFault, "testdata/rss.json", noFaultsPath, "", ""); strings.Contains(r, "page faults from the start") {
		t.Errorf("a ready.json without fault counts gave a fault clause:\n%s", r)
	}
}

// TestStatFaults: minflt and majflt are read from /proc/PID/stat after
// the last ')', whatever the command's name holds; a line that is not
// one is refused.
func TestStatFaults(t *testing.T) {
	tests := []struct {
		name string
		stat string
		want int64
		ok   bool
	}{
		{"plain", "123 (pinned) S 1 123 123 0 -1 4194560 8000 0 24 0 5 3", 8024, true},
		{"name with spaces and parentheses", "123 (a) b (c)) S 1 123 123 0 -1 4194560 7 0 3 0 5 3", 10, true},
		{"no parenthesis", "123 pinned S 1 123 123 0 -1 4194560 8000 0 24 0", 0, false},
		{"too few fields", "123 (pinned) S 1 123", 0, false},
		{"not a number", "123 (pinned) S 1 123 123 0 -1 4194560 x 0 24 0 5 3", 0, false},
		{"negative", "123 (pinned) S 1 123 123 0 -1 4194560 -5 0 24 0 5 3", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := statFaults([]byte(tt.stat))
			if got != tt.want || ok != tt.ok {
				t.Errorf("statFaults(%q) = %d, %v; want %d, %v", tt.stat, got, ok, tt.want, tt.ok)
			}
		})
	}
	// This process's own count is read and has grown past zero.
	if runtime.GOOS != "linux" {
		return
	}
	if f, ok := processFaults(os.Getpid()); !ok || f <= 0 {
		t.Errorf("processFaults(self) = %d, %v; want > 0, true", f, ok)
	}
}

// reportFor writes a report from testdata/bench.out and the given rss,
// ready, profile and guest-size files ("" for none) and returns it.
// wantInReport fails t for each of wants that report lacks.
func wantInReport(t *testing.T, report string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func reportFor(t *testing.T, rss, ready, profile, guestSize string) string {
	t.Helper()
	return reportFrom(t, "testdata/bench.out", rss, ready, profile, guestSize)
}

// reportFrom is reportFor with another bench output than the sample's.
func reportFrom(t *testing.T, bench, rss, ready, profile, guestSize string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	if err := runReport(bench, "", rss, ready, "", profile, guestSize, out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPlatformLine: the hypervisor flag is read from the flags line only,
// the THP mode from its brackets, and what is missing is "unknown".
func TestPlatformLine(t *testing.T) {
	tests := []struct {
		name           string
		cpuinfo, idle  string
		thp            string
		wantVM, wantID string
		wantTHP        string
	}{
		{"VM", "model name\t: AMD EPYC\nflags\t\t: fpu vme hypervisor lahf_lm\n", "none\n", "always [madvise] never\n", "yes", "none", "madvise"},
		{"bare metal", "flags\t\t: fpu vme lahf_lm\n", "intel_idle\n", "[always] madvise never\n", "no", "intel_idle", "always"},
		{"hypervisor only in the model name", "model name\t: hypervisor box\nflags\t\t: fpu\n", "", "", "no", "unknown", "unknown"},
		{"nothing readable", "", "", "", "unknown", "unknown", "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := platformLine([]byte(tt.cpuinfo), tt.idle, tt.thp)
			want := "- under a hypervisor: " + tt.wantVM + "; cpuidle driver: " + tt.wantID + "; transparent huge pages: " + tt.wantTHP + " ("
			if !strings.HasPrefix(got, want) {
				t.Errorf("platformLine = %q, want it to start %q", got, want)
			}
		})
	}
}

// TestMachineNamesBenchCPU: when go test named another CPU than
// /proc/cpuinfo's model name (a VM can show the two differently), the
// header gives both; the bench output's "cpu:" line is read.
func TestMachineNamesBenchCPU(t *testing.T) {
	if got := machine("Some Other Brand 9000"); !strings.Contains(got, "go test's bench output names it Some Other Brand 9000)") {
		t.Errorf("machine header lacks the bench output's CPU:\n%s", got)
	}
	if got := benchCPU("testdata/bench.out"); got != "AMD EPYC" {
		t.Errorf("benchCPU(testdata/bench.out) = %q, want %q", got, "AMD EPYC")
	}
	if got := benchCPU("testdata/missing.out"); got != "" {
		t.Errorf("benchCPU(missing) = %q, want empty", got)
	}
}
