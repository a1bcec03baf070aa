package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

// stats holds every benchmark value by benchmark name and unit.
type stats map[string]map[string][]float64

func readBench(path string, into stats) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := benchfmt.NewReader(f, path)
	for r.Scan() {
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		// benchfmt drops the "Benchmark" prefix and tidies units ("ns/op"
		// becomes "sec/op"); the report uses the names and units the
		// benchmarks print.
		name := "Benchmark" + string(res.Name.Full())
		name = strings.TrimSuffix(name, "-"+fmt.Sprint(runtime.GOMAXPROCS(0)))
		if i := strings.LastIndex(name, "-"); i > 0 && allDigits(name[i+1:]) {
			name = name[:i]
		}
		if into[name] == nil {
			into[name] = map[string][]float64{}
		}
		for _, v := range res.Values {
			unit, value := v.Unit, v.Value
			if v.OrigUnit != "" {
				unit, value = v.OrigUnit, v.OrigValue
			}
			into[name][unit] = append(into[name][unit], value)
		}
	}
	return r.Err()
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// summary is a benchstat-style median with its 95% confidence interval
// (distribution-free) over the runs.
type summary struct {
	center, lo, hi float64
	n              int
}

// mib formats bytes in MiB.
func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func (s stats) get(name, unit string) (summary, bool) {
	vs := s[name][unit]
	if len(vs) == 0 {
		return summary{}, false
	}
	sm := benchmath.AssumeNothing.Summary(benchmath.NewSample(append([]float64(nil), vs...), &benchmath.DefaultThresholds), 0.95)
	return summary{sm.Center, sm.Lo, sm.Hi, len(vs)}, true
}

