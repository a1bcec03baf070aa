// Package host runs manifest ops in the WebAssembly sandbox. It is the
// trusted side of the pin_v1 ABI (docs/ABI.md): it compiles the guest once,
// gives every op an instance in the state of a fresh one (a pooled
// instance reset byte for byte, or a new one; see Config.Isolation and
// docs/RATIONALE.md), checks the request the guest renders
// against the op (egress policy) and against the request the caller's args
// bind the op to (request binding), dials only public addresses of the ONE
// pinned host, injects the credential after the checks, caps and projects
// the response, and maps failures to stable codes.
//
// Invariants (DESIGN.md, "The host ABI"), each proven by a test with a
// hostile guest:
//
//  1. The guest's imports are exactly pin_v1 plus a WASI subset.
//  2. All egress goes through pin_v1.request and its checks, and is
//     exactly the request the op's manifest templates render from the
//     caller's args, which the host validates itself (request binding,
//     bind.go).
//  3. The credential is injected after the checks and never enters guest
//     memory, logs, errors or metrics.
//  4. Only public addresses are dialed; no proxy, no redirects, TLS only,
//     a deadline per op.
//  5. Responses are capped and projected before anything else sees them;
//     an oversized result is refused, never truncated.
//  6. Memory, time and host calls are bounded per op.
//  7. Errors cross the boundary as small integer codes.
//
// host knows nothing of grants or OAuth: callers pass a Credential.
package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/elevenmessenger/pinned/guest"
	"github.com/elevenmessenger/pinned/internal/abi"
	"github.com/elevenmessenger/pinned/internal/egress"
	"github.com/elevenmessenger/pinned/internal/pick"
	"github.com/elevenmessenger/pinned/internal/secret"
	"github.com/elevenmessenger/pinned/registry"
)

// Defaults of Config.
const (
	DefaultTimeout          = 15 * time.Second
	DefaultMaxResponseBytes = 4 << 20
	DefaultMaxResultBytes   = 64 << 10
	DefaultMaxArgsBytes     = 64 << 10
	DefaultMemoryLimitPages = 512 // 32 MiB of linear memory
	// MaxMemoryLimitPages bounds MemoryLimitPages: 65536 pages of 64 KiB,
	// the 4 GiB a 32-bit memory can address.
	MaxMemoryLimitPages = 65536
	DefaultMaxHostCalls = 16
	DefaultMaxLogBytes  = 4 << 10
	// MaxErrorMessageBytes caps the message projected from an error body.
	MaxErrorMessageBytes = 1 << 10
)

// Config configures an Engine. The zero value is usable: every zero field
// takes its default.
type Config struct {
	// Registry is where services and ops come from; default
	// registry.Default(), the embedded snapshot. Execution trusts only an
	// embedded registry (DESIGN.md, "Trust boundaries").
	Registry *registry.Registry
	// Guest is the executor module; default guest.Wasm().
	Guest []byte
	// Timeout bounds one op end to end: instantiate, run, dial, TLS,
	// headers and body. Default 15s.
	Timeout time.Duration
	// MaxResponseBytes caps the decoded upstream body; default 4 MiB.
	MaxResponseBytes int64
	// MaxResultBytes caps the projected result; default 64 KiB.
	MaxResultBytes int
	// MaxArgsBytes caps the caller's args JSON; default 64 KiB.
	MaxArgsBytes int
	// MemoryLimitPages caps guest linear memory in 64 KiB pages; default
	// 512 (32 MiB).
	MemoryLimitPages uint32
	// MaxHostCalls caps pin_v1 calls per op; default 16.
	MaxHostCalls int
	// MaxLogBytes caps what one op's guest may write to stdout/stderr;
	// default 4 KiB. The rest is counted and dropped.
	MaxLogBytes int
	// Override maps the pinned hosts to a local server (tests, demo).
	Override *Override
	// Resolver resolves pinned hosts; default the system resolver.
	Resolver Resolver
	// Logger receives one audit event per egress attempt; default a
	// disabled logger.
	Logger *zerolog.Logger
	// Metrics, when set, counts denials; see NewMetrics.
	Metrics *Metrics
	// UserAgent is sent upstream; default "pinned/1".
	UserAgent string
	// Isolation is IsolationReset (default: reuse instances reset to the
	// post-initialization state, falling back to fresh instances where a
	// reset cannot be proven equivalent) or IsolationFresh (a new instance
	// for every op).
	Isolation string
	// PoolSize bounds the guests that run at once (the instances
	// IsolationReset keeps, or the fresh instances IsolationFresh makes);
	// default twice GOMAXPROCS, at least 4. Each running guest may hold,
	// besides its linear memory, a call stack of up to ~150 MiB on the Go
	// heap for the length of its run (wazero's fixed ceiling; docs/SECURITY.md).
	PoolSize int
	// CacheDir, when set, holds wazero's compilation cache: compiled guest
	// code keyed by the module's hash and the wazero version, so a restart
	// skips compilation. Empty means compile in memory every start.
	CacheDir string
	// PagesTimeout bounds a call with Pages end to end, all its pages
	// together (each page has Timeout too); default DefaultPagesTimeout.
	PagesTimeout time.Duration
}

