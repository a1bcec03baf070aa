// Package sandbox runs the guest: the wazero runtime with the guest
// compiled once (instrumented with the deadline countdown, its imports
// checked against the documented list: ABI invariant 1; on a start with
// no machine code cached, compiled for wazero's interpreter first and to
// machine code in the background: Config.CompileInBackground), the
// pin_v1 and WASI host functions (docs/ABI.md), and the isolation of
// every run — a
// pooled instance reset byte for byte to the post-initialization template
// over copy-on-write memory (Linux), or a fresh instance (docs/RATIONALE.md,
// "Why is a reset instance as isolated as a fresh one?"). It also keeps the
// compilation cache directory (CacheDir) safe to execute code from.
//
// The pin_v1 request function is where the guest's request meets the
// host's check: each Run gets a Call whose Admit the host built from its
// egress policy, binding and expected request (host/internal/egress), and
// returns the Result the run fixed. Errors are Go errors: the host maps
// them to its op errors.
//
// It imports registry, host/api, internal/abi, internal/argrules,
// internal/jsonv, host/internal/sandbox/wasmbin and host/internal/egress
// (the request decoder); only the host imports it.
package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/elevenmessenger/pinned/internal/abi"
)

// Config configures a Runtime. Every field is required (the host applies
// its defaults).
type Config struct {
	// Guest is the guest module, and GuestSum its SHA-256 (the key of the
	// cached instrumentation plan).
	Guest    []byte
	GuestSum [sha256.Size]byte
	// MemoryLimitPages caps guest linear memory in 64 KiB pages.
	MemoryLimitPages uint32
	// CacheDir, when not empty, holds wazero's compilation cache and the
	// instrumented guest; it is refused (ErrCacheDir) when others could
	// write it.
	CacheDir string
	// Reset asks for the reset pool; without it, or where a reset cannot
	// be proven equivalent (WhyFresh), every run gets a fresh instance.
	Reset bool
	// PoolSize bounds the guests that run at once (> 0).
	PoolSize int
	// CompileInBackground makes New return before the compiler's machine
	// code exists when CacheDir holds none for this guest (a first start,
	// a new guest or wazero version, or no CacheDir): New compiles the
	// guest for wazero's interpreter instead, about a third of the
	// compiler's time, and the compiler compiles it on a goroutine. Until
	// that code is ready every run gets a fresh instance on the
	// interpreter (the same module, host functions, memory limit and
	// checks); the pool is built after it (Start waits for it). A compile
	// that fails with the cache (a full disk) is tried again without it.
	// Close cancels the compile (wazero stops a compile on several
	// workers) and waits for it and for the interpreter's runs.
	CompileInBackground bool
	// Interpreter runs every run in a fresh instance on wazero's
	// interpreter, as CompileInBackground does until the compiler's code
	// is ready, and never compiles machine code: tests hold that state
	// with it.
	Interpreter bool

	// HoldCompile, when not nil, holds the compile in the background
	// until it is closed (tests: the interpreter's tier, held).
	HoldCompile <-chan struct{}
}

// Tier names a wazero engine that runs the guest: TierCompiler (machine
// code, cached in Config.CacheDir) or TierInterpreter (no machine code;
// fresh instances only).
const (
	TierCompiler    = "compiler"
	TierInterpreter = "interpreter"
)

// tier is one compiled form of the guest that fresh runs instantiate.
type tier struct {
	rt   wazero.Runtime
	mod  wazero.CompiledModule
	name string // TierCompiler or TierInterpreter

	// A fresh run holds mu read-locked (Runtime.freshTier); shut closes
	// rt with it write-locked, so no run is using it then.
	mu     sync.RWMutex
	closed bool
}

// shut closes the tier's runtime once no run uses it; runs that find it
// closed take the Runtime's current tier instead.
func (t *tier) shut() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.closed = true
		_ = t.rt.Close(context.Background())
	}
}

