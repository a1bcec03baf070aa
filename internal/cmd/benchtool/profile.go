package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// opProfile is where the CPU of serial sandboxed ops went, read from the
// file `make bench` writes: the `go test -bench` line of
// BenchmarkSandbox/reset run under -cpuprofile (its op count), then
// `go tool pprof -top -cum` of that profile.
type opProfile struct {
	ops   int                      // ops the profiled run made
	total time.Duration            // CPU samples in all, every goroutine
	cum   map[string]time.Duration // function name → cumulative CPU
}

// setup is the CPU of the benchmark's engine setup (benchEnv, before its
// timer starts: host.New and the provider fake), once per run of the
// benchmark function, not per op.
func (p opProfile) setup() time.Duration { return p.cum[fnSetup] }

// opsCPU is the samples of every goroutine less the setup's: the CPU of
// the ops.
func (p opProfile) opsCPU() time.Duration { return p.total - p.setup() }

// cumOp is fn's cumulative CPU less the setup's where fn is the
// benchmark function, which runs the setup too.
func (p opProfile) cumOp(fn string) time.Duration {
	if fn == fnOp {
		return p.cum[fn] - p.setup()
	}
	return p.cum[fn]
}

var (
	benchLine    = regexp.MustCompile(`^BenchmarkSandbox/reset(?:-\d+)?\s+(\d+)\s`)
	totalSamples = regexp.MustCompile(`Total samples = ([0-9.]+)(ms|s)\b`)
	// flat flat% sum% cum cum% name
	topLine = regexp.MustCompile(`^\s*([0-9.]+)(ms|s|us|ns)?\s+[0-9.]+%\s+[0-9.]+%\s+([0-9.]+)(ms|s|us|ns)?\s+[0-9.]+%\s+(\S.*)$`)
)

// readOpProfile parses r; ok is false when it holds no profile of
// BenchmarkSandbox/reset.
func readOpProfile(r io.Reader) (opProfile, bool) {
	p := opProfile{cum: map[string]time.Duration{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if m := benchLine.FindStringSubmatch(line); m != nil {
			p.ops, _ = strconv.Atoi(m[1])
			continue
		}
		if m := totalSamples.FindStringSubmatch(line); m != nil {
			p.total = pprofDur(m[1], m[2])
			continue
		}
		if m := topLine.FindStringSubmatch(line); m != nil {
			p.cum[strings.TrimSpace(m[5])] = pprofDur(m[3], m[4])
		}
	}
	return p, p.ops > 0 && p.total > 0 && len(p.cum) > 0
}

// pprofDur reads pprof's "1.23s", "450ms" (a bare 0 is zero).
func pprofDur(n, unit string) time.Duration {
	f, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return 0
	}
	scale := map[string]float64{"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1}[unit]
	return time.Duration(f * scale)
}

// Functions whose cumulative CPU the report reads.
const (
	fnOp        = "github.com/elevenmessenger/pinned/host.BenchmarkSandbox.func1"
	fnGuestCode = "runtime._ExternalCode"
	fnReset     = "github.com/elevenmessenger/pinned/host/internal/sandbox.(*pool).restore"
	fnSetup     = "github.com/elevenmessenger/pinned/host.benchEnv"
)

// opProfileParts are the rows of the report's profile table: what each
// part is and the function whose cumulative CPU measures it.
var opProfileParts = []struct{ what, fn string }{
	{"the op's Go code, on the benchmark's goroutine (less the engine's setup)", fnOp},
	{"… binding the args (before the guest)", "github.com/elevenmessenger/pinned/host.(*prepared).bindArgs"},
	{"… the guest's run, less its own code (wazero and the host calls)", "github.com/tetratelabs/wazero/internal/engine/wazevo.(*callEngine).Call"},
	{"… … the request host call (pin_v1.request)", "github.com/elevenmessenger/pinned/host/internal/sandbox.pinRequest"},
	{"… … … decoding the guest's request", "github.com/elevenmessenger/pinned/host/internal/egress.DecodeRequest"},
	{"… … … the egress policy and binding", "github.com/elevenmessenger/pinned/host/internal/egress.Admit"},
	{"… resets on the op's goroutine (every slot waiting)", "github.com/elevenmessenger/pinned/host/internal/sandbox.(*pool).resetHere"},
	{"the guest's own code, on the op's goroutine (machine code wazero compiled: Go's profiler cannot walk its stack)", fnGuestCode},
	{"every reset, either goroutine", fnReset},
	{"… finding the changed pages (PAGEMAP_SCAN)", "github.com/elevenmessenger/pinned/host/internal/sandbox.scanChanged"},
	{"resets on the reset goroutine (with its hand-offs)", "github.com/elevenmessenger/pinned/host/internal/sandbox.(*pool).resetLoop"},
	{"the Go scheduler (goroutine hand-offs)", "runtime.schedule"},
	{"garbage collection (background)", "runtime.gcBgMarkWorker"},
}

// writeOpProfile writes the profile section of the report.
func writeOpProfile(p func(string, ...any), prof opProfile) {
	p("## Where the CPU of serial sandboxed ops goes (profile)\n\n")
	p("`make bench` runs BenchmarkSandbox/reset (%d ops, one at a time) under `-cpuprofile`; `go tool pprof -top -cum` gives each part's CPU, counted on every goroutine: %s in all, of which the engine's setup before the timer starts (benchEnv: host.New and the provider fake) %s, leaving at most %s per op (setup work on other goroutines, such as the pool's fill and the guest's warm-up, is not subtracted). ",
		prof.ops, prof.total.Round(time.Millisecond), prof.setup().Round(time.Millisecond), dur(float64(prof.opsCPU().Nanoseconds())/float64(prof.ops)))
	p("A reset runs on the reset goroutine, on the other core, or on the op's own when every slot waits for one; comparing the write-class pages with the image and copying those that differ is the reset's CPU less the scan.\n\n")
	p("| part | CPU per op | share of the ops' CPU |\n| --- | --- | --- |\n")
	for _, part := range opProfileParts {
		if _, ok := prof.cum[part.fn]; !ok {
			continue
		}
		c := prof.cumOp(part.fn)
		p("| %s | %s | %.1f%% |\n", part.what, dur(float64(c.Nanoseconds())/float64(prof.ops)), 100*c.Seconds()/prof.opsCPU().Seconds())
	}
	p("\n")
}

// opProfileSummary is a one-line form for the sandbox row: the op's CPU
// (its Go code and the guest's) and the resets', per op.
func opProfileSummary(prof opProfile) string {
	per := func(d time.Duration) string { return dur(float64(d.Nanoseconds()) / float64(prof.ops)) }
	return fmt.Sprintf("; profiled (section below): per op %s of CPU on the op's goroutine (the guest's own code %s), %s in resets on either goroutine",
		per(prof.cumOp(fnOp)+prof.cum[fnGuestCode]), per(prof.cum[fnGuestCode]), per(prof.cum[fnReset]))
}
