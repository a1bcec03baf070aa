// Package extism is the Extism baseline of issue 6: Extism's Go SDK running
// the project's own guest (guest/executor.wasm) with the pin_v1 functions
// provided as Extism host functions. It is a separate module so the main
// module never depends on the SDK. See README.md.
package extism

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// guestPath is the committed executor, read at run time (never copied).
const guestPath = "../../guest/executor.wasm"

// inputPath is the op input of github list_repos with args
// {"per_page":100}: the op spec line, "\n", the args (docs/ABI.md, "The op
// input"), written once from the host's own inputPrefix.
const inputPath = "testdata/list_repos.input"

// wantURL is what every op must have submitted.
const wantURL = "https://api.github.com/user/repos?per_page=100"

// cacheDir is wazero's on-disk compilation cache for this harness, shared
// across runs so the guest is compiled once per machine.
var cacheDir = filepath.Join(os.TempDir(), "pinned-bench-extism-wazero-cache")

// The pin_v1 ABI (internal/abi of the main module, which this module may
// not import): names, result codes, reject reasons and limits.
const (
	moduleName = "pin_v1"

	codeOK      int32 = 0
	codeEFAULT  int32 = -1
	codeEINVAL  int32 = -2
	codeERANGE  int32 = -3
	codeETOOBIG int32 = -5
	codeESTATE  int32 = -6
	codeELIMIT  int32 = -7

	rejectSyntax     int32 = 1
	rejectUndeclared int32 = 2
	rejectValue      int32 = 10 // the last reason (abi.RejectValue)

	maxRequestBytes = 256 << 10
	maxNameBytes    = 64
	maxCalls        = 16

	memoryLimitPages = 512 // host.DefaultMemoryLimitPages: 32 MiB
)

type outcome uint8

const (
	outcomeNone outcome = iota
	outcomeAccepted
	outcomeDenied
	outcomeRejected
)

// request is the request encoding, decoded with encoding/json. The host
// additionally refuses duplicate keys and applies its egress policy; this
// harness only decodes (README.md, "Comparability").
type request struct {
	Method  *string     `json:"method"`
	URL     *string     `json:"url"`
	Headers [][2]string `json:"headers"`
	Body    *string     `json:"body,omitempty"`
}

// opState is one op's host-side state, carried in the context of the call
// to run, as in package host.
type opState struct {
	input    []byte
	declared map[string]bool
	mem      api.Memory // the guest's own linear memory (see guestMemory)
	calls    int
	outcome  outcome
	req      *request
	raw      []byte
	rejected struct {
		reason int32
		name   string
	}
}

type stateKey struct{}

func stateFrom(ctx context.Context) *opState {
	if st, ok := ctx.Value(stateKey{}).(*opState); ok {
		return st
	}
	return nil
}

// budget mirrors host's opState.budget. There is no ESTATE-during-
// _initialize here: Extism runs _initialize inside the first Call, with
// that call's context, and gives the host no hook between it and run. The
// guest makes no pin_v1 call during _initialize (checkCalls verifies the
// count per op), so the difference is not exercised.
func (st *opState) budget() int32 {
	st.calls++
	if st.calls > maxCalls {
		return codeELIMIT
	}
	if st.outcome != outcomeNone {
		return codeESTATE
	}
	return codeOK
}

func result(stack []uint64, v int32) { stack[0] = extism.EncodeI32(v) }

// pinFunctions are input_len, input_read, request and reject as Extism host
// functions in namespace pin_v1, with the semantics of host/pinabi.go
// minus the egress policy.
func pinFunctions() []extism.HostFunction {
	i32 := extism.ValueTypeI32
	fns := []extism.HostFunction{
		extism.NewHostFunctionWithStack("input_len", pinInputLen, nil, []extism.ValueType{i32}),
		extism.NewHostFunctionWithStack("input_read", pinInputRead, []extism.ValueType{i32, i32}, []extism.ValueType{i32}),
		extism.NewHostFunctionWithStack("request", pinRequest, []extism.ValueType{i32, i32}, []extism.ValueType{i32}),
		extism.NewHostFunctionWithStack("reject", pinReject, []extism.ValueType{i32, i32, i32}, []extism.ValueType{i32}),
	}
	for i := range fns {
		fns[i].SetNamespace(moduleName)
	}
	return fns
}

func pinInputLen(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
	st := stateFrom(ctx)
	if st == nil {
		result(stack, codeESTATE)
		return
	}
	if r := st.budget(); r != codeOK {
		result(stack, r)
		return
	}
	result(stack, int32(len(st.input)))
}

