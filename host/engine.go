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
//     host/internal/egress).
//  3. The credential is injected after the checks and never enters guest
//     memory, logs, errors or metrics.
//  4. Only public addresses are dialed; no proxy, no redirects, TLS only,
//     a deadline per op.
//  5. Responses are capped and projected before anything else sees them;
//     an oversized result is refused, never truncated.
//  6. Memory, time and host calls are bounded per op.
//  7. Errors cross the boundary as small integer codes.
//
// host is the public layer over internal packages, each named for what
// it is: host/internal/sandbox (wazero, the reset pool, the pin_v1 and WASI
// functions), host/internal/egress (the request policy, request binding, the
// dialer), host/internal/upstream (the exchange with the provider: credential
// injection, caps, rate limits, error messages, whether a write was
// applied), host/internal/paginate (the next cursor and following pages) and
// host/internal/pick (the projection). It owns the one op path that joins
// them, the audit events and metrics, and Error. The values an op's
// outcome carries (codes, applied, deny and stop reasons) are package
// host/api's, which the internal packages produce.
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
	"github.com/elevenmessenger/pinned/internal/tracing"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/tetratelabs/wazero/sys"

	"github.com/elevenmessenger/pinned/guest"
	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/host/internal/egress"
	"github.com/elevenmessenger/pinned/host/internal/paginate"
	"github.com/elevenmessenger/pinned/host/internal/sandbox"
	"github.com/elevenmessenger/pinned/host/internal/upstream"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/secret"
)

// Isolation strategies (Config.Isolation).
const (
	// IsolationReset reuses instances, restoring before every op exactly
	// the state a fresh instance has after initialization: linear memory
	// from a sealed copy-on-write image, every mutable global, the memory
	// size. Instances that trap, exit, time out or grow memory are thrown
	// away. Falls back to IsolationFresh where it cannot be proven
	// equivalent (see docs/RATIONALE.md, "Why is a reset instance as
	// isolated as a fresh one?").
	IsolationReset = "reset"
	// IsolationFresh instantiates a new module instance for every op.
	IsolationFresh = "fresh"
)

// Defaults of Config, and its bounds.
const (
	DefaultTimeout          = 15 * time.Second // Config.Timeout: one op end to end
	DefaultMaxResponseBytes = 4 << 20          // Config.MaxResponseBytes: 4 MiB of decoded upstream body
	DefaultMaxResultBytes   = 64 << 10         // Config.MaxResultBytes: 64 KiB of projected result
	DefaultMaxArgsBytes     = 64 << 10         // Config.MaxArgsBytes: 64 KiB of caller args JSON
	DefaultMemoryLimitPages = 512              // Config.MemoryLimitPages: 32 MiB of linear memory, in 64 KiB pages
	// MaxMemoryLimitPages bounds MemoryLimitPages: 65536 pages of 64 KiB,
	// the 4 GiB a 32-bit memory can address (New fails above it).
	MaxMemoryLimitPages = 65536
	DefaultMaxHostCalls = 16      // Config.MaxHostCalls: pin_v1 calls per op
	DefaultMaxLogBytes  = 4 << 10 // Config.MaxLogBytes: 4 KiB of guest stdout/stderr per op
	DefaultUserAgent    = "pinned/1"
)

