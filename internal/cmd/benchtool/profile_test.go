package main

import (
	"os"
	"strings"
	"testing"
)

// TestReportProfile: the profile section gives each part's cumulative CPU
// per op and as a share of all samples, from testdata/sandbox-profile.txt
// (100000 ops, 3.74 s of samples; restore 1.58 s, scanChanged 0.96 s,
// runtime._ExternalCode 0.75 s), and the sandbox row sums it up.
func TestReportProfile(t *testing.T) {
	report := reportFor(t, "missing-rss.json", "missing-ready.json", "testdata/sandbox-profile.txt", "")
	wantInReport(t, report,
		"## Where the CPU of serial sandboxed ops goes (profile)",
		"(100000 ops, one at a time)",
		"3.74s in all, 37.4 µs per op",
		"| every reset, either goroutine | 15.8 µs | 42.2% |",
		"| … finding the changed pages (PAGEMAP_SCAN) | 9.6 µs | 25.7% |",
		"| the guest's own code, on the op's goroutine (machine code wazero compiled: Go's profiler cannot walk its stack) | 7.5 µs | 20.1% |",
		"profiled (section below): per op 30.7 µs of CPU on the op's goroutine (the guest's own code 7.5 µs), 15.8 µs in resets on either goroutine",
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
