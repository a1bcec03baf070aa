package host

import (
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/guest/executor"
	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/host/internal/egress"
	"github.com/elevenmessenger/pinned/host/internal/paginate"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/secret"
)

// The benchmarks of `make bench` (BENCHMARKS.md). Every comparison is
// within one run: the native executor against the sandbox with each
// isolation strategy, the streaming projection against encoding/json.

// runNative runs an op with the executor compiled natively instead of in
// the sandbox: the same input, checks, egress and projection. It is the
// baseline the sandbox's overhead is measured against.
func (e *Engine) runNative(ctx context.Context, call Call) (*Result, *Error) {
	p, herr := e.prepare(call.Service, call.Op)
	if herr != nil {
		return nil, herr
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.timeout())
	defer cancel()
	var t time.Time
	if phaseHook != nil {
		t = time.Now()
	}
	want, brej := p.bind.Bind(call.Args)
	if brej != nil {
		return nil, newError(api.CodeBadArgs, "native bind failed")
	}
	phaseDone(phaseChecks, &t)
	input := append(append([]byte(nil), p.prefix...), call.Args...)
	req, rej, err := executor.Render(input)
	if err != nil || rej != nil {
		return nil, newError(api.CodeBadArgs, "native render failed")
	}
	r, deny := egress.DecodeRequest(req)
	if deny != "" || egress.Admit(p.policy, p.bind, want, r) != "" {
		return nil, newError(api.CodeEgressDenied, "native request refused")
	}
	phaseDone(phaseGuest, &t)
	res, _, herr := e.send(ctx, p, r, call.Credential)
	phaseDone(phaseSend, &t)
	defer phaseDone(phaseAfter, &t)
	if herr == nil && e.echoes(call, res.Data) {
		// The op path's credential echo check is no part of the sandbox:
		// the baseline runs it too (BenchmarkEchoes measures it alone).
		return nil, e.echoError(p, res.Status)
	}
	if herr == nil && p.pager != nil {
		// So is the next page's args of an op that pages (runPages).
		out, ferr := p.pager.Run(ctx, pageOp{e: e, call: call, p: p}, call.Args, res.page(),
			paginate.Limits{MaxResultBytes: e.cfg.maxResultBytes(), Time: e.cfg.pagesTimeout()})
		if ferr != nil || e.echoes(call, out.Next) {
			return nil, newError(api.CodeUpstreamInvalid, "native paging failed")
		}
		res.Next = out.Next
	}
	return res, herr
}

type benchOp struct {
	name, service, op, args string
}

var benchOps = []benchOp{
	{"viewer", "github", "get_viewer", `{}`},
	{"repos100", "github", "list_repos", `{"per_page":100}`},
}

func benchEnv(b *testing.B, isolation string) *testEnv {
	b.Helper()
	return newEnv(b, func(c *Config) { c.Logger = nil; c.Metrics = nil; c.Isolation = isolation })
}

// latencies records per-op durations and reports their median as the
// "p50-ns/op" metric next to the mean.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Nanoseconds()), "p50-ns/op")
}

// BenchmarkOp runs one op end to end against the same loopback HTTPS
// fake with keep-alive: natively (the baseline), through the sandbox with
// the shipped reset strategy, and with a fresh instance per op (the naive
// strategy). Sandbox overhead = sandbox - native.
func BenchmarkOp(b *testing.B) {
	ctx := context.Background()
	for _, iso := range []string{"native", IsolationReset, IsolationFresh} {
		envIso := iso
		if iso == "native" {
			envIso = IsolationReset
		}
		env := benchEnv(b, envIso)
		for _, o := range benchOps {
			call := Call{Service: o.service, Op: o.op, Args: json.RawMessage(o.args), Credential: Credential{Secret: secret.Secret(fakeapi.Token(o.service))}}
			b.Run(o.name+"/"+iso, func(b *testing.B) {
				lat := make(latencies, 0, b.N)
				for i := 0; i < b.N; i++ {
					start := time.Now()
					var err error
					if iso == "native" {
						_, herr := env.eng.runNative(ctx, call)
						if herr != nil {
							err = herr
						}
					} else {
						_, err = env.eng.Run(ctx, call)
					}
					lat = append(lat, time.Since(start))
					if err != nil {
						b.Fatal(err)
					}
				}
				lat.report(b)
			})
		}
	}
}