// Config configures an Engine. The zero value is usable: a zero field
// means its default (the Default* constants), as New reads it.
type Config struct {
	// Registry is where services and ops come from; default
	// registry.Default(), the embedded snapshot. Execution trusts only an
	// embedded registry (DESIGN.md, "Trust boundaries").
	Registry *registry.Registry
	// Guest is the executor module, which the engine only reads; default
	// the embedded one (guest.Module).
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
	// OmitTarget leaves the request target out of the audit events, so
	// the log holds no argument value at all (pinned mcp, docs/MCP.md);
	// by default the target is logged with every secret arg redacted.
	OmitTarget bool
	// Metrics, when set, counts egress attempts, denials and upstream body
	// sizes; see NewMetrics.
	Metrics *Metrics
	// UserAgent is sent upstream; default DefaultUserAgent.
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
	// PoolInBackground makes New return once the guest is compiled and
	// build the reset pool (its template, page classes and instances)
	// afterwards: until it is built, each op runs in a fresh instance, as
	// with IsolationFresh (the same host functions and checks). WaitPool
	// says when it is built. Off, New returns with the pool built. With
	// it, a start whose CacheDir holds no machine code for the guest (the
	// first, or any without CacheDir) compiles the guest for wazero's
	// interpreter, about a third of the compiler's time, and returns:
	// until the compiler's code is ready, ops run in fresh interpreter
	// instances (Tier), with the same host functions and checks.
	PoolInBackground bool

	// interpreter runs every op in a fresh interpreter instance, as a cold
	// start does until the compiler's code is ready; holdCompile holds
	// that compile until it is closed (tests).
	interpreter bool
	holdCompile <-chan struct{}
}

// Credential is what the host presents upstream for an op.
type Credential struct {
	// Kind is "oauth", "pat" or "" (legacy). An "oauth" credential is
	// always sent as Bearer (RFC 6750 section 2.1).
	Kind string
	// Secret is the token. It is placed in the request header by the host
	// after the egress checks and never anywhere else.
	Secret secret.Secret
	// User is the first part of a two-part credential (auth schemes
	// "basic" and "template": an account email, a key id), presented with
	// Secret and guarded like it; empty for every other scheme.
	User secret.Secret
	// Tenant is the connection's tenant label ("acme" of
	// acme.atlassian.net) for a manifest whose host is a per-connection
	// pattern, and empty otherwise. It fixes the one host every op of the
	// connection talks to (registry.Manifest.HostFor); it is set when the
	// member connects and sealed with the credential, never an op arg.
	Tenant string
}

// Call is one op to run.
type Call struct {
	// Service is the manifest's id ("github") and Op the op's name
	// ("list_repos"), as the registry lists them.
	Service string
	Op      string
	// Args are the caller's args: a JSON object, at most
	// Config.MaxArgsBytes; empty means {}.
	Args json.RawMessage
	// Credential is presented upstream (never to the guest).
	Credential Credential
	// Pages, when not 0, asks the host to follow Result.Next itself: up
	// to Pages pages (1 to the op's paginate.max_pages) merged into one
	// list under the result cap (host/internal/paginate). 0 runs one page.
	Pages int
	// Withhold are other secrets the caller holds beside Credential (a
	// refresh token, a token a rotation replaced): like the credential,
	// an answer that echoes one is withheld (api.CodeCredentialEcho).
	// They are never sent.
	Withhold []secret.Secret
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
	Stopped api.StopReason `json:"stopped,omitempty"`
	// StopMessage explains Stopped for a human.
	StopMessage string `json:"stop_message,omitempty"`
	// Target is the request target as sent (path and query; the first
	// page's when Run followed pages), with every secret arg's value
	// replaced by "[redacted]"; empty with Config.OmitTarget. For audit
	// records; never sent to the provider again.
	Target string `json:"-"`

	cursor *paginate.Cursor // set by send for an op that pages
}

// Engine runs ops. It is safe for concurrent use; create one per process.
type Engine struct {
	cfg      Config
	reg      *registry.Registry
	sb       *sandbox.Runtime
	up       *upstream.Client
	log      zerolog.Logger
	strategy string // the strategy in use, with the fallback reason

	// services is the host's own copy of each manifest, keyed by service
	// id, taken once at New from Registry.Services(): the op path looks
	// services up here, never in the registry. ids are the keys, sorted.
	services map[string]*registry.Manifest
	ids      []string

	mu    sync.Mutex
	preps map[string]*prepared

	// poolDone is closed when the reset pool is built, or failed to be
	// (poolErr); at New without Config.PoolInBackground.
	poolDone chan struct{}
	poolErr  error
}

