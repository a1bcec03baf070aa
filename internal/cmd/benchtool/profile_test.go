package main

import (
	"os"
	"strings"
	"testing"
)

// TestReportProfile: the profile section gives each part's cumulative CPU
// per op and as a share of the ops' samples, from
// testdata/sandbox-profile.txt (100000 ops, 3.74 s of samples, 0.45 s of
// them the engine's setup in benchEnv, which the benchmark function's
// 2.32 s also holds; restore 1.58 s, scanChanged 0.96 s,
// runtime._ExternalCode 0.75 s), and the sandbox row sums it up.
func TestReportProfile(t *testing.T) {
	report := reportFor(t, "missing-rss.json", "missing-ready.json", "testdata/sandbox-profile.txt", "")
	wantInReport(t, report,
		"## Where the CPU of serial sandboxed ops goes (profile)",
		"(100000 ops, one at a time)",
		"3.74s in all, of which the engine's setup before the timer starts (benchEnv: host.New and the provider fake) 450ms, leaving at most 32.9 µs per op (setup work on other goroutines, such as the pool's fill and the guest's warm-up, is not subtracted)",
		"| the op's Go code, on the benchmark's goroutine (less the engine's setup) | 18.7 µs | 56.8% |",
		"| every reset, either goroutine | 15.8 µs | 48.0% |",
		"| … finding the changed pages (PAGEMAP_SCAN) | 9.6 µs | 29.2% |",
		"| the guest's own code, on the op's goroutine (machine code wazero compiled: Go's profiler cannot walk its stack) | 7.5 µs | 22.8% |",
		"profiled (section below): per op 26.2 µs of CPU on the op's goroutine (the guest's own code 7.5 µs), 15.8 µs in resets on either goroutine",
	)
}

// TestReadOpProfile: a file without the benchmark's line, the sample total
// or any function is no profile, and the report has no section.
func TestReadOpProfile(t *testing.T) {
	whole, err := os.ReadFile("testdata/sandbox-profile.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(whole), "\n")
	for _, tc := range []struct {
		name string
		in   string
		ok   bool
	}{
		{"whole", string(whole), true},
		{"empty", "", false},
		{"no bench line", strings.Join(lines[5:], "\n"), false},
		{"no pprof output", strings.Join(lines[:7], "\n"), false},
		{"not a profile", "FAIL\nexit status 1\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := readOpProfile(strings.NewReader(tc.in)); ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
		})
	}
}
