package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (go doc cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string // build-output and build-fail
}

// line is one output line of a package, with the test that wrote it.
type line struct{ test, text string }

// pkg is what a package printed while it ran.
type pkg struct {
	lines  []line
	failed map[string]bool // tests that failed
}

// skip is one skipped test and why.
type skip struct{ pkg, test, reason string }

// timing is one finished package or test.
type timing struct {
	pkg     string
	elapsed time.Duration
}

// report turns a `go test -json` stream into go test's own output, a line
// per skipped test and the slowest packages.
type report struct {
	out      io.Writer
	pkgs     map[string]*pkg
	skips    []skip
	times    []timing // packages
	tests    []timing // top-level tests, as "package Test"
	passed   int
	failed   []string
	noTests  int
	buildBad bool
}

func newReport(out io.Writer) *report { return &report{out: out, pkgs: map[string]*pkg{}} }

// read consumes the stream. A line that is not an event is printed as it
// is.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(r.out, sc.Text())
			continue
		}
		r.event(e)
	}
	return sc.Err()
}

func (r *report) event(e event) {
	switch e.Action {
	case "build-output":
		fmt.Fprint(r.out, e.Output)
		return
	case "build-fail":
		r.buildBad = true
		return
	}
	p := r.pkgs[e.Package]
	if p == nil {
		p = &pkg{failed: map[string]bool{}}
		r.pkgs[e.Package] = p
	}
	switch e.Action {
	case "output":
		p.lines = append(p.lines, line{e.Test, e.Output})
	case "skip":
		if e.Test == "" {
			r.noTests++ // no test files
			delete(r.pkgs, e.Package)
			return
		}
		r.skips = append(r.skips, skip{e.Package, e.Test, reason(p.lines, e.Test)})
	case "fail":
		if e.Test != "" {
			p.failed[e.Test] = true
			r.testTime(e)
			return
		}
		r.failed = append(r.failed, e.Package)
		r.times = append(r.times, timing{e.Package, seconds(e.Elapsed)})
		for _, l := range p.lines {
			if (l.test == "" || p.failed[l.test]) && !framing(l.text) {
				fmt.Fprint(r.out, l.text)
			}
		}
		delete(r.pkgs, e.Package)
	case "pass":
		if e.Test != "" {
			r.testTime(e)
			return
		}
		r.passed++
		r.times = append(r.times, timing{e.Package, seconds(e.Elapsed)})
		fmt.Fprintf(r.out, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
		delete(r.pkgs, e.Package)
	}
}

// testTime records a top-level test's time.
func (r *report) testTime(e event) {
	if !strings.Contains(e.Test, "/") {
		r.tests = append(r.tests, timing{e.Package + " " + e.Test, seconds(e.Elapsed)})
	}
}

// framing reports whether a line is test2json's framing of a test's
// output rather than what the test wrote.
func framing(s string) bool {
	t := strings.TrimSpace(s)
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS", "--- SKIP"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// reason is what test wrote before it skipped, on one line.
func reason(lines []line, test string) string {
	var parts []string
	for _, l := range lines {
		if l.test == test && !framing(l.text) {
			if t := strings.TrimSpace(l.text); t != "" {
				parts = append(parts, t)
			}
		}
	}
	s := strings.Join(parts, " ")
	if s == "" {
		return "(no reason given)"
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// top is the n longest of ts, longest first, as "name time, …".
func top(ts []timing, n int) string {
	slices.SortStableFunc(ts, func(a, b timing) int { return cmp.Compare(b.elapsed, a.elapsed) })
	var out []string
	for _, t := range ts[:min(n, len(ts))] {
		out = append(out, fmt.Sprintf("%s %s", t.pkg, t.elapsed))
	}
	return strings.Join(out, ", ")
}

func seconds(f float64) time.Duration {
	return time.Duration(f * float64(time.Second)).Round(time.Millisecond)
}

// summary prints the skipped tests, the slowest packages and the verdict,
// and reports whether everything passed.
func (r *report) summary(slowest int) bool {
	// A package that started and never finished (the command died).
	unfinished := slices.Sorted(func(yield func(string) bool) {
		for name := range r.pkgs {
			if !yield(name) {
				return
			}
		}
	})
	if len(r.skips) > 0 {
		fmt.Fprintf(r.out, "\nskipped: %d\n", len(r.skips))
		slices.SortStableFunc(r.skips, func(a, b skip) int { return strings.Compare(a.pkg, b.pkg) })
		for _, s := range r.skips {
			fmt.Fprintf(r.out, "SKIP %s %s: %s\n", s.pkg, s.test, s.reason)
		}
	}
	if slowest > 0 && len(r.times) > 0 {
		fmt.Fprintln(r.out)
		fmt.Fprintf(r.out, "slowest packages: %s\n", top(r.times, slowest))
		if len(r.tests) > 0 {
			fmt.Fprintf(r.out, "slowest tests: %s\n", top(r.tests, slowest))
		}
	}
	ok := len(r.failed) == 0 && !r.buildBad && len(unfinished) == 0
	verdict := "PASS"
	if !ok {
		verdict = "FAIL"
	}
	fmt.Fprintf(r.out, "%s: %d packages passed, %d failed, %d without tests; %d tests skipped\n",
		verdict, r.passed, len(r.failed), r.noTests, len(r.skips))
	for _, name := range r.failed {
		fmt.Fprintf(r.out, "FAIL %s\n", name)
	}
	for _, name := range unfinished {
		fmt.Fprintf(r.out, "FAIL %s (did not finish)\n", name)
	}
	return ok
}