// New compiles the guest, checks its imports and exports, builds the
// egress client and, with IsolationReset, the reset pool (its template
// runs every registry op once with args built from its declaration,
// warmArgs; with Config.PoolInBackground, after New returns). It fails
// when the guest
// imports anything outside the documented list (ABI invariant 1) or
// cannot be instrumented with the deadline check, when
// cfg.MemoryLimitPages is over MaxMemoryLimitPages, cfg.Isolation is
// unknown, cfg.Override is malformed, or cfg.CacheDir is refused (an error
// matching ErrCacheDir).
func New(ctx context.Context, cfg Config) (*Engine, error) {
	if cfg.memoryLimitPages() > MaxMemoryLimitPages {
		return nil, fmt.Errorf("host: MemoryLimitPages %d is over %d (4 GiB, the limit of a 32-bit memory)", cfg.MemoryLimitPages, MaxMemoryLimitPages)
	}
	reset := false
	switch cfg.Isolation {
	case "", IsolationReset:
		reset = true
	case IsolationFresh:
	default:
		return nil, fmt.Errorf("host: unknown isolation %q (want %s or %s)", cfg.Isolation, IsolationReset, IsolationFresh)
	}
	tr, err := newTransport(cfg.resolver(), cfg.Override)
	if err != nil {
		return nil, err
	}
	// The embedded registry is parsed (every rule, every pattern) while the
	// guest is read and compiled; the template needs it, compiling does not.
	regc := make(chan *registry.Registry, 1)
	if cfg.Registry == nil {
		go func() { regc <- registry.Default() }()
	} else {
		regc <- cfg.Registry
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
	e.up = upstream.NewClient(upstream.Config{Transport: tr, UserAgent: cfg.userAgent(),
		MaxResponseBytes: cfg.maxResponseBytes(), MaxResultBytes: cfg.maxResultBytes()})

	// The plan cache is keyed by the guest's SHA-256; the embedded
	// guest's is computed at build time (3 ms a start saved), and the
	// sandbox reads the embedded module in place (guest.Module; copying
	// it cost a warm start about 20 ms of page faults on the benchmark VM).
	wasm, guestSum := cfg.Guest, guest.SHA256()
	if wasm == nil {
		wasm = guest.Module()
	} else {
		guestSum = sha256.Sum256(wasm)
	}
	sb, err := sandbox.New(ctx, sandbox.Config{
		Guest: wasm, GuestSum: guestSum, MemoryLimitPages: cfg.memoryLimitPages(),
		CacheDir: cfg.CacheDir, Reset: reset, PoolSize: cfg.poolSize(),
		CompileInBackground: cfg.PoolInBackground, Interpreter: cfg.interpreter, HoldCompile: cfg.holdCompile,
	})
	if err != nil {
		if errors.Is(err, sandbox.ErrCacheDir) {
			err = &cacheDirError{err}
		}
		return nil, err
	}
	e.sb = sb
	switch {
	case !reset:
		e.strategy = IsolationFresh
	case sb.WhyFresh() != "":
		e.strategy = IsolationFresh + " (" + sb.WhyFresh() + ")"
	default:
		e.strategy = IsolationReset
	}
	e.reg = <-regc
	e.services = map[string]*registry.Manifest{}
	for _, m := range e.reg.Services() {
		e.services[m.ID] = m
		e.ids = append(e.ids, m.ID)
	}
	sort.Strings(e.ids)
	e.poolDone = make(chan struct{})
	if cfg.PoolInBackground {
		sb.StartBackground(e.reg.Digest(), e.warmOps, func(err error) {
			e.poolErr = err
			close(e.poolDone)
		})
		return e, nil
	}
	if err := sb.Start(ctx, e.reg.Digest(), e.warmOps); err != nil {
		_ = sb.Close(ctx)
		return nil, err
	}
	close(e.poolDone)
	return e, nil
}

// WaitPool waits until the reset pool is built (Config.PoolInBackground)
// and returns the build's error, after which ops keep running in fresh
// instances; or ctx's error. Without PoolInBackground, and with fresh
// isolation, it returns nil at once.
func (e *Engine) WaitPool(ctx context.Context) error {
	select {
	case <-e.poolDone:
		return e.poolErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Config's defaults: each accessor is its field, or the default when the
// field is zero (or, for a number, not above zero).

func (c *Config) timeout() time.Duration {
	return orDefault(c.Timeout, DefaultTimeout)
}

func (c *Config) maxResponseBytes() int64 {
	return orDefault(c.MaxResponseBytes, DefaultMaxResponseBytes)
}

func (c *Config) maxResultBytes() int {
	return orDefault(c.MaxResultBytes, DefaultMaxResultBytes)
}

func (c *Config) maxArgsBytes() int {
	return orDefault(c.MaxArgsBytes, DefaultMaxArgsBytes)
}

func (c *Config) memoryLimitPages() uint32 {
	return orDefault(c.MemoryLimitPages, DefaultMemoryLimitPages)
}

func (c *Config) maxHostCalls() int {
	return orDefault(c.MaxHostCalls, DefaultMaxHostCalls)
}

func (c *Config) maxLogBytes() int {
	return orDefault(c.MaxLogBytes, DefaultMaxLogBytes)
}

func (c *Config) pagesTimeout() time.Duration {
	return orDefault(c.PagesTimeout, DefaultPagesTimeout)
}

func (c *Config) poolSize() int {
	return orDefault(c.PoolSize, max(4, 2*runtime.GOMAXPROCS(0)))
}

func (c *Config) userAgent() string {
	if c.UserAgent == "" {
		return DefaultUserAgent
	}
	return c.UserAgent
}

func (c *Config) resolver() Resolver {
	if c.Resolver == nil {
		return egress.DefaultResolver
	}
	return c.Resolver
}

// orDefault is v, or def when v is not above zero.
func orDefault[T int | int64 | uint32 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// ErrCacheDir is matched by the error New returns when Config.CacheDir
// cannot be used: it cannot be created, or someone other than this user
// (and root) could write machine code into it (errors.Is(err,
// ErrCacheDir); the error's message says what is wrong and the fix).
const ErrCacheDir = constError("compilation cache directory refused")

// constError is an error that is a constant, so no package can replace
// it (nothing exported is mutable).
type constError string

func (e constError) Error() string { return string(e) }

// cacheDirError is the sandbox's refusal of Config.CacheDir (its message
// says what is wrong and the fix); it matches ErrCacheDir.
type cacheDirError struct{ err error }

func (e *cacheDirError) Error() string        { return e.err.Error() }
func (e *cacheDirError) Unwrap() error        { return e.err }
func (e *cacheDirError) Is(target error) bool { return target == ErrCacheDir }

// Strategy names the isolation strategy: "reset", "fresh", or "fresh
// (<why reset was not possible>)". With Config.PoolInBackground, "reset"
// ops run in fresh instances until the pool is built (WaitPool).
func (e *Engine) Strategy() string { return e.strategy }

// Tier names the wazero engine that runs ops in fresh instances now:
// "interpreter" while a start with Config.PoolInBackground compiles the
// guest's machine code in the background, "compiler" from then on (and
// always without PoolInBackground). The reset pool, once built, runs on
// the compiler's code.
func (e *Engine) Tier() string { return e.sb.Tier() }

// WaitCompiled waits until the guest's machine code is ready (at New,
// unless Config.PoolInBackground started on the interpreter: Tier) and
// returns the compile's error, after which ops keep running on the
// interpreter; or ctx's error.
func (e *Engine) WaitCompiled(ctx context.Context) error { return e.sb.WaitCompiled(ctx) }

// ResetScan says how the reset strategy finds the pages an op wrote:
// "write tracking" (Linux 6.7+, where userfaultfd is allowed) or
// "pagemap (reason)"; empty with fresh isolation. Both isolate alike
// (docs/RATIONALE.md); tracking is cheaper.
func (e *Engine) ResetScan() string { return e.sb.ResetScan() }

// PageClasses describes the reset pool's page classes, for the start-up
// log: "58 write, 676 read of 1664 pages, from the cache" (or "from the
// probe" when learned at this start, the first with a cache directory);
// empty with fresh isolation. Write-class pages are what every reset
// copies (docs/RATIONALE.md, "Why is the write class learned one op at a
// time?").
func (e *Engine) PageClasses() string { return e.sb.PageClasses() }

// Template says where the reset pool's template came from, for the
// start-up log: "warm-up" (built at this start) or "cache" (kept in
// Config.CacheDir by an earlier start of this build with the same guest,
// registry and memory limit); empty with fresh isolation, and until the
// pool is built (Config.PoolInBackground).
func (e *Engine) Template() string { return e.sb.TemplateFrom() }

// Close releases the sandbox (the pool and wazero's runtime) and idle
// connections. Ops running meanwhile fail.
func (e *Engine) Close(ctx context.Context) error {
	e.up.CloseIdleConnections()
	return e.sb.Close(ctx)
}

// warmOps lists one warm-up run per op of the registry, with args the
// op's declaration accepts (warmArgs), each checked by its op's policy
// alone: the reset pool's template runs them, and the pool learns from
// them which pages an op writes, so nothing any caller sent reaches it.
func (e *Engine) warmOps() ([]sandbox.Call, error) {
	var ws []sandbox.Call
	for _, id := range e.ids {
		for _, name := range e.services[id].OpNames() {
			pp, err := e.prepare(id, name)
			if err != nil {
				return nil, err
			}
			policy := pp.policy
			ws = append(ws, sandbox.Call{
				Input: append(append([]byte(nil), pp.prefix...), warmArgs(pp)...), Op: pp.op,
				Admit: func(r *egress.Request) api.DenyReason { return egress.Admit(policy, nil, nil, r) },
			})
		}
	}
	return ws, nil
}

// prepared is the per-op precomputation: policy, binding, input prefix,
// exchange, pager. The engine keeps one per op; Render and ValidateArgs
// build one for the manifest they are given.
type prepared struct {
	m      *registry.Manifest
	op     *registry.Op
	name   string
	policy *egress.Policy
	bind   *egress.Binding
	prefix []byte          // the op input up to the args string
	x      *upstream.Op    // the op's upstream exchange
	pager  *paginate.Pager // nil when the op does not page
}

// prepare returns the engine's precomputation of an op of its registry.
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
		return nil, newError(api.CodeUnknownService, fmt.Sprintf("unknown service %q (services: %s)", service, joinNames(e.ids)))
	}
	p, err := prepareOp(m, opName)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.preps[key] = p
	e.mu.Unlock()
	return p, nil
}

// prepareOp compiles the op opName of m: its egress checks (policy,
// binding, input prefix), its upstream exchange and its pager.
func prepareOp(m *registry.Manifest, opName string) (*prepared, *Error) {
	op, ok := m.Op(opName)
	if !ok {
		return nil, newError(api.CodeUnknownOp, fmt.Sprintf("service %s has no op %q (ops: %s)", m.ID, opName, joinNames(m.OpNames())))
	}
	eg, err := egress.Prepare(m, op)
	if err != nil {
		return nil, &Error{Code: api.CodeSandboxError, Message: "op cannot be prepared", cause: err}
	}
	return &prepared{m: m, op: op, name: opName, policy: eg.Policy, bind: eg.Binding, prefix: eg.Prefix,
		x: upstream.NewOp(m, op, eg.Policy.ContentType()), pager: paginate.New(m, op)}, nil
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

// bindArgs is the first half of every op, run before any guest: the
// caller's args (empty means {}, at most maxArgsBytes) checked by the
// host itself (package argrules, the rules the guest also runs) and
// bound to the request they render (host/internal/egress); a write's
// args refused if they hide code points from the consent. It returns the
// args and the request the guest's must be.
func (p *prepared) bindArgs(args json.RawMessage, maxArgsBytes int) (json.RawMessage, *egress.Bound, *Error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	if len(args) > maxArgsBytes {
		return nil, nil, &Error{Code: api.CodeBadArgs, Message: fmt.Sprintf("args are larger than %d bytes", maxArgsBytes)}
	}
	want, rej := p.bind.Bind(args)
	if rej != nil {
		return nil, nil, badArgs(p, rej.Reason, rej.Arg)
	}
	if herr := refuseHidden(p.op, p.bind, want); herr != nil {
		return nil, nil, herr
	}
	return args, want, nil
}

// inputHook, when set, may change the guest's op input after the host
// bound the caller's args. Only this package's tests set it (to hand a
// hostile test guest its instructions outside the args, which the host
// validates); it is nil in every build of the program.
var inputHook func(ctx context.Context, input []byte) []byte

// phase is a part of an op's path, as phaseHook reports it.
type phase int

const (
	phaseChecks phase = iota // the host's checks before the guest: credential, args, binding
	phaseGuest               // the guest's run and the check of its request (native: the executor's render)
	phaseSend                // the upstream exchange: dial, TLS, request, answer, projection
	phaseAfter               // the answer's echo check, the audit event and, for an op that pages, the next args
	numPhases
)

// phaseHook, when set, is told how long each phase of an op took. Only
// this package's benchmarks set it (BenchmarkOverhead says where the
// sandbox's overhead sits); it is nil in every build of the program.
var phaseHook func(phase, time.Duration)

// phaseDone reports the phase that began at *t to phaseHook and starts
// the next one.
func phaseDone(p phase, t *time.Time) {
	if phaseHook != nil {
		now := time.Now()
		phaseHook(p, now.Sub(*t))
		*t = now
	}
}

// Run runs one op: it checks the call, renders the request in a guest
// instance in the state of a fresh one (a pooled instance reset to the
// template, or a new one; Config.Isolation), checks it, sends it with the
// credential, and projects the answer. The error, when not nil, is an
// *Error.
//
// For an op that pages, the result carries Next (the args of the next
// page); with call.Pages, Run follows Next itself, each page a whole op as
// above, and merges the pages' items (host/internal/paginate).
func (e *Engine) Run(ctx context.Context, call Call) (*Result, error) {
	start := time.Now()
	res, err := e.runPages(ctx, call, start)
	if err != nil {
		return nil, err
	}
	res.Duration = time.Since(start)
	return res, nil
}

// run is one page of an op, top to bottom: the credential checked, the
// args bound, the guest run, its request sent, the answer checked for
// echoes, the egress audited. A per-connection host's op runs from p
// made for the connection's one host (prepareTenant).
func (e *Engine) run(ctx context.Context, call Call, p *prepared, start time.Time) (*Result, *Error) {
	var t time.Time
	if phaseHook != nil {
		t = time.Now()
	}
	if err := checkCredentialFor(p.m, call.Credential); err != nil {
		return nil, err
	}
	if p.m.HasTenant() {
		var herr *Error
		if p, herr = e.prepareTenant(p, call.Credential.Tenant); herr != nil {
			return nil, herr
		}
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.timeout())
	defer cancel()
	args, want, herr := p.bindArgs(call.Args, e.cfg.maxArgsBytes())
	if herr != nil {
		return nil, herr
	}
	phaseDone(phaseChecks, &t)
	req, herr := e.execute(ctx, p, args, want)
	if herr != nil {
		return nil, herr
	}
	// The target is all the op needs of want (~1 KiB) after the guest:
	// taken now, want is not kept while the provider answers.
	target := p.bind.Target(want)
	phaseDone(phaseGuest, &t)
	res, raw, err := e.send(ctx, p, req, call.Credential)
	phaseDone(phaseSend, &t)
	if err == nil && e.echoes(call, res.Data) {
		err, res = e.echoError(p, res.Status), nil
	}
	status := 0
	shown := target
	if e.cfg.OmitTarget {
		shown = ""
	}
	if res != nil {
		status = res.Status
		res.RawBytes = raw
		res.Target = shown
	} else if err != nil {
		status = err.Status
		err.Target = shown
	}
	e.audit(ctx, p, res, err, status, raw, start, target)
	phaseDone(phaseAfter, &t)
	return res, err
}

// execute runs the guest for one op whose args are bound to want, and
// returns the request it submitted, which Admit accepted: the op's egress
// policy, then exactly want. A denial is audited. ctx should carry the
// op's deadline.
func (e *Engine) execute(ctx context.Context, p *prepared, args json.RawMessage, want *egress.Bound) (*egress.Request, *Error) {
	input := append(append(make([]byte, 0, len(p.prefix)+len(args)), p.prefix...), args...)
	if inputHook != nil {
		input = inputHook(ctx, input)
	}
	start := time.Now()
	_, span := tracing.Start(ctx, tracing.SpanSandbox)
	out, err := e.sb.Run(ctx, sandbox.Call{
		Input: input, Op: p.op,
		Admit:    func(r *egress.Request) api.DenyReason { return egress.Admit(p.policy, p.bind, want, r) },
		MaxCalls: e.cfg.maxHostCalls(), MaxLogBytes: e.cfg.maxLogBytes(),
	})
	if span.Recording() {
		endSandboxSpan(ctx, span, out.Outcome, out.Deny, err)
	}
	e.guestLog(ctx, p, out.Log, out.LogDropped)
	if err != nil {
		return nil, guestFailure(ctx, err)
	}
	switch out.Outcome {
	case sandbox.OutcomeAccepted:
		return out.Request, nil
	case sandbox.OutcomeRejected:
		return nil, badArgs(p, out.Reject, out.Arg)
	case sandbox.OutcomeDenied:
		herr := &Error{Code: api.CodeEgressDenied, Message: "the request broke the egress policy (" + string(out.Deny) + ")", Deny: out.Deny}
		e.audit(ctx, p, nil, herr, 0, 0, start, "")
		return nil, herr
	}
	return nil, newError(api.CodeSandboxError, "the executor finished without a request")
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
			return &Error{Code: api.CodeTimeout, Message: "the op's deadline passed in the sandbox", cause: err}
		case sys.ExitCodeContextCanceled:
			return &Error{Code: api.CodeCanceled, Message: "the op was canceled", cause: err}
		}
		return &Error{Code: api.CodeSandboxError, Message: fmt.Sprintf("the executor exited with code %d", exit.ExitCode()), cause: err}
	}
	switch {
	case errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled:
		return &Error{Code: api.CodeCanceled, Message: "the op was canceled", cause: err}
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded:
		return &Error{Code: api.CodeTimeout, Message: "the op's deadline passed in the sandbox", cause: err}
	}
	return &Error{Code: api.CodeSandboxError, Message: "the executor trapped", cause: err}
}

func (e *Engine) guestLog(ctx context.Context, p *prepared, out []byte, dropped int64) {
	if len(out) == 0 && dropped == 0 {
		return
	}
	e.logger(ctx).Debug().Str("service", p.m.ID).Str("op", p.name).
		Str("guest_output", string(bytes.ToValidUTF8(out, []byte("\ufffd")))).
		Int64("guest_output_dropped", dropped).Msg("guest output")
}

// echoes reports whether data (a projected answer, the next page's args)
// holds the call's credential or a secret of call.Withhold, in any JSON
// spelling (upstream.Echoes; it fails closed on data it cannot read).
// It is the one credential echo check of the op path: every caller of
// Engine.Run — POST /v1/ops, research, pinned mcp, the CLI — gets a
// result that passed it.
func (e *Engine) echoes(call Call, data []byte) bool {
	return upstream.Echoes(data, e.callSecrets(call)...)
}

// callSecrets are what an answer must not hold: the credential's secret,
// its user part and, for HTTP Basic, the encoded pair, and the call's
// other secrets.
func (e *Engine) callSecrets(call Call) []string {
	c := call.Credential
	out := []string{string(c.Secret)}
	if c.User != "" {
		out = append(out, string(c.User))
		if m := e.services[call.Service]; m != nil && m.Auth.Scheme == registry.SchemeBasic {
			out = append(out, m.Auth.BasicEncoded(string(c.User), string(c.Secret)))
		}
	}
	for _, s := range call.Withhold {
		out = append(out, string(s))
	}
	return out
}

// echoError is the op error of an answer withheld because it echoed a
// credential: a write's request took effect (the provider answered 2xx).
func (e *Engine) echoError(p *prepared, status int) *Error {
	err := &Error{Code: api.CodeCredentialEcho, Status: status,
		Message: "the provider's answer held the op's credential, so it was withheld; the credential may be exposed upstream"}
	if p.op.Access == registry.AccessWrite {
		err.Applied = api.AppliedYes
	}
	return err
}

func checkCredential(c Credential) *Error {
	if c.Secret == "" {
		return newError(api.CodeCredentialInvalid, "no credential given")
	}
	for _, part := range []secret.Secret{c.Secret, c.User} {
		for i := 0; i < len(part); i++ {
			if ch := part[i]; ch <= 0x20 || ch >= 0x7f {
				return newError(api.CodeCredentialInvalid, "the credential holds characters an HTTP header cannot carry")
			}
		}
	}
	if len(c.Tenant) > 63 {
		return newError(api.CodeCredentialInvalid, "the tenant label is longer than a DNS label (63 characters)")
	}
	switch c.Kind {
	case "", "pat", "oauth":
		return nil
	}
	return newError(api.CodeCredentialInvalid, fmt.Sprintf("unknown credential kind %q (want pat or oauth)", c.Kind))
}

// checkCredentialFor is checkCredential and what m's auth and host ask
// of a connection: a user part exactly for a pasted two-part credential
// (no ":" in a Basic user-id, RFC 7617 section 2), a tenant label exactly
// for a per-connection host, of its pattern.
func checkCredentialFor(m *registry.Manifest, c Credential) *Error {
	if err := checkCredential(c); err != nil {
		return err
	}
	twoPart := m.Auth.TwoPart() && c.Kind != "oauth"
	switch {
	case twoPart && c.User == "":
		what := "the first part"
		if m.Auth.User != nil {
			what = m.Auth.User.Label
		}
		return newError(api.CodeCredentialInvalid, fmt.Sprintf("%s takes a credential of two parts; the connection lacks %s", m.ID, what))
	case !twoPart && c.User != "":
		return newError(api.CodeCredentialInvalid, fmt.Sprintf("%s takes a credential of one part; the connection has a second", m.ID))
	case m.Auth.Scheme == registry.SchemeBasic && strings.Contains(string(c.User), ":"):
		return newError(api.CodeCredentialInvalid, "an HTTP Basic user-id holds no \":\" (RFC 7617)")
	}
	if m.HasTenant() && c.Tenant == "" {
		what := "its tenant label"
		if m.Tenant != nil {
			what = m.Tenant.Label
		}
		return newError(api.CodeCredentialInvalid, fmt.Sprintf("%s has a host per connection (%s); the connection lacks %s", m.ID, m.Host, what))
	}
	if _, err := m.HostFor(c.Tenant); err != nil {
		return newError(api.CodeCredentialInvalid, err.Error())
	}
	return nil
}

// CheckCredentialFor reports whether c can be presented to service: the
// checks of CheckCredential, then those of the service's auth and host
// (the parts of a two-part credential, a per-connection host's tenant
// label). Tools that store or seal a connection call it, so a connection
// that no op could use is refused at once. The message never repeats a
// secret.
func (e *Engine) CheckCredentialFor(service string, c Credential) error {
	m, ok := e.services[service]
	if !ok {
		return newError(api.CodeUnknownService, fmt.Sprintf("unknown service %q (services: %s)", service, joinNames(e.ids)))
	}
	if err := checkCredentialFor(m, c); err != nil {
		return err
	}
	return nil
}

// CheckConnection is Engine.CheckCredentialFor for a manifest m, without
// an engine. The error, when not nil, is an *Error.
func CheckConnection(m *registry.Manifest, c Credential) error {
	if err := checkCredentialFor(m, c); err != nil {
		return err
	}
	return nil
}

// prepareTenant returns p for the one host of tenant: the same
// precomputation (policy, op input, binding, exchange, pager) made from
// a copy of p's manifest whose host is the tenant's, so every check of
// the op path holds the request to that host. It is made per call.
func (e *Engine) prepareTenant(p *prepared, tenant string) (*prepared, *Error) {
	h, err := p.m.HostFor(tenant)
	if err != nil {
		return nil, newError(api.CodeCredentialInvalid, err.Error())
	}
	m := p.m.Clone()
	m.Host, m.Tenant = h, nil
	return prepareOp(m, p.name)
}