func pinInputRead(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
	st := stateFrom(ctx)
	if st == nil {
		result(stack, codeESTATE)
		return
	}
	if r := st.budget(); r != codeOK {
		result(stack, r)
		return
	}
	buf, n := uint32(stack[0]), uint32(stack[1])
	if int64(n) != int64(len(st.input)) {
		result(stack, codeERANGE)
		return
	}
	if !st.mem.Write(buf, st.input) {
		result(stack, codeEFAULT)
		return
	}
	result(stack, int32(n))
}

func pinRequest(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
	st := stateFrom(ctx)
	if st == nil {
		result(stack, codeESTATE)
		return
	}
	if r := st.budget(); r != codeOK {
		result(stack, r)
		return
	}
	buf, n := uint32(stack[0]), uint32(stack[1])
	if n > maxRequestBytes {
		st.outcome = outcomeDenied
		result(stack, codeETOOBIG)
		return
	}
	view, ok := st.mem.Read(buf, n)
	if !ok {
		result(stack, codeEFAULT)
		return
	}
	raw := append([]byte(nil), view...)
	req, err := decodeRequest(raw)
	if err != nil {
		st.outcome = outcomeDenied
		result(stack, codeEINVAL)
		return
	}
	st.outcome, st.req, st.raw = outcomeAccepted, req, raw
	result(stack, codeOK)
}

func pinReject(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
	st := stateFrom(ctx)
	if st == nil {
		result(stack, codeESTATE)
		return
	}
	if r := st.budget(); r != codeOK {
		result(stack, r)
		return
	}
	reason, ptr, n := extism.DecodeI32(stack[0]), uint32(stack[1]), uint32(stack[2])
	if reason < rejectSyntax || reason > rejectValue || n > maxNameBytes {
		result(stack, codeEINVAL)
		return
	}
	view, ok := st.mem.Read(ptr, n)
	if !ok {
		result(stack, codeEFAULT)
		return
	}
	name := string(view)
	if !printableName(name) || (reason == rejectSyntax) != (name == "") {
		result(stack, codeEINVAL)
		return
	}
	if reason != rejectUndeclared && reason != rejectSyntax && !st.declared[name] {
		result(stack, codeEINVAL)
		return
	}
	st.outcome = outcomeRejected
	st.rejected.reason, st.rejected.name = reason, name
	result(stack, codeOK)
}

// decodeRequest decodes the request encoding: a JSON object with method,
// url and headers (an array of [name, value] pairs) and optionally body,
// nothing else.
func decodeRequest(b []byte) (*request, error) {
	if !utf8.Valid(b) {
		return nil, errors.New("request: invalid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r request
	if err := dec.Decode(&r); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("request: trailing data")
	}
	if r.Method == nil || r.URL == nil || r.Headers == nil {
		return nil, errors.New("request: missing method, url or headers")
	}
	return &r, nil
}

func printableName(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

// guestMemory returns the linear memory of the plugin's main module (our
// guest).
//
// Extism's CurrentPlugin.Memory() is NOT that memory: it is the memory of
// the Extism kernel module (extism-runtime.wasm), through which Extism PDK
// plugins exchange data with the host (alloc/load/store by kernel offset).
// Our guest passes pointers into its own memory, and the Go SDK (v1.7.1)
// has no public accessor for the main module's api.Module: Plugin.Module()
// wraps it in an unexported field, and Extism host functions are built
// with api.GoFunction, so they never receive the calling module. This
// reads that unexported field once per instance (not per host call).
// TestCurrentPluginMemoryIsKernelMemory shows the difference.
func guestMemory(p *extism.Plugin) api.Memory {
	v := reflect.ValueOf(p.Module()).Elem()
	f := v.FieldByName("inner")
	if !f.IsValid() || f.Type() != reflect.TypeFor[api.Module]() {
		panic("extism.Module layout changed: no field inner of type api.Module")
	}
	mod := *(*api.Module)(unsafe.Pointer(f.UnsafeAddr()))
	mem := mod.Memory()
	if mem == nil {
		panic("guest has no memory")
	}
	return mem
}

// fixture is the compiled plugin and the op input.
type fixture struct {
	compiled *extism.CompiledPlugin
	input    []byte
	declared map[string]bool
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	ctx := context.Background()
	wasm, err := os.ReadFile(guestPath)
	if err != nil {
		tb.Fatal(err)
	}
	input, err := os.ReadFile(inputPath)
	if err != nil {
		tb.Fatal(err)
	}
	declared, err := declaredArgs(input)
	if err != nil {
		tb.Fatal(err)
	}
	cache, err := wazero.NewCompilationCacheWithDir(cacheDir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cache.Close(ctx) })
	compiled, err := extism.NewCompiledPlugin(ctx,
		extism.Manifest{
			Wasm: []extism.Wasm{extism.WasmData{Data: wasm, Name: "main"}},
			// The host's default memory limit (host.DefaultMemoryLimitPages).
			// No Timeout: a non-zero one makes Extism enable wazero's
			// CloseOnContextDone (README.md, "Comparability").
			Memory: &extism.ManifestMemory{MaxPages: memoryLimitPages},
		},
		extism.PluginConfig{
			EnableWasi:    true,
			RuntimeConfig: wazero.NewRuntimeConfig().WithCompilationCache(cache),
		},
		pinFunctions())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { compiled.Close(ctx) })
	return &fixture{compiled: compiled, input: input, declared: declared}
}