// Credential is what the host presents upstream for an op.
type Credential struct {
	// Kind is "oauth", "pat" or "" (legacy). An "oauth" credential is
	// always sent as Bearer (RFC 6750 section 2.1).
	Kind string
	// Secret is the token. It is placed in the request header by the host
	// after the egress checks and never anywhere else.
	Secret Secret
}

// Secret is a credential value (package internal/secret, the one type the
// host, the grants and the rotation share). Its String, Format and
// MarshalText methods redact it, so a Secret printed by mistake shows
// "[redacted]"; string(s) is the value.
type Secret = secret.Secret

// Call is one op to run.
type Call struct {
	Service    string
	Op         string
	Args       json.RawMessage // a JSON object; empty means {}
	Credential Credential
	// Pages, when not 0, asks the host to follow Result.Next itself: up
	// to Pages pages (1 to the op's paginate.max_pages) merged into one
	// list under the result cap (see paginate.go). 0 runs one page.
	Pages int
}

// Result is a successful op.
type Result struct {
	// Status is the upstream HTTP status (2xx).
	Status int `json:"status"`
	// Data is the projected response (null when the pick keeps nothing or
	// the body was empty).
	Data json.RawMessage `json:"data"`
	// RawBytes is the decoded size of the upstream body.
	RawBytes int64 `json:"-"`
	// Duration is the whole op, sandbox and upstream.
	Duration time.Duration `json:"-"`
	// Next, for an op that pages, is the args of the next page: the
	// call's args with the paginate arg set to the provider's cursor,
	// validated like caller args. Nil on the last page.
	Next json.RawMessage `json:"next,omitempty"`
	// Pages is how many pages Data holds, when Call.Pages was set.
	Pages int `json:"pages,omitempty"`
	// Stopped says why paging ended: always with Call.Pages, and on a
	// single page when a next page exists but cannot be followed.
	Stopped StopReason `json:"stopped,omitempty"`
	// StopMessage explains Stopped for a human.
	StopMessage string `json:"stop_message,omitempty"`

	cursor *pageCursor // set by send for an op that pages
}

// Engine runs ops. It is safe for concurrent use; create one per process.
type Engine struct {
	cfg      Config
	reg      *registry.Registry
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	modCfg   wazero.ModuleConfig
	client   *http.Client
	log      zerolog.Logger

	pool     *pool         // nil with IsolationFresh
	fresh    chan struct{} // with IsolationFresh: a slot per running guest
	strategy string        // the strategy in use, with the fallback reason

	// services is the host's own copy of each manifest, keyed by service
	// id, taken once at New from Registry.Services(): the op path looks
	// services up here, never in the registry. ids are the keys, sorted.
	services map[string]*registry.Manifest
	ids      []string

	mu    sync.Mutex
	preps map[string]*prepared
}