// Runtime is the compiled guest and its host functions. It is safe for
// concurrent use.
type Runtime struct {
	// rt and compiled are the compiler's runtime and the guest's machine
	// code (with Config.Interpreter, the interpreter's). Compiled in the
	// background, compiled is set before compiledc is closed; only the
	// pool reads it, after that.
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	// tier is what fresh runs instantiate: the interpreter's until the
	// compiler's code is ready (Config.CompileInBackground), then the
	// compiler's. interp is the interpreter's runtime while it is open.
	tier       atomic.Pointer[tier]
	interp     *tier         // the interpreter's, shut once replaced
	compiledc  chan struct{} // closed once compiled is set, or compileErr
	compileErr error
	modCfg     wazero.ModuleConfig
	plan       *guestPlan
	reset      bool
	maxBytes   uint64
	size       int

	pool  atomic.Pointer[pool] // nil until the pool is built, and without it
	fresh chan struct{}        // fresh instances: a slot per running guest

	// building is the work done in the background (the compile, the
	// pool's build): Close cancels bg (stopBuild) and waits for it.
	building  sync.WaitGroup
	bg        context.Context
	stopBuild context.CancelFunc

	cacheDir string            // Config.CacheDir: also holds the page classes
	guestSum [sha256.Size]byte // Config.GuestSum
}

// New prepares the cache directory, instruments (or refuses) the guest,
// compiles it and checks its imports and exports (CheckModule). With
// Config.CompileInBackground and no machine code for the guest in the
// cache, it compiles for wazero's interpreter and leaves the compiler's
// code to a goroutine (Config.CompileInBackground). The reset pool is
// built by Start.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.CacheDir != "" {
		if err := prepareCacheDir(cfg.CacheDir); err != nil {
			return nil, err
		}
	}
	// The guest is instrumented (or refused) before anything is compiled.
	plan, perr := planGuestCached(cfg.Guest, cfg.GuestSum, cfg.CacheDir)
	if perr != nil {
		return nil, fmt.Errorf("host: read guest: %w", perr)
	}
	r := &Runtime{
		plan:      plan,
		reset:     cfg.Reset && plan.notResettable == "" && !cfg.Interpreter,
		maxBytes:  uint64(cfg.MemoryLimitPages) * 65536,
		size:      cfg.PoolSize,
		fresh:     make(chan struct{}, cfg.PoolSize),
		compiledc: make(chan struct{}),
		cacheDir:  cfg.CacheDir,
		guestSum:  cfg.GuestSum,
	}
	r.bg, r.stopBuild = context.WithCancel(context.Background())
	r.modCfg = wazero.NewModuleConfig().WithName("").WithStartFunctions()
	wasm := plan.wasm
	// The instrumented module (~2 MB) is compiled now (or by the
	// goroutine, which holds it until then); the Runtime keeps only what
	// the pool reads from the plan. Held, it stayed live for the
	// process's life and the collector let the heap grow twice as much
	// over it under load.
	plan.wasm = nil
	// The cache is opened here, so a directory wazero cannot use stops
	// the start as it did before the compile could run in the background.
	var cache wazero.CompilationCache
	if cfg.CacheDir != "" && !cfg.Interpreter {
		var err error
		if cache, err = wazero.NewCompilationCacheWithDir(cfg.CacheDir); err != nil {
			r.stopBuild()
			return nil, &cacheDirError{cfg.CacheDir + ": wazero cannot keep its cache there (" + err.Error() + "): remove what is in the way, or use another directory"}
		}
	}
	marker := compiledMarker(cfg.CacheDir, cfg.GuestSum)
	if cfg.Interpreter || (cfg.CompileInBackground && !fileExists(marker)) {
		it, err := newTier(ctx, TierInterpreter, cfg.MemoryLimitPages, nil, wasm)
		if err != nil {
			r.stopBuild()
			return nil, err
		}
		r.tier.Store(it)
		if cfg.Interpreter {
			r.rt, r.compiled = it.rt, it.mod
			close(r.compiledc)
			return r, nil
		}
		r.interp = it
		r.building.Add(1)
		go func() {
			defer r.building.Done()
			if cfg.HoldCompile != nil {
				select {
				case <-cfg.HoldCompile:
				case <-r.bg.Done():
					r.compileErr = r.bg.Err()
					close(r.compiledc)
					return
				}
			}
			ct, err := newTier(r.bg, TierCompiler, cfg.MemoryLimitPages, cache, wasm)
			if err != nil && cache != nil && r.bg.Err() == nil {
				// Once more without the cache: the machine code is what the
				// start needs, the cache only saves the next one time.
				ct, err = newTier(r.bg, TierCompiler, cfg.MemoryLimitPages, nil, wasm)
				marker = ""
			}
			if err != nil {
				r.compileErr = err
				close(r.compiledc)
				return
			}
			r.adopt(ct, marker)
			r.interp.shut()
			// The interpreter's form (~45 MB here) is garbage now: give its
			// memory back to the system at once, not over minutes.
			debug.FreeOSMemory()
		}()
		return r, nil
	}
	ct, err := newTier(ctx, TierCompiler, cfg.MemoryLimitPages, cache, wasm)
	if err != nil {
		r.stopBuild()
		return nil, err
	}
	r.adopt(ct, marker)
	return r, nil
}