// BenchmarkSandbox is the sandbox alone (no network): instance, the
// guest's run, the host calls and the request check, then the reset (or
// the instance's close), for each strategy; and "interpreter", a fresh
// instance on wazero's interpreter, as ops run after a start with no
// machine code cached until it is compiled (Config.PoolInBackground).
func BenchmarkSandbox(b *testing.B) {
	ctx := context.Background()
	for _, iso := range []string{IsolationReset, IsolationFresh, "interpreter"} {
		b.Run(iso, func(b *testing.B) {
			var env *testEnv
			if iso == "interpreter" {
				env = newEnv(b, func(c *Config) { c.Logger = nil; c.Metrics = nil; c.Isolation = IsolationFresh; c.interpreter = true })
			} else {
				env = benchEnv(b, iso)
			}
			p, herr := env.eng.prepare("github", "list_repos")
			if herr != nil {
				b.Fatal(herr)
			}
			s0 := env.eng.sb.Stats()
			pages0, resets0, tracked0 := s0.RestoredPages, s0.Resets, s0.TrackedResets
			lat := make(latencies, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				args, want, herr := p.bindArgs(json.RawMessage(`{"per_page":100}`), DefaultMaxArgsBytes)
				if herr == nil {
					_, herr = env.eng.execute(ctx, p, args, want)
				}
				lat = append(lat, time.Since(start))
				if herr != nil {
					b.Fatal(herr)
				}
			}
			b.StopTimer()
			lat.report(b)
			if s := env.eng.sb.Stats(); s.Resets-resets0 > 0 {
				b.ReportMetric(float64(s.RestoredPages-pages0)/float64(s.Resets-resets0), "pages/reset")
				b.ReportMetric(float64(s.TrackedResets-tracked0)/float64(s.Resets-resets0), "tracked/reset")
			}
		})
	}
}

// BenchmarkNativeRender is the executor's own work, natively.
func BenchmarkNativeRender(b *testing.B) {
	env := benchEnv(b, IsolationReset)
	p, _ := env.eng.prepare("github", "list_repos")
	input := append(append([]byte(nil), p.prefix...), `{"per_page":100}`...)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, rej, err := executor.Render(input); err != nil || rej != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkThroughput runs viewer ops from 8 goroutines per core,
// natively and through the sandbox, and reports ops/s. The upstream is
// the canned provider in a process of its own (startCannedProvider), so
// the figure is the host's and its sandbox's; make bench-scale runs it
// at each core count.
func BenchmarkThroughput(b *testing.B) {
	ctx := context.Background()
	eng := cannedEnv(b, IsolationReset)
	call := Call{Service: "github", Op: "get_viewer", Args: json.RawMessage(`{}`), Credential: Credential{Secret: secret.Secret(fakeapi.Token("github"))}}
	for _, mode := range []string{"native", IsolationReset} {
		b.Run(mode, func(b *testing.B) {
			var n atomic.Int64
			b.SetParallelism(8)
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					var err error
					if mode == "native" {
						if _, herr := eng.runNative(ctx, call); herr != nil {
							err = herr
						}
					} else {
						_, err = eng.Run(ctx, call)
					}
					if err != nil {
						b.Error(err)
						return
					}
					n.Add(1)
				}
			})
			b.ReportMetric(float64(n.Load())/time.Since(start).Seconds(), "ops/s")
		})
	}
}

// bindingCost returns a function timing, once, the work request binding
// added to an op (bind.go): the host's own argument rules and rendering
// of the bound request before the guest runs, the comparison of the
// guest's request with it, and the audit target. BenchmarkOverhead calls
// it in every iteration, so its median ("bind-p50-ns") is measured in the
// same run and machine state as the sandbox's overhead.
func bindingCost(b *testing.B, e *Engine, call Call) func() time.Duration {
	lastPolicy = 0
	p, herr := e.prepare(call.Service, call.Op)
	if herr != nil {
		b.Fatal(herr)
	}
	req, rej, err := executor.Render(append(append([]byte(nil), p.prefix...), call.Args...))
	if err != nil || rej != nil {
		b.Fatal("render", err, rej)
	}
	return func() time.Duration {
		r, deny := egress.DecodeRequest(req) // a fresh copy, as pin_v1.request has
		if deny != "" {
			b.Fatal("decode")
		}
		t := time.Now()
		if p.policy.Check(r) != "" {
			b.Fatal("policy")
		}
		lastPolicy = time.Since(t) // the pre-existing shape check, for scale
		t = time.Now()
		want, rej := p.bind.Bind(call.Args)
		if rej != nil || !p.bind.Check(want, r, p.policy.Host()) || p.bind.Target(want) == "" {
			b.Fatal("binding refused the honest request")
		}
		return time.Since(t)
	}
}

// lastPolicy is the duration of the policy check in the last bindingCost
// call: the shape check that predates binding, measured the same way
// ("policy-p50-ns"), to show what any check costs in that machine state.
var lastPolicy time.Duration

