// Command benchtool is the harness behind `make bench` for what Go
// benchmarks cannot measure, and the writer of BENCHMARKS.md:
//
//	benchtool rss   -out FILE             1,000 ops in flight against an upstream that holds each answer 500 ms
//	                                      (the sidecar measured in a process of its own; `rss-load` is its load)
//	benchtool ready -bin PINNED -out FILE time from starting `pinned sidecar` to a 200 from /readyz, cold and warm cache,
//	                                      and from starting `pinned help` to its exit (the process's own start)
//	benchtool guestsize -wasm FILE -out FILE  code bytes per Go package and bytes per section of a guest built with its names
//	benchtool report -bench FILE -rss FILE -ready FILE [-scale FILE] [-profile FILE] [-guestsize FILE] -out BENCHMARKS.md
//
// It is a development tool (internal), not part of the product.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchtool rss|ready|guestsize|report [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "rss":
		fs := flag.NewFlagSet("rss", flag.ExitOnError)
		out := fs.String("out", "rss.json", "result file")
		n := fs.Int("n", 1000, "ops in flight")
		hold := fs.Duration("hold", 500e6, "how long the upstream holds each answer")
		prof := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
		tr := fs.String("trace", "", "write an execution trace of the run to this file")
		heap := fs.String("heapprofile", "", "write the sidecar process's heap profile (after a GC) to this file while the ops are held")
		fs.Parse(os.Args[2:])
		if *tr != "" {
			f, terr := os.Create(*tr)
			if terr != nil {
				err = terr
				break
			}
			trace.Start(f)
			defer func() { trace.Stop(); f.Close() }()
		}
		if *prof != "" {
			f, perr := os.Create(*prof)
			if perr != nil {
				err = perr
				break
			}
			pprof.StartCPUProfile(f)
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
		err = runRSS(os.Stdout, *out, *n, *hold, *heap)
	case "rss-load":
		// The harness's half of rss (provider fake and load generator),
		// started by rss and driven over stdin and stdout.
		err = runLoad(os.Stdin, os.Stdout)
	case "ready":
		fs := flag.NewFlagSet("ready", flag.ExitOnError)
		out := fs.String("out", "ready.json", "result file")
		bin := fs.String("bin", "bin/pinned", "the pinned binary")
		runs := fs.Int("runs", 7, "starts per cache state")
		fs.Parse(os.Args[2:])
		err = runReady(*out, *bin, *runs)
	case "guestsize":
		fs := flag.NewFlagSet("guestsize", flag.ExitOnError)
		wasm := fs.String("wasm", "", "the executor module built without -ldflags=-s (its function names kept)")
		out := fs.String("out", "guest-size.md", "result file (markdown tables)")
		fs.Parse(os.Args[2:])
		err = runGuestSize(*wasm, *out)
	case "report":
		fs := flag.NewFlagSet("report", flag.ExitOnError)
		bench := fs.String("bench", "bench.out", "go test -bench output")
		extism := fs.String("extism", "", "go test -bench output of bench/extism (optional)")
		rss := fs.String("rss", "rss.json", "rss result")
		ready := fs.String("ready", "ready.json", "readiness result")
		scale := fs.String("scale", "", "bench/scale.sh's table (optional)")
		profile := fs.String("profile", "", "BenchmarkSandbox/reset's bench line and `go tool pprof -top -cum` of its CPU profile (optional)")
		guestSize := fs.String("guestsize", "", "benchtool guestsize's tables (optional)")
		out := fs.String("out", "BENCHMARKS.md", "report")
		fs.Parse(os.Args[2:])
		err = runReport(*bench, *extism, *rss, *ready, *scale, *profile, *guestSize, *out)
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtool:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}