// adopt makes the compiler's tier the one runs use: the pool's runtime
// and code, fresh runs' tier, the marker written (none for ""), and
// WaitCompiled answered.
func (r *Runtime) adopt(ct *tier, marker string) {
	r.rt, r.compiled = ct.rt, ct.mod
	writeMarker(marker)
	r.tier.Store(ct)
	close(r.compiledc)
}

// newTier makes a wazero runtime for the engine named, with the host
// functions, the memory limit in 64 KiB pages and, for the compiler, the
// compilation cache (nil: none), and compiles and checks the
// instrumented guest in it.
func newTier(ctx context.Context, name string, memoryLimitPages uint32, cache wazero.CompilationCache, wasm []byte) (*tier, error) {
	rc := wazero.NewRuntimeConfig() // the compiler where wazero has one
	if name == TierInterpreter {
		rc = wazero.NewRuntimeConfigInterpreter()
	}
	rc = rc.WithMemoryLimitPages(memoryLimitPages).WithCoreFeatures(api.CoreFeaturesV2)
	if cache != nil && name == TierCompiler {
		rc = rc.WithCompilationCache(cache)
	}
	t := &tier{rt: wazero.NewRuntimeWithConfig(ctx, rc), name: name}
	fail := func(err error) (*tier, error) {
		_ = t.rt.Close(context.Background())
		return nil, err
	}
	if err := instantiatePin(ctx, t.rt); err != nil {
		return fail(err)
	}
	if err := instantiateWASI(ctx, t.rt); err != nil {
		return fail(err)
	}
	// wazero compiles the guest's functions on one goroutine unless told
	// otherwise; with an empty cache that is most of a cold start. (The
	// interpreter compiles on one goroutine whatever it is told.)
	cctx := experimental.WithCompilationWorkers(ctx, runtime.GOMAXPROCS(0))
	var err error
	if t.mod, err = t.rt.CompileModule(cctx, wasm); err != nil {
		return fail(fmt.Errorf("host: compile guest: %w", err))
	}
	if err := CheckModule(t.mod); err != nil {
		return fail(err)
	}
	return t, nil
}

// compiledMarker is the file in cacheDir that says the compiler's code
// for the guest is in wazero's cache there (CompileInBackground): keyed,
// as that code is, by the module compiled (the guest's SHA-256 and the
// instrumentation's version, planCacheVersion), the wazero version and
// the platform. "" without a cache directory. A marker whose code is
// gone costs one start the compile, in New, as before.
func compiledMarker(cacheDir string, sum [sha256.Size]byte) string {
	if cacheDir == "" {
		return ""
	}
	return filepath.Join(cacheDir, "pinned-compiled-v1-"+hex.EncodeToString(sum[:])+"-plan"+planCacheVersion+"-"+wazeroVersion()+"-"+runtime.GOOS+"-"+runtime.GOARCH)
}

// wazeroVersion is the wazero module's version this binary was built
// with, or its replacement's ("unknown" when the build info lacks it, as
// in a test binary: such a marker may outlive its code, which costs a
// start the compile).
func wazeroVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path != "github.com/tetratelabs/wazero" {
				continue
			}
			if d.Replace != nil {
				return "replaced" // a fork's version says nothing of its code
			}
			return d.Version
		}
	}
	return "unknown"
}

// writeMarker writes the compiled marker (none for "").
func writeMarker(path string) {
	if path != "" {
		writeAtomic(path, nil)
	}
}

func fileExists(path string) bool {
	if path == "" {
		return false
	}
	_, err := os.Stat(path)
	return err == nil
}

// Tier names the engine fresh runs use now: TierInterpreter until the
// compiler's code is ready (Config.CompileInBackground,
// Config.Interpreter), then TierCompiler.
func (r *Runtime) Tier() string { return r.tier.Load().name }