// New compiles the guest, checks its imports and exports, and builds the
// egress client. It fails when the guest imports anything outside the
// documented list (ABI invariant 1).
func New(ctx context.Context, cfg Config) (*Engine, error) {
	// The embedded registry is parsed (every rule, every pattern) while the
	// guest is read and compiled; the template needs it, compiling does not.
	regc := make(chan *registry.Registry, 1)
	if cfg.Registry == nil {
		go func() { regc <- registry.Default() }()
	} else {
		regc <- cfg.Registry
	}
	// The plan cache is keyed by the guest's SHA-256; the embedded
	// guest's is computed at build time (3 ms a start saved).
	var guestSum [sha256.Size]byte
	if cfg.Guest == nil {
		cfg.Guest, guestSum = guest.Wasm(), guest.SHA256()
	} else {
		guestSum = sha256.Sum256(cfg.Guest)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.MaxResultBytes <= 0 {
		cfg.MaxResultBytes = DefaultMaxResultBytes
	}
	if cfg.MaxArgsBytes <= 0 {
		cfg.MaxArgsBytes = DefaultMaxArgsBytes
	}
	if cfg.MemoryLimitPages == 0 {
		cfg.MemoryLimitPages = DefaultMemoryLimitPages
	}
	if cfg.MemoryLimitPages > MaxMemoryLimitPages {
		return nil, fmt.Errorf("host: MemoryLimitPages %d is over %d (4 GiB, the limit of a 32-bit memory)", cfg.MemoryLimitPages, MaxMemoryLimitPages)
	}
	if cfg.MaxHostCalls <= 0 {
		cfg.MaxHostCalls = DefaultMaxHostCalls
	}
	if cfg.MaxLogBytes <= 0 {
		cfg.MaxLogBytes = DefaultMaxLogBytes
	}
	if cfg.Resolver == nil {
		cfg.Resolver = egress.DefaultResolver
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "pinned/1"
	}
	e := &Engine{cfg: cfg, preps: map[string]*prepared{}, log: zerolog.Nop()}
	defer func() {
		if e.reg == nil { // an early return: let the parse finish unobserved
			go func() { <-regc }()
		}
	}()
	if cfg.Logger != nil {
		e.log = *cfg.Logger
	}

	client, err := newClient(cfg.Resolver, cfg.Override)
	if err != nil {
		return nil, err
	}
	e.client = client

	if cfg.CacheDir != "" {
		if err := prepareCacheDir(cfg.CacheDir); err != nil {
			return nil, err
		}
	}
	// The guest is instrumented (or refused) before anything is compiled.
	plan, perr := planGuestCached(cfg.Guest, guestSum, cfg.CacheDir)
	if perr != nil {
		return nil, fmt.Errorf("host: read guest: %w", perr)
	}
	rc := wazero.NewRuntimeConfig().
		WithMemoryLimitPages(cfg.MemoryLimitPages).
		WithCoreFeatures(api.CoreFeaturesV2)
	if cfg.CacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("host: compilation cache %s: %w", cfg.CacheDir, err)
		}
		rc = rc.WithCompilationCache(cache)
	}
	e.rt = wazero.NewRuntimeWithConfig(ctx, rc)
	if err := instantiatePin(ctx, e.rt); err != nil {
		return nil, e.closeWith(ctx, err)
	}
	if err := instantiateWASI(ctx, e.rt); err != nil {
		return nil, e.closeWith(ctx, err)
	}
	reset := false
	switch cfg.Isolation {
	case "", IsolationReset:
		if plan.notResettable == "" {
			reset, e.strategy = true, IsolationReset
		} else {
			e.strategy = IsolationFresh + " (" + plan.notResettable + ")"
		}
	case IsolationFresh:
		e.strategy = IsolationFresh
	default:
		return nil, e.closeWith(ctx, fmt.Errorf("host: unknown isolation %q (want %s or %s)", cfg.Isolation, IsolationReset, IsolationFresh))
	}
	e.compiled, err = e.rt.CompileModule(ctx, plan.wasm)
	if err != nil {
		return nil, e.closeWith(ctx, fmt.Errorf("host: compile guest: %w", err))
	}
	if err := CheckModule(e.compiled); err != nil {
		return nil, e.closeWith(ctx, err)
	}
	e.modCfg = wazero.NewModuleConfig().WithName("").WithStartFunctions()
	e.reg = <-regc
	e.cfg.Registry = e.reg
	e.services = map[string]*registry.Manifest{}
	for _, m := range e.reg.Services() {
		e.services[m.ID] = m
		e.ids = append(e.ids, m.ID)
	}
	sort.Strings(e.ids)
	size := cfg.PoolSize
	if size <= 0 {
		size = max(4, 2*runtime.GOMAXPROCS(0))
	}
	e.fresh = make(chan struct{}, size)
	if reset {
		if e.pool, err = newPool(ctx, e, plan, e.compiled, size); err != nil {
			return nil, e.closeWith(ctx, err)
		}
	}
	return e, nil
}