// declaredArgs returns the arg names the op input's spec line declares
// (what reject checks a name against).
func declaredArgs(input []byte) (map[string]bool, error) {
	line, _, ok := bytes.Cut(input, []byte{'\n'})
	if !ok {
		return nil, errors.New("op input has no spec line")
	}
	var spec struct {
		Op struct {
			Args map[string]json.RawMessage `json:"args"`
		} `json:"op"`
	}
	if err := json.Unmarshal(line, &spec); err != nil {
		return nil, err
	}
	m := make(map[string]bool, len(spec.Op.Args))
	for k := range spec.Op.Args {
		m[k] = true
	}
	return m, nil
}

func (f *fixture) instance(tb testing.TB) *extism.Plugin {
	// The ModuleConfig is wazero's default (no clocks or randomness from
	// the host, no stdout); Extism removes the start functions and runs
	// _initialize itself before the first call.
	p, err := f.compiled.Instance(context.Background(), extism.PluginInstanceConfig{ModuleConfig: wazero.NewModuleConfig()})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// call runs one op on p: Call("run") with a fresh op state in the context.
func (f *fixture) call(p *extism.Plugin, mem api.Memory) (*opState, error) {
	st := &opState{input: f.input, declared: f.declared, mem: mem}
	ctx := context.WithValue(context.Background(), stateKey{}, st)
	_, _, err := p.CallWithContext(ctx, "run", nil)
	return st, err
}

// check fails unless the op submitted the expected request, with the
// guest's three pin_v1 calls (input_len, input_read, request).
func check(tb testing.TB, st *opState, err error) {
	if err != nil {
		tb.Fatalf("run: %v", err)
	}
	if st.outcome != outcomeAccepted || st.req == nil {
		tb.Fatalf("outcome %d, want an accepted request (reject %+v)", st.outcome, st.rejected)
	}
	if !strings.HasPrefix(*st.req.URL, wantURL) {
		tb.Fatalf("url %q, want prefix %q", *st.req.URL, wantURL)
	}
	if st.calls != 3 {
		tb.Fatalf("%d pin_v1 calls, want 3", st.calls)
	}
}

// latencies records per-op durations and reports their median as the
// "p50-ns/op" metric next to the mean (as host's bench_test.go does).
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Nanoseconds()), "p50-ns/op")
}

// BenchmarkExtism runs the list_repos op (per_page=100) in Extism:
//   - instance-per-op: one compiled plugin; per op a new instance
//     (CompiledPlugin.Instance), Call("run") (Extism runs _initialize
//     first) and Close. Fresh-per-op isolation, comparable in kind to the
//     host's "fresh" strategy.
//   - reuse: one instance; per op only Call("run"). Not isolated (the
//     guest's memory and globals carry over between ops); Extism's fast
//     path, for reference.
func BenchmarkExtism(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()

	b.Run("instance-per-op", func(b *testing.B) {
		lat := make(latencies, 0, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			p := f.instance(b)
			st, err := f.call(p, guestMemory(p))
			cerr := p.Close(ctx)
			lat = append(lat, time.Since(start))
			check(b, st, err)
			if cerr != nil {
				b.Fatal(cerr)
			}
		}
		b.StopTimer()
		lat.report(b)
	})

	b.Run("reuse", func(b *testing.B) {
		p := f.instance(b)
		defer p.Close(ctx)
		mem := guestMemory(p)
		// Warm: the first call also runs _initialize.
		st, err := f.call(p, mem)
		check(b, st, err)
		lat := make(latencies, 0, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			st, err := f.call(p, mem)
			lat = append(lat, time.Since(start))
			check(b, st, err)
		}
		b.StopTimer()
		lat.report(b)
	})
}