// BenchmarkBinding is the binding check alone, per op (see bindingCost).
func BenchmarkBinding(b *testing.B) {
	env := benchEnv(b, IsolationReset)
	for _, o := range benchOps {
		call := Call{Service: o.service, Op: o.op, Args: json.RawMessage(o.args)}
		b.Run(o.name, func(b *testing.B) {
			cost := bindingCost(b, env.eng, call)
			d := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				d = append(d, cost())
			}
			slices.Sort(d)
			b.ReportMetric(float64(d[len(d)/2].Nanoseconds()), "bind-p50-ns")
		})
	}
}

// phaseNames name the phases in BenchmarkOverhead's metrics.
var phaseNames = [numPhases]string{phaseChecks: "checks", phaseGuest: "guest", phaseSend: "send", phaseAfter: "after"}

// BenchmarkOverhead measures the sandbox's overhead per op as the median of
// paired differences: each iteration runs the op natively and then through
// the sandbox (reset strategy) against the same fake, so both halves of a
// pair see the same machine load (the order alternates). It reports the native and sandboxed
// medians and the median of (sandboxed - native).
func BenchmarkOverhead(b *testing.B) {
	ctx := context.Background()
	for _, up := range []string{"", "canned"} {
		env := benchEnv(b, IsolationReset)
		if up == "canned" {
			env = &testEnv{eng: cannedEnv(b, IsolationReset)}
		}
		for _, o := range benchOps {
			call := Call{Service: o.service, Op: o.op, Args: json.RawMessage(o.args), Credential: Credential{Secret: secret.Secret(fakeapi.Token(o.service))}}
			name := o.name
			if up != "" {
				name += "/" + up
			}
			b.Run(name, func(b *testing.B) {
				native := make(latencies, 0, b.N)
				sandbox := make(latencies, 0, b.N)
				diff := make([]time.Duration, 0, b.N)
				bind := make([]time.Duration, 0, b.N)
				policy := make([]time.Duration, 0, b.N)
				bindCost := bindingCost(b, env.eng, call)
				// Each half's phases (phaseHook), and per phase the paired
				// differences: where in the op the overhead sits.
				var cur [numPhases]time.Duration
				phaseHook = func(p phase, d time.Duration) { cur[p] += d }
				defer func() { phaseHook = nil }()
				var nat, sbx [numPhases]time.Duration
				var phaseDiff [numPhases][]time.Duration
				runNative := func() time.Duration {
					t := time.Now()
					if _, herr := env.eng.runNative(ctx, call); herr != nil {
						b.Fatal(herr)
					}
					return time.Since(t)
				}
				runSandbox := func() time.Duration {
					t := time.Now()
					if _, err := env.eng.Run(ctx, call); err != nil {
						b.Fatal(err)
					}
					return time.Since(t)
				}
				for i := 0; i < b.N; i++ {
					// Alternate which half goes first, so garbage collection
					// triggered by one half's allocations lands on both alike.
					var n, s time.Duration
					if i%2 == 0 {
						cur = [numPhases]time.Duration{}
						n, nat = runNative(), cur
						cur = [numPhases]time.Duration{}
						s, sbx = runSandbox(), cur
					} else {
						cur = [numPhases]time.Duration{}
						s, sbx = runSandbox(), cur
						cur = [numPhases]time.Duration{}
						n, nat = runNative(), cur
					}
					for p := range phaseDiff {
						phaseDiff[p] = append(phaseDiff[p], sbx[p]-nat[p])
					}
					native = append(native, n)
					sandbox = append(sandbox, s)
					diff = append(diff, s-n)
					bind = append(bind, bindCost())
					policy = append(policy, lastPolicy)
				}
				slices.Sort(native)
				slices.Sort(sandbox)
				slices.Sort(diff)
				b.ReportMetric(float64(native[len(native)/2].Nanoseconds()), "native-p50-ns")
				b.ReportMetric(float64(sandbox[len(sandbox)/2].Nanoseconds()), "sandbox-p50-ns")
				b.ReportMetric(float64(diff[len(diff)/2].Nanoseconds()), "overhead-p50-ns")
				slices.Sort(bind)
				b.ReportMetric(float64(bind[len(bind)/2].Nanoseconds()), "bind-p50-ns")
				slices.Sort(policy)
				b.ReportMetric(float64(policy[len(policy)/2].Nanoseconds()), "policy-p50-ns")
				for p, name := range phaseNames {
					slices.Sort(phaseDiff[p])
					b.ReportMetric(float64(phaseDiff[p][len(phaseDiff[p])/2].Nanoseconds()), "overhead-"+name+"-p50-ns")
				}
			})
		}
	}
}