// Strategy names the isolation strategy in use: "reset", "fresh", or
// "fresh (<why reset was not possible>)".
func (e *Engine) Strategy() string { return e.strategy }

func (e *Engine) closeWith(ctx context.Context, err error) error {
	_ = e.rt.Close(ctx)
	return err
}

// Close releases the runtime and idle connections.
func (e *Engine) Close(ctx context.Context) error {
	e.client.CloseIdleConnections()
	if e.pool != nil {
		e.pool.close()
	}
	return e.rt.Close(ctx)
}

// Imports lists every function the host provides to guests as
// "module.name", sorted: the pin_v1 functions and the WASI subset. It is
// the list docs/ABI.md documents.
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
		if !sameTypes(def.ParamTypes(), sig[0]) || !sameTypes(def.ResultTypes(), sig[1]) {
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
	if f, ok := ex[abi.ExportRun]; !ok || len(f.ParamTypes()) != 0 || !sameTypes(f.ResultTypes(), []api.ValueType{i32}) {
		return errors.New("host: guest lacks export run() -> i32")
	}
	if _, ok := m.ExportedMemories()[abi.ExportMemory]; !ok {
		return errors.New("host: guest lacks exported memory")
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// prepared is the per-op precomputation: policy, input prefix, projection.
type prepared struct {
	m      *registry.Manifest
	op     *registry.Op
	name   string
	policy *egress.Policy
	bind   *egress.Binding
	prefix []byte // the op input up to the args string
	proj   *pick.Projection
	errMsg []string // error_message path
	pager  *pager   // nil when the op does not page
}

func (e *Engine) prepare(service, opName string) (*prepared, *Error) {
	key := service + "\x00" + opName
	e.mu.Lock()
	p := e.preps[key]
	e.mu.Unlock()
	if p != nil {
		return p, nil
	}
	m, ok := e.services[service]
	if !ok {
		return nil, newError(CodeUnknownService, fmt.Sprintf("unknown service %q (services: %s)", service, joinNames(e.ids)))
	}
	op, ok := m.Op(opName)
	if !ok {
		return nil, newError(CodeUnknownOp, fmt.Sprintf("service %s has no op %q (ops: %s)", service, opName, joinNames(m.OpNames())))
	}
	pol, err := egress.NewPolicy(m, op)
	if err != nil {
		return nil, &Error{Code: CodeSandboxError, Message: "op cannot be prepared", cause: err}
	}
	prefix, err := egress.InputPrefix(m, op)
	if err != nil {
		return nil, &Error{Code: CodeSandboxError, Message: "op cannot be prepared", cause: err}
	}
	bind, err := egress.NewBinding(m, op, prefix)
	if err != nil {
		return nil, &Error{Code: CodeSandboxError, Message: "op cannot be prepared", cause: err}
	}
	p = &prepared{m: m, op: op, name: opName, policy: pol, bind: bind, prefix: prefix, proj: pick.New(op.Pick.Root, op.Pick.Fields)}
	p.errMsg = splitPath(m.ErrorMessagePath())
	p.pager = newPager(m, op)
	e.mu.Lock()
	e.preps[key] = p
	e.mu.Unlock()
	return p, nil
}

func joinNames(names []string) string {
	var b bytes.Buffer
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n)
	}
	return b.String()
}

