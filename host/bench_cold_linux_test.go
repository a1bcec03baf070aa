//go:build linux

package host

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// evict is written through between the runs of BenchmarkSandboxCold:
// larger than a server's last-level cache, as a long op's answer (TLS,
// projection, the provider fake's encoding) sweeps it.
var evict = make([]byte, 64<<20)

// BenchmarkSandboxCold is the sandbox alone (as BenchmarkSandbox,
// list_repos) in the CPU time of the thread that runs it, with the caches
// warm from the previous run ("warm") and after 64 MiB were written
// between runs ("cold", untimed): what a guest run costs after a long op.
// The guest writes a few pages per op and takes no page fault; what it
// pays cold is reading its code and data back into the caches and TLB.
func BenchmarkSandboxCold(b *testing.B) {
	ctx := context.Background()
	env := benchEnv(b, IsolationReset)
	p, herr := env.eng.prepare("github", "list_repos")
	if herr != nil {
		b.Fatal(herr)
	}
	for _, mode := range []string{"warm", "cold"} {
		b.Run(mode, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				if mode == "cold" {
					for j := 0; j < len(evict); j += 64 {
						evict[j]++
					}
				}
				t := threadCPU()
				args, want, herr := p.bindArgs(json.RawMessage(`{"per_page":100}`), DefaultMaxArgsBytes)
				if herr == nil {
					_, herr = env.eng.execute(ctx, p, args, want)
				}
				cpu = append(cpu, time.Duration(threadCPU()-t))
				if herr != nil {
					b.Fatal(herr)
				}
			}
			slices.Sort(cpu)
			b.ReportMetric(float64(cpu[len(cpu)/2].Nanoseconds()), "cpu-p50-ns")
		})
	}
}

// threadCPU is the calling thread's CPU time in nanoseconds.
func threadCPU() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return ts.Nano()
}