func dur(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func (s summary) dur() string {
	return s.format(dur)
}

// format is the median and its interval in f's units; with too few runs
// for a 95% interval (benchmath answers ±Inf) only the run count.
func (s summary) format(f func(float64) string) string {
	if math.IsInf(s.lo, 0) || math.IsInf(s.hi, 0) {
		return fmt.Sprintf("%s (n=%d, too few runs for a 95%% interval)", f(s.center), s.n)
	}
	return fmt.Sprintf("%s (%s – %s, n=%d)", f(s.center), f(s.lo), f(s.hi), s.n)
}

// rate is an ops/s summary.
func (s summary) rate() string {
	if math.IsInf(s.lo, 0) || math.IsInf(s.hi, 0) {
		return fmt.Sprintf("%.0f ops/s (n=%d, too few runs for a 95%% interval)", s.center, s.n)
	}
	return fmt.Sprintf("%.0f ops/s (%.0f – %.0f, n=%d)", s.center, s.lo, s.hi, s.n)
}

// spread is the range of xs in ms ("lowest–highest ms"): with 7 starts,
// a distribution-free interval of their median whose coverage is at
// least 95% (98.4%).
func spread(xs []float64) string {
	if len(xs) == 0 {
		return "no starts"
	}
	return fmt.Sprintf("%.0f–%.0f ms", slices.Min(xs), slices.Max(xs))
}

// over counts the xs above limit.
func over(xs []float64, limit float64) int {
	n := 0
	for _, x := range xs {
		if x > limit {
			n++
		}
	}
	return n
}

func num(v float64) string { return fmt.Sprintf("%.4g", v) }

// benchCPU is the "cpu:" line of a `go test -bench` output (the CPUID
// brand string the benchmarks ran on), or "" if it has none.
func benchCPU(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "cpu: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// machine describes the machine the report is written on; brand is the
// CPU that go test named in the bench output ("" for none).
func machine(brand string) string {
	var b strings.Builder
	model := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
		f.Close()
	}
	kernel, _ := exec.Command("uname", "-r").Output()
	load, _ := os.ReadFile("/proc/loadavg")
	if brand != "" && brand != model {
		model += " (/proc/cpuinfo; go test's bench output names it " + brand + ")"
	}
	fmt.Fprintf(&b, "- CPU: %s, %d logical cores (GOMAXPROCS %d)\n", model, runtime.NumCPU(), runtime.GOMAXPROCS(0))
	fmt.Fprintf(&b, "- %s, linux/%s, kernel %s", runtime.Version(), runtime.GOARCH, strings.TrimSpace(string(kernel)))
	fmt.Fprintf(&b, ", wazero v1.12.0\n- load average when the report was written: %s\n", strings.Join(strings.Fields(string(load))[:3], " "))
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	idle, _ := os.ReadFile("/sys/devices/system/cpu/cpuidle/current_driver")
	thp, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	b.WriteString(platformLine(cpuinfo, string(idle), string(thp)))
	return b.String()
}

// platformLine says what bears on the cost of a page fault and of a
// wake-up from idle on the machine: whether it runs under a hypervisor (the
// "hypervisor" CPU flag of /proc/cpuinfo), its cpuidle driver ("none":
// an idle CPU halts at once, without polling first) and the transparent
// huge page mode (the bracketed word of
// /sys/kernel/mm/transparent_hugepage/enabled). What cannot be read is
// "unknown".
func platformLine(cpuinfo []byte, idle, thp string) string {
	vm := "unknown"
	for line := range strings.Lines(string(cpuinfo)) {
		if v, ok := strings.CutPrefix(line, "flags"); ok {
			vm = "no"
			if slices.Contains(strings.Fields(strings.TrimPrefix(strings.TrimSpace(v), ":")), "hypervisor") {
				vm = "yes"
			}
			break
		}
	}
	if idle = strings.TrimSpace(idle); idle == "" {
		idle = "unknown"
	}
	mode := "unknown"
	if i, j := strings.IndexByte(thp, '['), strings.IndexByte(thp, ']'); i >= 0 && j > i {
		mode = thp[i+1 : j]
	}
	return fmt.Sprintf("- under a hypervisor: %s; cpuidle driver: %s; transparent huge pages: %s (read when the report was written; they bear on what a page fault and a wake-up from idle cost: the page-fault figure in the sandbox row, the start and Redis rows)\n", vm, idle, mode)
}

func runReport(benchPath, extismPath, rssPath, readyPath, scalePath, profilePath, guestSizePath, out string) error {
	st := stats{}
	if err := readBench(benchPath, st); err != nil {
		return fmt.Errorf("read %s: %w", benchPath, err)
	}
	if extismPath != "" {
		if err := readBench(extismPath, st); err != nil {
			fmt.Fprintf(os.Stderr, "benchtool: no Extism results (%v)\n", err)
		}
	}
	var rss rssResult
	if b, err := os.ReadFile(rssPath); err == nil {
		json.Unmarshal(b, &rss)
	}
	var ready readyResult
	if b, err := os.ReadFile(readyPath); err == nil {
		json.Unmarshal(b, &ready)
	}
	var prof opProfile
	haveProf := false
	if profilePath != "" {
		if f, err := os.Open(profilePath); err == nil {
			prof, haveProf = readOpProfile(f)
			f.Close()
		}
	}

	var w strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	p("# Benchmarks\n\n")
	p("Written by `make bench` on %s. Every ratio compares figures measured in the same run on the same machine:\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	p("%s\n", machine(benchCPU(benchPath)))
	p("Figures are medians over the runs, with the 95%% confidence interval of the median in parentheses (benchstat's method, golang.org/x/perf/benchmath). ")
	p("Latency percentiles (p50) are per op, over every op of a run. ")
	p("\"native\" is the same executor code compiled natively, with the same checks, egress, and projection; ")
	p("\"reset\" is the shipped strategy; \"fresh\" instantiates a new module per op (the naive strategy).\n\n")

	row := func(target, figure, baseline, verdict string) {
		p("| %s | %s | %s | %s |\n", target, figure, baseline, verdict)
	}
	met := func(ok bool) string {
		if ok {
			return "**met**"
		}
		return "**not met**"
	}
	p("## Targets\n\n| target | figure | baseline in the same run | verdict |\n| --- | --- | --- | --- |\n")
	goal := map[string]float64{"viewer": 20e3, "repos100": 40e3}
	for _, op := range []string{"viewer", "repos100", "viewer/canned", "repos100/canned"} {
		ov, ok1 := st.get("BenchmarkOverhead/"+op, "overhead-p50-ns")
		nat, _ := st.get("BenchmarkOverhead/"+op, "native-p50-ns")
		sb, _ := st.get("BenchmarkOverhead/"+op, "sandbox-p50-ns")
		fresh, ok2 := st.get("BenchmarkOp/"+op+"/fresh", "p50-ns/op")
		natOp, _ := st.get("BenchmarkOp/"+op+"/native", "p50-ns/op")
		if !ok1 {
			continue
		}
		base := fmt.Sprintf("native op p50 %s, sandboxed op p50 %s", dur(nat.center), dur(sb.center))
		if ok2 {
			base += fmt.Sprintf("; naive fresh-per-op overhead %s (fresh p50 %s − native p50 %s)", dur(fresh.center-natOp.center), dur(fresh.center), dur(natOp.center))
		}
		var parts []string
		for _, ph := range []string{"checks", "guest", "send", "after"} {
			if v, ok := st.get("BenchmarkOverhead/"+op, "overhead-"+ph+"-p50-ns"); ok {
				parts = append(parts, fmt.Sprintf("%s %s", ph, dur(v.center)))
			}
		}
		if len(parts) > 0 {
			base += "; where it sits (p50 of the paired difference per phase): " + strings.Join(parts, ", ")
		}
		name, where := strings.CutSuffix(op, "/canned")
		label := "provider fake in process"
		if where {
			label = "canned provider in its own process"
		}
		g := goal[name]
		row(fmt.Sprintf("sandbox overhead per op, p50, %s op, %s (≤ %s)", name, label, dur(g)), ov.dur(), base, met(ov.center <= g))
	}
	for _, op := range []string{"viewer", "repos100"} {
		bc, ok := st.get("BenchmarkOverhead/"+op, "bind-p50-ns")
		if !ok {
			continue
		}
		base := "measured inside BenchmarkOverhead's iterations, cold after each op"
		if pc, ok := st.get("BenchmarkOverhead/"+op, "policy-p50-ns"); ok {
			base += fmt.Sprintf("; the request's shape check, measured the same way: %s", pc.dur())
		}
		if warm, ok := st.get("BenchmarkBinding/"+op, "bind-p50-ns"); ok {
			base += fmt.Sprintf("; warm (BenchmarkBinding): %s", warm.dur())
		}
		row(fmt.Sprintf("request binding per op, p50, %s op (≤ 5 µs)", op), bc.dur(), base, met(bc.center <= 5e3))
	}
	if sr, ok := st.get("BenchmarkSandbox/reset", "p50-ns/op"); ok {
		sf, _ := st.get("BenchmarkSandbox/fresh", "p50-ns/op")
		base := fmt.Sprintf("fresh instance per op %s: %.0f× slower", dur(sf.center), sf.center/sr.center)
		if pg, ok := st.get("BenchmarkSandbox/reset", "pages/reset"); ok {
			base += fmt.Sprintf("; %.0f pages copied back or dropped per op (a reset compares each write-class page with the image and copies those that differ)", pg.center)
		}
		if tr, ok := st.get("BenchmarkSandbox/reset", "tracked/reset"); ok {
			if tr.center >= 1 {
				base += "; every reset with write tracking (userfaultfd, PAGEMAP_SCAN)"
			} else {
				base += fmt.Sprintf("; %.0f%% of resets with write tracking, the rest reading /proc/self/pagemap", 100*tr.center)
			}
		}
		if rh, ok := st.get("BenchmarkReset/heap", "cpu-ns/op"); ok {
			pm, _ := st.get("BenchmarkReset/pagemap", "cpu-ns/op")
			if sc, ok := st.get("BenchmarkReset/scan", "cpu-ns/op"); ok {
				hp, _ := st.get("BenchmarkReset/heap-pagemap", "cpu-ns/op")
				base += fmt.Sprintf("; one reset %s of CPU (BenchmarkReset/heap; on a reset goroutine, or on the op's own when every slot waits for one), finding the written pages alone %s (BenchmarkReset/scan, a run apart; the profile below splits the ops' own resets); by reading /proc/self/pagemap instead, %s and %s (%.1f×)",
					dur(rh.center), dur(sc.center), dur(hp.center), dur(pm.center), hp.center/rh.center)
			} else {
				base += fmt.Sprintf("; one reset %s of CPU (on a reset goroutine, or on the op's own when every slot waits for one), of which reading the page table %s", dur(rh.center), dur(pm.center))
			}
		}
		if pf, ok := st.get("BenchmarkPageFault/fault", "ns/page"); ok {
			pp, _ := st.get("BenchmarkPageFault/populate", "ns/page")
			base += fmt.Sprintf("; on this machine a page fault costs %s a page, mapping pages with madvise(MADV_POPULATE_WRITE) %s", dur(pf.center), dur(pp.center))
		}
		if cw, ok := st.get("BenchmarkSandboxCold/warm", "cpu-p50-ns"); ok {
			cc, _ := st.get("BenchmarkSandboxCold/cold", "cpu-p50-ns")
			base += fmt.Sprintf("; the guest's run in thread CPU time, caches warm %s, after 64 MiB swept them %s (%.1f×)", dur(cw.center), dur(cc.center), cc.center/cw.center)
		}
		if haveProf {
			base += opProfileSummary(prof)
		}
		verdict := "(context)"
		target := "sandbox alone (instance, guest, checks; the reset on another goroutine unless every slot waits for one), p50"
		if er, ok := st.get("BenchmarkExtism/reuse", "p50-ns/op"); ok {
			base += fmt.Sprintf("; Extism reusing one unisolated instance %s (%.2f× of it)", dur(er.center), sr.center/er.center)
			target += " (≤ ½ of Extism's reused instance)"
			verdict = met(sr.center <= er.center/2)
		}
		row(target, sr.dur(), base, verdict)
	}
	if tr, ok := st.get("BenchmarkThroughput/reset", "ops/s"); ok {
		tn, _ := st.get("BenchmarkThroughput/native", "ops/s")
		row("throughput with fresh-equivalent isolation, provider in its own process (≥ 5,000 ops/s)", tr.rate(),
			fmt.Sprintf("native executor %.0f ops/s (%.0f%% of it)", tn.center, 100*tr.center/tn.center), met(tr.center >= 5000))
	}
	if pk, ok := st.get("BenchmarkProject/pick", "ns/op"); ok {
		ja, _ := st.get("BenchmarkProject/jsonany", "ns/op")
		ratio := ja.center / pk.center
		row("pick projection of a 100-repo page (≥ 5× encoding/json)", fmt.Sprintf("%s per page", pk.dur()),
			fmt.Sprintf("decode into any + re-encode %s: **%.1f×**; output byte-identical to the reference projection (checked in the benchmark)", ja.dur(), ratio), met(ratio >= 5))
	}
	if fc, ok := st.get("BenchmarkFlow/check-small", "ns/op"); ok {
		fv, _ := st.get("BenchmarkFlow/validate-small", "ns/op")
		bc, _ := st.get("BenchmarkFlow/check-body", "ns/op")
		bv, _ := st.get("BenchmarkFlow/validate-body", "ns/op")
		row("cross-service flow check per call (session of 460 recorded values): list_issues args; create_issue with a 16 KiB body",
			fmt.Sprintf("%s; %s", fc.dur(), bc.dur()),
			fmt.Sprintf("the host's own validation and binding of the same args (host.ValidateArgs, paid by every call): %s (%.2f×); %s (%.2f×)", dur(fv.center), fc.center/fv.center, dur(bv.center), bc.center/bv.center),
			"(context)")
	}
	if fr, ok := st.get("BenchmarkFlow/record-repos100", "ns/op"); ok {
		fd, _ := st.get("BenchmarkFlow/decode-repos100", "ns/op")
		row("recording a 100-repository page's values (flow control)", fr.dur(),
			fmt.Sprintf("encoding/json decoding the same page into any: %s (%.1f×)", dur(fd.center), fr.center/fd.center), "(context)")
	}
	if rss.InFlight > 0 {
		ok := rss.Statuses["200 "] == rss.InFlight && rss.ExtraStatus == 503 && rss.ExtraCode == "busy" && rss.PeakRSS <= 150<<20
		row(fmt.Sprintf("%d ops in flight, upstream holds each %d ms: the sidecar process's peak RSS (≤ 150 MiB), all succeed, past the limit busy", rss.InFlight, rss.HoldMS),
			fmt.Sprintf("peak RSS %s (%.0f KiB per op over its baseline); answers %v; op %d: HTTP %d %s; %d ms", mib(rss.PeakRSS), rss.perOp()/1024, rss.Statuses, rss.InFlight+1, rss.ExtraStatus, rss.ExtraCode, rss.ElapsedMS),
			fmt.Sprintf("sidecar process before the load %s; the harness's own process (provider fake, load generator) peaked at %s apart", mib(rss.BaselineRSS), mib(rss.LoadPeakRSS)), met(ok))
		if h, b := rss.Held, rss.Baseline; h.Goroutines > 0 {
			row(fmt.Sprintf("where the sidecar's memory is with %d ops held upstream", rss.InFlight),
				fmt.Sprintf("heap in use %s (+%.0f KiB per op), goroutine stacks %s (%d goroutines, +%.0f KiB per op), RSS %s, PSS %s",
					mib(h.HeapInuse), float64(h.HeapInuse-b.HeapInuse)/float64(rss.InFlight)/1024, mib(h.StackInuse), h.Goroutines,
					float64(h.StackInuse-b.StackInuse)/float64(rss.InFlight)/1024, mib(h.RSS), mib(h.PSS)),
				fmt.Sprintf("before the load: heap in use %s, stacks %s, %d goroutines, RSS %s, PSS %s; %d collections in between",
					mib(b.HeapInuse), mib(b.StackInuse), b.Goroutines, mib(b.RSS), mib(b.PSS), rss.NumGC), "(context)")
		}
	}
	if ad, ok := st.get("BenchmarkStateOverhead", "added-p50-ns"); ok {
		mem, _ := st.get("BenchmarkStateOverhead", "memory-p50-ns")
		red, _ := st.get("BenchmarkStateOverhead", "redis-p50-ns")
		base := fmt.Sprintf("op on the in-memory store p50 %s, on Redis p50 %s (the same op, alternating)", dur(mem.center), dur(red.center))
		if rm, ok := st.get("BenchmarkStateRecord/memory", "p50-ns/op"); ok {
			rr, _ := st.get("BenchmarkStateRecord/redis", "p50-ns/op")
			base += fmt.Sprintf("; the replay record alone: in memory %s, Redis SET NX PXAT %s", dur(rm.center), dur(rr.center))
			if ri, ok := st.get("BenchmarkStateRecord/redis-after-idle", "p50-ns/op"); ok {
				base += fmt.Sprintf(" back to back, %s after 1 ms idle (one round trip after an idle wait, as in an op, whose round trip also reads the back-off in the same pipeline)", dur(ri.center))
			}
		}
		if rp, ok := st.get("BenchmarkStateOverhead", "record-in-op-p50-ns"); ok {
			base += fmt.Sprintf("; that round trip timed inside the op %s p50; the rest of the added time is not accounted for by these measurements", dur(rp.center))
		}
		row("Redis state store on loopback, added per op, p50 (≤ 100 µs; one round trip on the hot path)", ad.dur(), base, met(ad.center <= 100e3))
	}
	if ad, ok := st.get("BenchmarkAuditOverhead", "added-p50-ns"); ok {
		pl, _ := st.get("BenchmarkAuditOverhead", "plain-p50-ns")
		au, _ := st.get("BenchmarkAuditOverhead", "audit-p50-ns")
		base := fmt.Sprintf("op without the audit trail p50 %s, with it p50 %s (the same op, alternating; fsync at seals, the default)", dur(pl.center), dur(au.center))
		if as, ok := st.get("BenchmarkAppend/seal", "ns/op"); ok {
			aa, _ := st.get("BenchmarkAppend/always", "ns/op")
			base += fmt.Sprintf("; one record appended alone: fsync at seals %s, fsync after every record %s", as.dur(), aa.dur())
		}
		if se, ok := st.get("BenchmarkSeal", "ns/op"); ok {
			base += fmt.Sprintf("; one seal (Ed25519 signature and its record) %s", se.dur())
		}
		row("audit record, added per op, p50", ad.dur(), base, "(context)")
	}
	if r3, ok := st.get("BenchmarkReplicas/3-redis", "ops/s"); ok {
		r1, _ := st.get("BenchmarkReplicas/1-memory", "ops/s")
		row("throughput of 3 replicas on one Redis, 2 cores, one process", r3.rate(),
			fmt.Sprintf("1 sidecar on the in-memory store %.0f ops/s (the replicas share the same cores)", r1.center), "(context)")
	}
	if len(ready.WarmMS) > 0 {
		w := median(append([]float64(nil), ready.WarmMS...))
		c := median(append([]float64(nil), ready.ColdMS...))
		pool := func(xs []float64) string {
			if len(xs) == 0 || median(append([]float64(nil), xs...)) == 0 {
				return ""
			}
			return fmt.Sprintf("; the reset pool took over at %.0f ms (ops before it run in fresh instances)", median(append([]float64(nil), xs...)))
		}
		floor := ""
		if len(ready.HelpMS) > 0 {
			floor = fmt.Sprintf("; the process's own start, `pinned help` from start to exit (the Go runtime and every package's initialization, no sandbox): %.0f ms (median of %d; %v)",
				median(append([]float64(nil), ready.HelpMS...)), len(ready.HelpMS), ready.HelpMS)
		}
		if len(ready.WarmFaults) > 0 {
			wf := medianInt(ready.WarmFaults)
			floor += fmt.Sprintf("; page faults from the start to the first 200 (medians, minor and major, file-backed ones included): warm %d, cold %d; `pinned help` %d", wf, medianInt(ready.ColdFaults), medianInt(ready.HelpFaults))
			if pf, ok := st.get("BenchmarkPageFault/fault", "ns/page"); ok && wf > 0 {
				floor += fmt.Sprintf("; not measured, an estimate: if each of the warm start's %d faults cost what BenchmarkPageFault's first write to a fresh anonymous page does, %s, they would take %.0f ms", wf, pf.dur(), float64(wf)*pf.center/1e6)
			}
		}
		row("sidecar ready, compilation cache warm (≤ 50 ms)", fmt.Sprintf("%.0f ms (median of %d starts, %s; %v)%s", w, len(ready.WarmMS), spread(ready.WarmMS), ready.WarmMS, pool(ready.PoolWarmMS)),
			fmt.Sprintf("cold cache %.0f ms (median of %d; %v)%s", c, len(ready.ColdMS), ready.ColdMS, floor), met(w <= 50))
		interp := ""
		if cm := median(append([]float64(nil), ready.CompiledColdMS...)); len(ready.CompiledColdMS) > 0 && cm > 0 {
			interp = fmt.Sprintf("; it serves on wazero's interpreter until the guest's machine code is ready, at %.0f ms (median)", cm)
			if si, ok := st.get("BenchmarkSandbox/interpreter", "p50-ns/op"); ok {
				sf, _ := st.get("BenchmarkSandbox/fresh", "p50-ns/op")
				interp += fmt.Sprintf("; the sandbox's part of an op there, p50: a fresh interpreter instance %s, against a fresh instance on machine code %s (BenchmarkSandbox/interpreter, /fresh)", si.dur(), sf.dur())
			}
		}
		row("sidecar ready, compilation cache empty (≤ 400 ms)", fmt.Sprintf("%.0f ms (median of %d starts, %s; %d of them over 400 ms)%s%s", c, len(ready.ColdMS), spread(ready.ColdMS), over(ready.ColdMS, 400), interp, pool(ready.PoolColdMS)),
			fmt.Sprintf("warm cache %.0f ms", w), met(c <= 400))
	}
	p("\n")

	if ei, ok := st.get("BenchmarkExtism/instance-per-op", "p50-ns/op"); ok {
		er, _ := st.get("BenchmarkExtism/reuse", "p50-ns/op")
		sr, _ := st.get("BenchmarkSandbox/reset", "p50-ns/op")
		p("## Extism, running the same guest\n\n")
		p("bench/extism runs guest/executor.wasm under Extism's Go SDK with the pin_v1 functions as Extism host functions (no egress policy check; the request is only decoded).\n\n")
		p("| | p50 per op |\n| --- | --- |\n")
		p("| Extism, new plugin instance per op (isolated) | %s |\n", ei.dur())
		p("| Extism, one reused instance (not isolated) | %s |\n", er.dur())
		p("| pinned, reset strategy (isolated; includes the egress check) | %s |\n\n", sr.dur())
	}
	if haveProf {
		writeOpProfile(p, prof)
	}

	if rss.InFlight > 0 {
		p("## Memory with %d ops in flight (benchtool rss)\n\n", rss.InFlight)
		p("The sidecar and its engine run in one process, which is measured; the provider fake and the load generator run in another (`benchtool rss-load`), whose peak is reported apart. ")
		p("Each answer is held %d ms and until the op past the limit has its answer, so the reading above is taken with all %d ops in flight. ", rss.HoldMS, rss.InFlight)
		p("An op in flight holds its HTTP/1.1 connection's buffers (net/http: 4 KiB read, 4 KiB write, 2 KiB response), the request and the engine's state for the op (a few KiB), ")
		p("and three goroutines: the handler, whose stack reaches 16 KiB (the handler chain and the engine's checks), the connection's background read, and the HTTP/2 stream to the provider. ")
		p("The sandbox holds nothing while an op waits: the guest has run and its instance is back in the pool before the request is sent. ")
		p("The rest of the growth is garbage between collections (GOGC=100 lets the heap reach twice the live heap and stacks). ")
		p("RSS counts the guest image's pages once for each pooled instance that maps them; PSS counts shared pages once, split among the processes that map them.\n\n")
	}

	if guestSizePath != "" {
		if b, err := os.ReadFile(guestSizePath); err == nil {
			p("## What each dependency adds to the guest (benchtool guestsize)\n\n")
			p("A cold start compiles the whole module, and a warm one validates it and loads its machine code, so its size is start time.\n\n%s\n", b)
		}
	}
	if scalePath != "" {
		if b, err := os.ReadFile(scalePath); err == nil {
			p("## Throughput by core count (make bench-scale)\n\n")
			p("bench/scale.sh runs BenchmarkThroughput at 1, 2, 4, ... cores with the provider in its own process; the goal is sandboxed ops/s ≥ 0.7× linear up to 8 cores, on a machine with ≥ 8 cores (run `make bench-scale` there).\n\n%s\n", b)
		}
	}

	p("## Every benchmark\n\n| benchmark | unit | median (95%% CI, runs) |\n| --- | --- | --- |\n")
	names := make([]string, 0, len(st))
	for n := range st {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		units := make([]string, 0, len(st[n]))
		for u := range st[n] {
			units = append(units, u)
		}
		sort.Strings(units)
		for _, u := range units {
			s, _ := st.get(n, u)
			val := s.format(num)
			if strings.HasSuffix(u, "-ns") || strings.HasSuffix(u, "ns/op") {
				val = s.dur()
			}
			p("| %s | %s | %s |\n", n, u, val)
		}
	}
	p("\n## Reproduce\n\n```\nmake bench            # BENCHCOUNT=6 BENCHTIME=1s by default\n```\n\n")
	p("`make bench` runs the Go benchmarks of ./host (the throughput benchmark and the \"canned\" overhead rows with the provider in a process of its own), the reset's of ./host/internal/sandbox, the projection's of ./host/internal/pick, the flow check's of ./internal/flow, the state store's of ./sidecar (a real redis-server on loopback; skipped without one) and bench/extism's, then `go run ./internal/cmd/benchtool rss` and `ready` and bench/scale.sh (`make bench-scale`), then writes this file with `benchtool report`.\n")
	return os.WriteFile(out, []byte(w.String()), 0o644)
}