// inputHook, when set, may change the guest's op input after the host
// bound the caller's args. Only this package's tests set it (to hand a
// hostile test guest its instructions outside the args, which the host
// validates); it is nil in every build of the program.
var inputHook func(ctx context.Context, input []byte) []byte

// Run runs one op: it checks the call, renders the request in a guest
// instance in the state of a fresh one (a pooled instance reset to the
// template, or a new one; Config.Isolation), checks it, sends it with the credential, and projects the
// answer. The error, when not nil, is an *Error.
//
// For an op that pages, the result carries Next (the args of the next
// page); with call.Pages, Run follows Next itself, each page a whole op as
// above, and merges the pages' items (paginate.go).
func (e *Engine) Run(ctx context.Context, call Call) (*Result, error) {
	start := time.Now()
	res, err := e.runPages(ctx, call, start)
	if err != nil {
		return nil, err
	}
	res.Duration = time.Since(start)
	return res, nil
}

func (e *Engine) run(ctx context.Context, call Call, start time.Time) (*Result, *Error) {
	p, perr := e.prepare(call.Service, call.Op)
	if perr != nil {
		return nil, perr
	}
	if err := checkCredential(call.Credential); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	st, herr := e.execute(ctx, p, call.Args)
	if herr != nil {
		return nil, herr
	}
	if herr := e.outcomeError(ctx, call, p, st); herr != nil {
		return nil, herr
	}
	write := p.op.Access == "write"
	var sent sentTracker
	sendCtx := ctx
	if write {
		sendCtx = sent.trace(ctx)
	}
	res, raw, err := e.send(sendCtx, p, st.req, call.Credential)
	if write {
		markApplied(err, sent.wrote.Load())
	}
	status := 0
	if res != nil {
		status = res.Status
		res.RawBytes = raw
	} else if err != nil {
		status = err.Status
	}
	e.audit(ctx, call, p, res, err, status, raw, start, p.bind.Target(st.want))
	return res, err
}

