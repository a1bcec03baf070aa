package host

import (
	"context"
	"encoding/json"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/guest/executor"
	"github.com/elevenmessenger/pinned/internal/fakeapi"
)

// runNative runs an op with the executor compiled natively instead of in
// the sandbox: the same input, checks, egress and projection. It is the
// baseline the sandbox's overhead is measured against.
func (e *Engine) runNative(ctx context.Context, call Call) (*Result, *Error) {
	p, herr := e.prepare(call.Service, call.Op)
	if herr != nil {
		return nil, herr
	}
	input := append(append([]byte(nil), p.prefix...), call.Args...)
	req, rej, err := executor.Render(input)
	if err != nil || rej != nil {
		return nil, newError(CodeBadArgs, "native render failed")
	}
	r, deny := decodeRequest(req)
	if deny != "" || p.policy.check(r) != "" {
		return nil, newError(CodeEgressDenied, "native request refused")
	}
	res, _, herr := e.send(ctx, p, r, call.Credential)
	return res, herr
}

type benchOp struct {
	name, service, op, args string
}

var benchOps = []benchOp{
	{"viewer", "github", "get_viewer", `{}`},
	{"repos100", "github", "list_repos", `{"per_page":100}`},
}

func benchEnv(b *testing.B) *testEnv {
	b.Helper()
	return newEnv(b, func(c *Config) { c.Logger = nil; c.Metrics = nil })
}

// BenchmarkOp compares one op through the sandbox with the same op run by
// the native executor, against the same loopback HTTPS fake with
// keep-alive. The difference is the sandbox's overhead per op.
func BenchmarkOp(b *testing.B) {
	env := benchEnv(b)
	ctx := context.Background()
	for _, o := range benchOps {
		call := Call{Service: o.service, Op: o.op, Args: json.RawMessage(o.args), Credential: Credential{Secret: Secret(fakeapi.Token(o.service))}}
		b.Run(o.name+"/native", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := env.eng.runNative(ctx, call); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(o.name+"/sandbox", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := env.eng.Run(ctx, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSandbox measures the sandbox alone: an instance, the guest's
// run, the request check; no network.
func BenchmarkSandbox(b *testing.B) {
	env := benchEnv(b)
	ctx := context.Background()
	p, herr := env.eng.prepare("github", "list_repos")
	if herr != nil {
		b.Fatal(herr)
	}
	b.ReportAllocs()
	pages0, resets0 := env.eng.pool.restoredPages.Load(), env.eng.pool.resets.Load()
	for i := 0; i < b.N; i++ {
		st, herr := env.eng.execute(ctx, p, json.RawMessage(`{"per_page":100}`))
		if herr != nil || st.outcome != outcomeAccepted {
			b.Fatal(herr)
		}
	}
	if r := env.eng.pool.resets.Load() - resets0; r > 0 {
		b.ReportMetric(float64(env.eng.pool.restoredPages.Load()-pages0)/float64(r), "pages/reset")
	}
}

// BenchmarkNativeRender is the executor's own work, natively.
func BenchmarkNativeRender(b *testing.B) {
	env := benchEnv(b)
	p, _ := env.eng.prepare("github", "list_repos")
	input := append(append([]byte(nil), p.prefix...), `{"per_page":100}`...)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, rej, err := executor.Render(input); err != nil || rej != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkThroughput runs viewer ops from all cores.
func BenchmarkThroughput(b *testing.B) {
	env := benchEnv(b)
	ctx := context.Background()
	call := Call{Service: "github", Op: "get_viewer", Args: json.RawMessage(`{}`), Credential: Credential{Secret: Secret(fakeapi.Token("github"))}}
	var n atomic.Int64
	start := time.Now()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := env.eng.Run(ctx, call); err != nil {
				b.Error(err)
				return
			}
			n.Add(1)
		}
	})
	b.ReportMetric(float64(n.Load())/time.Since(start).Seconds(), "ops/s")
	_ = runtime.GOMAXPROCS(0)
}