// TestExtismRunsGuest runs the op once each way and checks the request.
func TestExtismRunsGuest(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p := f.instance(t)
	defer p.Close(ctx)
	mem := guestMemory(p)
	for i := 0; i < 3; i++ {
		st, err := f.call(p, mem)
		check(t, st, err)
		if i == 0 {
			t.Logf("request: %s", st.raw)
		}
	}
}

// TestCurrentPluginMemoryIsKernelMemory documents why the host functions
// do not use CurrentPlugin.Memory(): inside a host function it is the
// Extism kernel's memory, not the guest's, so the guest's (ptr, len) would
// be read from the wrong memory.
func TestCurrentPluginMemoryIsKernelMemory(t *testing.T) {
	f := newFixture(t)
	p := f.instance(t)
	defer p.Close(context.Background())
	guest := guestMemory(p)
	kernel := p.Memory() // what CurrentPlugin.Memory() returns
	if guest == kernel {
		t.Fatal("CurrentPlugin.Memory() is the guest's memory after all; guestMemory is unnecessary")
	}
	t.Logf("guest memory %d bytes, Extism kernel memory %d bytes", guest.Size(), kernel.Size())
}

// TestPinSemantics exercises the error paths of the host functions
// directly, against a memory of the guest.
func TestPinSemantics(t *testing.T) {
	f := newFixture(t)
	p := f.instance(t)
	defer p.Close(context.Background())
	mem := guestMemory(p)
	size := mem.Size()
	newState := func() (*opState, context.Context) {
		st := &opState{input: f.input, declared: f.declared, mem: mem}
		return st, context.WithValue(context.Background(), stateKey{}, st)
	}
	call := func(ctx context.Context, fn extism.HostFunctionStackCallback, args ...uint64) int32 {
		stack := make([]uint64, max(len(args), 1))
		copy(stack, args)
		fn(ctx, nil, stack)
		return extism.DecodeI32(stack[0])
	}
	u := func(v uint32) uint64 { return uint64(v) }

	st, ctx := newState()
	if got := call(ctx, pinInputLen); got != int32(len(f.input)) {
		t.Fatalf("input_len = %d", got)
	}
	if got := call(ctx, pinInputRead, u(0), u(uint32(len(f.input)-1))); got != codeERANGE {
		t.Fatalf("input_read short = %d, want ERANGE", got)
	}
	if got := call(ctx, pinInputRead, u(size-10), u(uint32(len(f.input)))); got != codeEFAULT {
		t.Fatalf("input_read past memory = %d, want EFAULT", got)
	}
	if got := call(ctx, pinRequest, u(0), u(maxRequestBytes+1)); got != codeETOOBIG || st.outcome != outcomeDenied {
		t.Fatalf("request too big = %d", got)
	}
	if got := call(ctx, pinRequest, u(0), u(1)); got != codeESTATE {
		t.Fatalf("request after outcome = %d, want ESTATE", got)
	}

	st, ctx = newState()
	if got := call(ctx, pinRequest, u(size-1), u(2)); got != codeEFAULT || st.outcome != outcomeNone {
		t.Fatalf("request past memory = %d", got)
	}
	bad := []byte(`{"method":"GET","url":"x","headers":[],"extra":1}`)
	mem.Write(0, bad)
	if got := call(ctx, pinRequest, u(0), u(uint32(len(bad)))); got != codeEINVAL || st.outcome != outcomeDenied {
		t.Fatalf("malformed request = %d", got)
	}

	_, ctx = newState()
	good := []byte(`{"method":"GET","url":"https://api.github.com/user/repos","headers":[["Accept","x"]]}`)
	mem.Write(0, good)
	if got := call(ctx, pinRequest, u(0), u(uint32(len(good)))); got != codeOK {
		t.Fatalf("request = %d", got)
	}

	st, ctx = newState()
	mem.Write(0, []byte("nope"))
	if got := call(ctx, pinReject, u(4), u(0), u(4)); got != codeEINVAL {
		t.Fatalf("reject undeclared name = %d, want EINVAL", got)
	}
	mem.Write(0, []byte("per_page"))
	if got := call(ctx, pinReject, u(4), u(0), u(8)); got != codeOK || st.outcome != outcomeRejected {
		t.Fatalf("reject = %d", got)
	}

	st, ctx = newState()
	for i := 0; i < maxCalls; i++ {
		call(ctx, pinInputLen)
	}
	if got := call(ctx, pinInputLen); got != codeELIMIT || st.calls != maxCalls+1 {
		t.Fatalf("call %d = %d, want ELIMIT", st.calls, got)
	}
}