// execute runs the guest for one op and returns its state with the outcome
// fixed. ctx should carry the op's deadline.
func (e *Engine) execute(ctx context.Context, p *prepared, args json.RawMessage) (*opState, *Error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	if len(args) > e.cfg.MaxArgsBytes {
		return nil, &Error{Code: CodeBadArgs, Message: fmt.Sprintf("args are larger than %d bytes", e.cfg.MaxArgsBytes)}
	}
	// The host checks the caller's args itself (package argrules, the
	// rules the guest also runs) and renders the request they bind the op
	// to: bad args fail here, before any guest runs, and the guest's
	// request must be exactly this one (bind.go).
	want, rej := p.bind.Bind(args)
	if rej != nil {
		return nil, badArgs(p, rej.Reason, rej.Arg)
	}
	input := append(append(make([]byte, 0, len(p.prefix)+len(args)), p.prefix...), args...)
	if inputHook != nil {
		input = inputHook(ctx, input)
	}
	st := &opState{
		input:     input,
		policy:    p.policy,
		bind:      p.bind,
		want:      want,
		op:        p.op,
		maxCall:   e.cfg.MaxHostCalls,
		start:     time.Now(),
		clockBase: clockOrigin,
		log:       logBuffer{max: e.cfg.MaxLogBytes},
	}
	err := e.sandbox(ctx, st)
	e.guestLog(ctx, p, st)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// outcomeError turns a fixed outcome other than an accepted request into
// the op's error (auditing a denial).
func (e *Engine) outcomeError(ctx context.Context, call Call, p *prepared, st *opState) *Error {
	switch st.outcome {
	case outcomeAccepted:
		return nil
	case outcomeRejected:
		return badArgs(p, st.rejReason, st.rejArg)
	case outcomeDenied:
		err := &Error{Code: CodeEgressDenied, Message: "the request broke the egress policy (" + string(st.deny) + ")", Deny: st.deny}
		e.audit(ctx, call, p, nil, err, 0, 0, st.start, "")
		return err
	}
	return newError(CodeSandboxError, "the executor finished without a request")
}

// sandbox runs the guest once for the op: in a pooled instance reset to
// the template (IsolationReset) or in a fresh one.
func (e *Engine) sandbox(ctx context.Context, st *opState) *Error {
	if e.pool == nil {
		return e.sandboxFresh(ctx, st)
	}
	inst, err := e.pool.get(ctx)
	if err != nil {
		return guestFailure(ctx, err)
	}
	if err := ctx.Err(); err != nil {
		e.pool.put(inst, true)
		return guestFailure(ctx, err)
	}
	gctx := context.WithValue(ctx, stateKey{}, st)
	st.clockBase, st.start = e.pool.tmpl.clock, time.Now()
	st.running = true
	_, err = inst.run().Call(gctx)
	st.running = false
	e.pool.put(inst, err == nil)
	if err != nil {
		return guestFailure(ctx, err)
	}
	return nil
}

// sandboxFresh instantiates a fresh guest, initializes it and runs it once.
func (e *Engine) sandboxFresh(ctx context.Context, st *opState) *Error {
	// As many guests run at once as the pool would hold: each may hold a
	// call stack outside the memory limit while it runs.
	select {
	case e.fresh <- struct{}{}:
	case <-ctx.Done():
		return guestFailure(ctx, ctx.Err())
	}
	defer func() { <-e.fresh }()
	gctx := context.WithValue(ctx, stateKey{}, st)
	mod, err := e.rt.InstantiateModule(gctx, e.compiled, e.modCfg)
	if err != nil {
		return guestFailure(ctx, err)
	}
	defer mod.Close(context.Background())
	if _, err := mod.ExportedFunction(abi.ExportInitialize).Call(gctx); err != nil {
		return guestFailure(ctx, err)
	}
	st.running = true
	_, err = mod.ExportedFunction(abi.ExportRun).Call(gctx)
	st.running = false
	if err != nil {
		return guestFailure(ctx, err)
	}
	return nil
}

// guestFailure maps an instantiate or call error to an op error. A guest
// that traps, exits or runs out of memory fails its op only. The op's
// deadline or cancel ends the guest with an exit code from sched_yield,
// mapped to timeout and canceled.
func guestFailure(ctx context.Context, err error) *Error {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			return &Error{Code: CodeTimeout, Message: "the op's deadline passed in the sandbox", cause: err}
		case sys.ExitCodeContextCanceled:
			return &Error{Code: CodeCanceled, Message: "the op was canceled", cause: err}
		}
		return &Error{Code: CodeSandboxError, Message: fmt.Sprintf("the executor exited with code %d", exit.ExitCode()), cause: err}
	}
	switch {
	case errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled:
		return &Error{Code: CodeCanceled, Message: "the op was canceled", cause: err}
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded:
		return &Error{Code: CodeTimeout, Message: "the op's deadline passed in the sandbox", cause: err}
	}
	return &Error{Code: CodeSandboxError, Message: "the executor trapped", cause: err}
}

func (e *Engine) guestLog(ctx context.Context, p *prepared, st *opState) {
	if len(st.log.buf) == 0 && st.log.dropped == 0 {
		return
	}
	e.logger(ctx).Debug().Str("service", p.m.ID).Str("op", p.name).
		Str("guest_output", string(bytes.ToValidUTF8(st.log.buf, []byte("\ufffd")))).
		Int64("guest_output_dropped", st.log.dropped).Msg("guest output")
}

func checkCredential(c Credential) *Error {
	if c.Secret == "" {
		return newError(CodeCredentialInvalid, "no credential given")
	}
	for i := 0; i < len(c.Secret); i++ {
		if ch := c.Secret[i]; ch <= 0x20 || ch >= 0x7f {
			return newError(CodeCredentialInvalid, "the credential holds characters an HTTP header cannot carry")
		}
	}
	switch c.Kind {
	case "", "pat", "oauth":
		return nil
	}
	return newError(CodeCredentialInvalid, fmt.Sprintf("unknown credential kind %q (want pat or oauth)", c.Kind))
}