// WaitCompiled waits until the compiler's code is ready and returns the
// compile's error (runs then keep using the interpreter), or ctx's
// error. With Config.Interpreter it returns nil at once.
func (r *Runtime) WaitCompiled(ctx context.Context) error {
	select {
	case <-r.compiledc:
		return r.compileErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Start builds the reset pool (Config.Reset, where the guest allows it):
// the template is an instance after _initialize and one run of every
// call warm lists (called only then): the registry's own op inputs and
// args built from them, each checked by its op's policy, so nothing any
// caller sent reaches the template. With a cache directory the template
// is kept there, and a later start of the same build of the host, with
// the same guest, memory limit, key and warm-up inputs, reads it instead
// of running the warm-up (templatePath). key names what else decides how
// the warm-up runs (the host passes its registry's digest); "" keeps no
// template. Without the pool it does nothing.
func (r *Runtime) Start(ctx context.Context, key string, warm func() ([]Call, error)) error {
	if !r.reset {
		return nil
	}
	if err := r.WaitCompiled(ctx); err != nil {
		return err
	}
	ws, err := warm()
	if err != nil {
		return err
	}
	p, err := newPool(ctx, r, key, ws)
	if err != nil {
		return err
	}
	r.pool.Store(p)
	return nil
}

// StartBackground builds the reset pool as Start does, on a goroutine of
// its own, and returns at once. Until the pool is built every run gets a
// fresh instance, as without the pool (the same host functions and
// checks, a new instance per run); after it, runs use the pool. done is
// called once, from that goroutine, with Start's error (nil also without
// the pool); after an error runs keep getting fresh instances. Close
// stops the build and waits for it. Call it at most once, instead of
// Start.
func (r *Runtime) StartBackground(key string, warm func() ([]Call, error), done func(error)) {
	r.building.Add(1)
	go func() {
		defer r.building.Done()
		err := r.Start(r.bg, key, warm)
		if done != nil {
			done(err)
		}
	}()
}

// Pooled reports whether runs use the reset pool (after Start, or once
// StartBackground built it).
func (r *Runtime) Pooled() bool { return r.pool.Load() != nil }

// WhyFresh says why the guest cannot use the reset pool ("" when it can):
// the guest's own shape (a table.set, an imported global, ...) or the
// platform (copy-on-write memory needs Linux).
func (r *Runtime) WhyFresh() string { return r.plan.notResettable }

// ResetScan says how a reset finds the pages an op wrote: "write
// tracking" (userfaultfd and PAGEMAP_SCAN, Linux 6.7+), or "pagemap"
// (reading /proc/self/pagemap) with the reason tracking is off. It is
// empty without a reset pool.
func (r *Runtime) ResetScan() string {
	p := r.pool.Load()
	if p == nil {
		return ""
	}
	return p.scan
}

// PageClasses describes the canonical page state of the reset pool: how
// many 4 KiB pages of the template are write-class (copied back by every
// reset) and read-class, of how many, and whether the classes were read
// from the cache directory ("cache") or learned at this start ("probe").
// It is "" without a reset pool, and says so when no classes could be
// learned (no pagemap: every reset drops every page).
func (r *Runtime) PageClasses() string {
	p := r.pool.Load()
	if p == nil {
		return ""
	}
	if p.class == nil {
		return "none (no pagemap: a reset drops every page)"
	}
	write, read := 0, 0
	for _, k := range p.class {
		switch k {
		case pageWrite:
			write++
		case pageRead:
			read++
		}
	}
	return fmt.Sprintf("%d write, %d read of %d pages, from the %s", write, read, len(p.class), p.classesFrom)
}

// TemplateFrom says where the reset pool's template came from: "warm-up"
// (built at this start: _initialize and the warm-up ops) or "cache" (kept
// by an earlier start in the cache directory). It is "" without a reset
// pool.
func (r *Runtime) TemplateFrom() string {
	p := r.pool.Load()
	if p == nil {
		return ""
	}
	return p.templateFrom
}

// Close stops a pool being built in the background and waits for a
// compile in the background to end, then releases the pool and the
// runtimes.
func (r *Runtime) Close(ctx context.Context) error {
	r.stopBuild()
	r.building.Wait()
	if p := r.pool.Load(); p != nil {
		p.close()
	}
	if r.interp != nil {
		r.interp.shut()
	}
	if r.rt == nil { // the compile in the background failed
		return nil
	}
	return r.rt.Close(ctx)
}

// Run runs the guest once for c: in a pooled instance reset to the
// template, or in a fresh one it instantiates and initializes. ctx should
// carry the op's deadline; the guest ends with a *sys.ExitError
// (sys.ExitCodeDeadlineExceeded, sys.ExitCodeContextCanceled) once it is
// done. The result holds what the run fixed and the guest's output, also
// when the error is not nil; the error is wazero's: a trap, an exit, or
// ctx's error.
func (r *Runtime) Run(ctx context.Context, c Call) (Result, error) {
	st := newState(c)
	err := r.run(ctx, st)
	return st.result(), err
}

func (r *Runtime) run(ctx context.Context, st *state) error {
	p := r.pool.Load()
	if p == nil {
		return r.runFresh(ctx, st)
	}
	inst, err := p.get(ctx)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		p.put(inst, true)
		return err
	}
	gctx := context.WithValue(ctx, stateKey{}, st)
	st.clockBase, st.start = p.tmpl.clock, time.Now()
	st.running = true
	_, err = inst.run().Call(gctx)
	st.running = false
	p.put(inst, err == nil)
	return err
}

// runFresh instantiates a fresh guest, initializes it and runs it once.
func (r *Runtime) runFresh(ctx context.Context, st *state) error {
	// As many guests run at once as the pool would hold: each may hold a
	// call stack outside the memory limit while it runs.
	select {
	case r.fresh <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-r.fresh }()
	gctx := context.WithValue(ctx, stateKey{}, st)
	t := r.freshTier()
	defer t.mu.RUnlock()
	mod, err := t.rt.InstantiateModule(gctx, t.mod, r.modCfg)
	if err != nil {
		return err
	}
	defer mod.Close(context.Background())
	if _, err := mod.ExportedFunction(abi.ExportInitialize).Call(gctx); err != nil {
		return err
	}
	st.running = true
	_, err = mod.ExportedFunction(abi.ExportRun).Call(gctx)
	st.running = false
	return err
}

// freshTier is the tier a fresh run instantiates on, read-locked: the
// current one. A run never waits behind the shut of a tier that was
// replaced (RWMutex makes readers wait for a waiting writer): it takes
// the current one instead.
func (r *Runtime) freshTier() *tier {
	for {
		t := r.tier.Load()
		if !t.mu.TryRLock() {
			if r.tier.Load() != t {
				continue // replaced, and being shut
			}
			t.mu.RLock()
		}
		if !t.closed || r.tier.Load() == t { // closed and current: after Close
			return t
		}
		t.mu.RUnlock()
	}
}

// Imports lists every function the host provides to guests as
// "module.name", sorted: the pin_v1 functions and the WASI subset. It is
// the list docs/ABI.md documents (TestABIDrift).
func Imports() []string {
	var out []string
	for _, f := range pinFuncs {
		out = append(out, abi.ModuleName+"."+f.name)
	}
	for _, f := range wasiFuncs {
		out = append(out, WASIModuleName+"."+f.name)
	}
	sort.Strings(out)
	return out
}

// CheckModule refuses a compiled guest that imports anything but the
// documented functions with their exact signatures, imports memory, a
// table or a global, or lacks the exports _initialize, run and memory.
func CheckModule(m wazero.CompiledModule) error {
	allowed := map[string][2][]api.ValueType{}
	for _, f := range pinFuncs {
		allowed[abi.ModuleName+"."+f.name] = [2][]api.ValueType{f.params, f.results}
	}
	for _, f := range wasiFuncs {
		allowed[WASIModuleName+"."+f.name] = [2][]api.ValueType{f.params, f.results}
	}
	for _, def := range m.ImportedFunctions() {
		mod, name, _ := def.Import()
		key := mod + "." + name
		sig, ok := allowed[key]
		if !ok {
			return fmt.Errorf("host: guest imports %s, which the host does not provide", key)
		}
		if !slices.Equal(def.ParamTypes(), sig[0]) || !slices.Equal(def.ResultTypes(), sig[1]) {
			return fmt.Errorf("host: guest imports %s with a signature the host does not provide", key)
		}
	}
	if len(m.ImportedMemories()) > 0 {
		return errors.New("host: guest imports memory")
	}
	ex := m.ExportedFunctions()
	if f, ok := ex[abi.ExportInitialize]; !ok || len(f.ParamTypes()) != 0 || len(f.ResultTypes()) != 0 {
		return errors.New("host: guest lacks export _initialize() (build with -buildmode=c-shared)")
	}
	if f, ok := ex[abi.ExportRun]; !ok || len(f.ParamTypes()) != 0 || !slices.Equal(f.ResultTypes(), []api.ValueType{i32}) {
		return errors.New("host: guest lacks export run() -> i32")
	}
	if _, ok := m.ExportedMemories()[abi.ExportMemory]; !ok {
		return errors.New("host: guest lacks exported memory")
	}
	return nil
}
