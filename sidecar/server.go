// Package sidecar is the bot-facing service (DESIGN.md, "Sidecar HTTP
// API"). It holds the bot's private key, opens the grants members sealed
// to it, enforces their scope — every refusal before any upstream call —
// and runs ops in package host's sandbox.
//
// Endpoints (docs/API.md has bodies, examples and every code):
//
//	POST /v1/ops       run an op under a grant
//	POST /v1/consent   validate args and render a write op's confirm sentence, or a research session's (no grant, nothing sent)
//	POST /v1/research  a bounded tool loop: a model answers a question from the granted services' read ops (research.go)
//	POST /v1/grants/revoke  revoke a standing read grant's series (or one grant) at once (standing.go)
//	GET  /v1/tools     the service_op tool (Anthropic or MCP shape)
//	GET  /v1/registry  the embedded manifests and their digest
//	GET  /v1/identity  the bot's public key (what members seal grants to)
//	GET  /healthz      the process is up
//	GET  /readyz       the engine is compiled, the server is not shutting down and the state store answers
//	GET  /metrics      Prometheus
//
// Concurrency is bounded: past the limit, ops and consent checks are
// answered 503 busy with Retry-After at once, never queued.
//
// With a Config.Refresher (the broker), a grant's expiring OAuth pair is
// rotated in the op path — before the call when stale, once after a
// surprise 401 — and the fresh pair goes back sealed to the grant's
// member_key (rotation.go).
//
// What must hold across replicas of one bot — a grant runs once, a
// single-use refresh token is spent once — lives in an api.Store
// (Config.Store): in memory for one process, or on Redis shared by the
// replicas (docs/OPERATING.md, "Several replicas"). When the store cannot
// answer, ops are refused with unavailable (503), never run unrecorded.
//
// It imports host, registry, secret, sidecar/api (the contracts of its
// pluggable parts), sidecar/grant, pinned's implementations of those
// parts (internal/state, internal/rotate, internal/research), the shared
// internal/httperr, httpserve, jsonenc and jsonv, and chi, zerolog and
// prometheus; never broker or web (docs/ARCHITECTURE.md). In the
// module, cmd/pinned, internal/demo/webstack and internal/cmd/benchtool build a
// Server; mcpserver runs its ops through one (Server.RunOp).
package sidecar

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/httpserve"
	"github.com/elevenmessenger/pinned/internal/jsonenc"
	"github.com/elevenmessenger/pinned/internal/rotate"
	"github.com/elevenmessenger/pinned/internal/state"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/secret"
	"github.com/elevenmessenger/pinned/sidecar/api"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// Defaults of Config.
const (
	DefaultMaxConcurrency    = 64
	DefaultMaxBodyBytes      = 256 << 10
	DefaultBusyRetryAfter    = 1 * time.Second
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultShutdownGrace     = 20 * time.Second
	DefaultMaxHeaderBytes    = 32 << 10
	// DefaultRefreshTimeout bounds one token refresh through the broker.
	DefaultRefreshTimeout = 20 * time.Second
	// DefaultRefreshRetryAfter is the Retry-After of refresh_unavailable
	// when the broker sent none.
	DefaultRefreshRetryAfter = 5 * time.Second
	// DefaultUnavailableRetryAfter is the Retry-After of unavailable (the
	// state store did not answer).
	DefaultUnavailableRetryAfter = 2 * time.Second
	// readyPingTimeout bounds /readyz's ping of the state store.
	readyPingTimeout = time.Second
)

// Config configures a Server. Engine and Key are required; every other
// zero field takes its default.
type Config struct {
	// Engine runs the ops. Required. The caller closes it after Serve
	// returns.
	Engine *host.Engine
	// Key is the bot's private key; grants are sealed to its public key.
	// Required.
	Key *grant.PrivateKey
	// Registry MUST be the engine's registry; default registry.Default(),
	// the embedded snapshot (as the engine's default).
	Registry *registry.Registry
	// Logger receives one access event per request and the server's own
	// events; default a disabled logger.
	Logger *zerolog.Logger
	// Prometheus is where the sidecar registers its metrics and what
	// /metrics serves; default a fresh registry. Register host.NewMetrics
	// and the Go/process collectors on the same registry to serve them too.
	Prometheus *prometheus.Registry
	// MaxConcurrency bounds ops and consent checks running at once; past
	// it requests get 503 busy. Default 64.
	MaxConcurrency int
	// MaxBodyBytes bounds a request body; default 256 KiB.
	MaxBodyBytes int64
	// BusyRetryAfter is the Retry-After of a busy answer, rounded up to
	// whole seconds; default 1s.
	BusyRetryAfter time.Duration
	// ReplayCacheSize bounds the grant nonces remembered at once by the
	// default in-memory store; default grant.DefaultReplayCacheSize
	// (100000). Ignored with Store.
	ReplayCacheSize int
	// Store holds the state replicas share: grant nonces, refresh locks
	// and the grace cache of just-rotated pairs. Default an in-memory store
	// (one process); `pinned sidecar` uses a file, or Redis for several
	// replicas. The caller closes it after Serve returns.
	Store api.Store
	// UnavailableRetryAfter is the Retry-After of unavailable; default
	// DefaultUnavailableRetryAfter (2s).
	UnavailableRetryAfter time.Duration
	// MaxGrantTTL refuses grants expiring further ahead than this (plus
	// grant.ClockSkew); default grant.DefaultMaxTTL (24h).
	MaxGrantTTL time.Duration
	// CallerToken, when set, is the bearer token callers must send
	// ("Authorization: Bearer <token>") on /v1/* and /metrics. It is
	// compared in constant time.
	CallerToken secret.Secret
	// HTTP server timeouts and limits, used by Serve.
	ReadHeaderTimeout time.Duration // default 5s
	ReadTimeout       time.Duration // default 30s
	WriteTimeout      time.Duration // default 60s; keep it above the engine's op timeout
	IdleTimeout       time.Duration // default 120s
	MaxHeaderBytes    int           // default 32 KiB
	// ShutdownGrace is how long Serve lets in-flight requests finish after
	// its context is done before canceling them; default 20s.
	ShutdownGrace time.Duration
	// Now is the clock for grant and token expiry; default time.Now.
	Now func() time.Time

	// Refresher rotates expiring OAuth pairs (DESIGN.md, "Expiring
	// tokens"): `pinned sidecar` uses the broker's POST /api/refresh.
	// nil turns rotation off: a stale pair runs as is,
	// and a 401 to a grant carrying a refresh token is answered
	// rotation_not_configured.
	Refresher api.Refresher
	// RefreshMargin: a pair whose known expiry falls within it is refreshed
	// before the call; default 60s.
	RefreshMargin time.Duration
	// RefreshTimeout bounds one refresh, whatever the op's own context;
	// default DefaultRefreshTimeout (20s).
	RefreshTimeout time.Duration
	// RefreshGrace is how long a fresh pair answers for the pair it
	// replaced (an op arriving with the old pair gets the fresh one);
	// default 2 min.
	RefreshGrace time.Duration

	// Model answers research sessions (POST /v1/research): `pinned
	// sidecar` uses the Anthropic Messages API. nil: the endpoint answers
	// model_not_configured.
	Model api.Model
	// ResearchGrantTTL refuses research grants expiring further ahead than
	// this (plus grant.ClockSkew); default DefaultResearchGrantTTL (15m).
	ResearchGrantTTL time.Duration
	// StandingGrantTTL refuses standing read grants expiring further
	// ahead than this (plus grant.ClockSkew); default
	// grant.DefaultStandingMaxTTL (15m). A revocation is kept that long
	// past the latest renewal seen, so every renewal sealed before it is
	// refused.
	StandingGrantTTL time.Duration
	// MaxResearch bounds the research sessions running at once; past it
	// they get 503 busy. Default DefaultMaxResearch (4).
	MaxResearch int

	// Audit, when set, keeps the audit trail: one record per op and per
	// refusal of an op, its receipt in the answer. An op runs only when
	// Audit.Ready; a result whose record cannot be written is withheld
	// (unavailable). `pinned sidecar` uses internal/audit. nil: no trail.
	Audit api.Auditor

	// Version is the binary's version, in the listening event and in
	// pinned_build_info{version}; default "devel".
	Version string

	// Tracer, when set, traces each op: a root span per op (a child of the
	// request's W3C traceparent on POST /v1/ops) and spans for the grant,
	// the state store, the sandbox, the upstream request and pick
	// (internal/tracing). nil: no tracing, at no cost.
	Tracer trace.TracerProvider

	// BotRate limits the bot's ops across its replicas, GrantRate each
	// grant's (a research session's calls under one grant): past them
	// ops are refused with rate_limited before anything is sent. Zero:
	// no limit.
	BotRate   api.Rate
	GrantRate api.Rate
	// BotDailyCap caps the bot's ops and returned bytes per UTC day,
	// GrantCap each grant's over its life; past a cap ops are refused
	// with rate_limited. Zero: no cap.
	BotDailyCap api.Cap
	GrantCap    api.Cap
	// Limiter holds the rates and the provider back-offs; default the
	// Store when it is an api.Limiter (pinned's are), else in memory.
	Limiter api.Limiter
}

// Config's defaults: each accessor is its field, or the default when the
// field is zero (or, for a number, not above zero).

func (c *Config) maxConcurrency() int {
	return orDefault(c.MaxConcurrency, DefaultMaxConcurrency)
}

func (c *Config) maxBodyBytes() int64 {
	return orDefault(c.MaxBodyBytes, DefaultMaxBodyBytes)
}

func (c *Config) busyRetryAfter() time.Duration {
	return orDefault(c.BusyRetryAfter, DefaultBusyRetryAfter)
}

func (c *Config) replayCacheSize() int {
	return orDefault(c.ReplayCacheSize, grant.DefaultReplayCacheSize)
}

func (c *Config) unavailableRetryAfter() time.Duration {
	return orDefault(c.UnavailableRetryAfter, DefaultUnavailableRetryAfter)
}

func (c *Config) maxGrantTTL() time.Duration {
	return orDefault(c.MaxGrantTTL, grant.DefaultMaxTTL)
}

func (c *Config) readHeaderTimeout() time.Duration {
	return orDefault(c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
}

func (c *Config) readTimeout() time.Duration {
	return orDefault(c.ReadTimeout, DefaultReadTimeout)
}

func (c *Config) writeTimeout() time.Duration {
	return orDefault(c.WriteTimeout, DefaultWriteTimeout)
}

func (c *Config) idleTimeout() time.Duration {
	return orDefault(c.IdleTimeout, DefaultIdleTimeout)
}

func (c *Config) maxHeaderBytes() int {
	return orDefault(c.MaxHeaderBytes, DefaultMaxHeaderBytes)
}

func (c *Config) shutdownGrace() time.Duration {
	return orDefault(c.ShutdownGrace, DefaultShutdownGrace)
}

func (c *Config) refreshMargin() time.Duration {
	return orDefault(c.RefreshMargin, rotate.DefaultMargin)
}

func (c *Config) refreshTimeout() time.Duration {
	return orDefault(c.RefreshTimeout, DefaultRefreshTimeout)
}

func (c *Config) researchGrantTTL() time.Duration {
	return orDefault(c.ResearchGrantTTL, DefaultResearchGrantTTL)
}

func (c *Config) standingGrantTTL() time.Duration {
	return orDefault(c.StandingGrantTTL, grant.DefaultStandingMaxTTL)
}

func (c *Config) maxResearch() int {
	return orDefault(c.MaxResearch, DefaultMaxResearch)
}

// now is the clock of grant and token expiry.
func (c *Config) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

// orDefault is v, or def when v is not above zero.
func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// Server is the sidecar. Create it with New, serve it with Serve (once).
type Server struct {
	cfg Config
	eng *host.Engine
	reg *registry.Registry
	// services are the sidecar's own copies of reg's manifests, by id,
	// taken once in New: the op path reads them per request, and
	// reg.Service would copy a manifest each time. Never modified.
	services map[string]*registry.Manifest
	key      *grant.PrivateKey
	bot      string // botID(key), for audit records
	log      zerolog.Logger
	prom     *prometheus.Registry
	m        *metrics
	store    api.Store    // instrumented
	standing api.Standing // the store's standing series (standing.go); nil: standing grants are refused
	limits   api.Limiter  // limiterFor(cfg, store)
	// gate is the store when it is also the limiter and records a nonce
	// and reads a back-off in one round trip (api.RecordChecker); nil
	// otherwise.
	gate    api.RecordChecker
	rot     *rotate.Rotator // nil: rotation is off
	slots   chan struct{}
	handler http.Handler

	researchSlots chan struct{}

	tokenSum [sha256.Size]byte // sha256 of CallerToken, when set

	// docs are the tool descriptions and the registry document (docs),
	// built on a goroutine New starts: about 10 ms of a start, off the
	// path to /readyz; the first request that serves them waits for them.
	docs         func() (*docs, error)
	identityJSON []byte

	ready atomic.Bool
	// cut is set when the shutdown grace is over and the requests still
	// running are canceled: their canceled answers become not_ready.
	cut      atomic.Bool
	mu       sync.Mutex // guards draining and active.Add
	draining bool
	active   sync.WaitGroup
}

// New checks cfg and builds the server (routes, metrics, the generated
// tool descriptions). A zero field of cfg means its default.
func New(cfg Config) (*Server, error) {
	if cfg.Engine == nil {
		return nil, errors.New("sidecar: Config.Engine is required")
	}
	if cfg.Key == nil {
		return nil, errors.New("sidecar: Config.Key (the bot's private key) is required")
	}
	s := &Server{
		cfg:      cfg,
		eng:      cfg.Engine,
		reg:      cfg.Registry,
		services: map[string]*registry.Manifest{},
		key:      cfg.Key,
		bot:      botID(cfg.Key),
		log:      zerolog.Nop(),
		prom:     cfg.Prometheus,
		slots:    make(chan struct{}, cfg.maxConcurrency()),

		researchSlots: make(chan struct{}, cfg.maxResearch()),
	}
	if s.reg == nil {
		s.reg = registry.Default()
	}
	if s.prom == nil {
		s.prom = prometheus.NewRegistry()
	}
	for _, m := range s.reg.Services() {
		s.services[m.ID] = m
	}
	if cfg.Logger != nil {
		s.log = *cfg.Logger
	}
	if cfg.CallerToken != "" {
		s.tokenSum = sha256.Sum256([]byte(cfg.CallerToken))
	}
	store := cfg.Store
	if store == nil {
		store = state.NewMemory(state.MemoryOptions{ReplayCacheSize: cfg.replayCacheSize(), MaxGrace: rotate.DefaultMaxCached, Now: s.cfg.now})
	}
	s.m = newMetrics(s.prom, store)
	registerBuild(s.prom, s.cfg.version())
	s.store = instrumented{next: store, m: s.m}
	s.standing, _ = store.(api.Standing)
	s.limits = instrumentedLimiter{next: limiterFor(&s.cfg, store), m: s.m}
	if rc, ok := store.(api.RecordChecker); ok && cfg.Limiter == nil {
		s.gate = rc // limiterFor chose the store
	}
	if cfg.Refresher != nil {
		// One Rotator per process: single flight per credential across
		// requests, and one grace cache.
		rlog := s.log
		s.rot = rotate.New(countingRefresher{next: cfg.Refresher, m: s.m.refreshes}, rotate.Options{
			Margin: cfg.refreshMargin(), Grace: cfg.RefreshGrace, Timeout: cfg.refreshTimeout(), Now: s.cfg.now, Logger: &rlog, Store: s.store,
		})
	}
	s.m.registerRotation(s.prom, s.rot)

	s.docs = sync.OnceValues(func() (*docs, error) { return buildDocs(s.reg) })
	go s.docs()
	var err error
	if s.identityJSON, err = jsonenc.Marshal(Identity{
		PublicKey: s.key.Public().String(), Registry: s.reg.Digest(),
	}); err != nil {
		return nil, fmt.Errorf("sidecar: identity: %w", err)
	}
	s.handler = s.routes()
	s.ready.Store(true) // the engine exists, so the guest is compiled
	return s, nil
}

// docs are what GET /v1/tools and GET /v1/registry answer, encoded once.
type docs struct {
	toolsAnthropic []byte // the service_op tool, Anthropic's shape
	toolsMCP       []byte // the same tool in an MCP tools/list result
	registryJSON   []byte // the registry document
}

func buildDocs(reg *registry.Registry) (*docs, error) {
	tool := registry.ServiceOpTool(reg)
	var d docs
	var err error
	if d.toolsAnthropic, err = jsonenc.Marshal(tool); err != nil {
		return nil, fmt.Errorf("sidecar: tools: %w", err)
	}
	if d.toolsMCP, err = jsonenc.Marshal(struct {
		Tools []registry.MCPTool `json:"tools"`
	}{[]registry.MCPTool{tool.MCP()}}); err != nil {
		return nil, fmt.Errorf("sidecar: tools: %w", err)
	}
	if d.registryJSON, err = reg.DocumentJSON(); err != nil {
		return nil, fmt.Errorf("sidecar: registry: %w", err)
	}
	return &d, nil
}

// Handler returns the HTTP handler (routes and middleware).
func (s *Server) Handler() http.Handler { return s.handler }

// PublicKey is the bot's public key, the one members seal grants to.
func (s *Server) PublicKey() grant.PublicKey { return s.key.Public() }

// Ready reports that the engine is compiled and the server is not
// shutting down. /readyz also requires the state store to answer a ping.
func (s *Server) Ready() bool { return s.ready.Load() }

// readyErr is /readyz's answer: nil when ready.
func (s *Server) readyErr(ctx context.Context) *Error {
	if !s.ready.Load() {
		return newError(CodeNotReady, "the sidecar is starting or shutting down")
	}
	ctx, cancel := context.WithTimeout(ctx, readyPingTimeout)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		return newError(CodeNotReady, "the shared state store (Redis) does not answer").withCause(err)
	}
	return nil
}

func (s *Server) routes() *chi.Mux {
	// The host's audit and guest-output events use the logger the
	// context carries, so they too have the request id.
	reqLog := s.eng.Logger()
	r := httpserve.NewRouter(httpserve.Options{
		Log: s.log, RequestLog: &reqLog, Requests: s.m.requests, Docs: "docs/API.md",
		NewNote: func() httpserve.Note { return new(reqInfo) },
		Fail: func(w http.ResponseWriter, r *http.Request, code, msg string, cause error) {
			s.fail(w, r, newError(Code(code), msg).withCause(cause))
		},
	})
	r.Use(s.track)
	r.Get("/healthz", s.handleHealth)
	r.Get("/readyz", s.handleReady)
	r.Group(func(r chi.Router) {
		r.Use(s.authenticate)
		r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(s.prom, promhttp.HandlerOpts{}))
		r.Get("/v1/tools", s.handleTools)
		r.Get("/v1/registry", s.handleRegistry)
		r.Get("/v1/identity", s.handleIdentity)
		r.With(s.requireJSON).Post("/v1/ops", s.handleOps)
		r.With(s.requireJSON).Post("/v1/consent", s.handleConsent)
		r.With(s.requireJSON).Post("/v1/research", s.handleResearch)
		r.With(s.requireJSON).Post("/v1/grants/revoke", s.handleRevoke)
	})
	return r
}

// Serve serves on ln until ctx is done, then shuts down gracefully: it
// stops accepting, marks itself not ready, lets in-flight requests finish
// for up to ShutdownGrace, then cancels the rest and waits for their
// handlers to return. It returns nil after a shutdown, or the error that
// stopped serving. Call it once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// Request contexts outlive ctx: they are canceled only when the grace
	// period is over.
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.readHeaderTimeout(),
		ReadTimeout:       s.cfg.readTimeout(),
		WriteTimeout:      s.cfg.writeTimeout(),
		IdleTimeout:       s.cfg.idleTimeout(),
		MaxHeaderBytes:    s.cfg.maxHeaderBytes(),
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          log.New(httpErrorLog{s.log}, "", 0),
	}
	s.log.Info().Str("event", "listening").Str("addr", ln.Addr().String()).
		Str("bot_key", s.key.Public().String()).Str("registry", s.reg.Digest()).
		Int("max_concurrency", s.cfg.maxConcurrency()).Bool("caller_token", s.cfg.CallerToken != "").
		Bool("rotation", s.rot != nil).Str("state_store", s.store.Kind()).
		Str("version", s.cfg.version()).Msg("sidecar listening")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		s.ready.Store(false)
		s.drain()
		return err
	case <-ctx.Done():
	}
	s.ready.Store(false)
	s.log.Info().Str("event", "shutdown").Float64("grace_ms", float64(s.cfg.shutdownGrace().Milliseconds())).Msg("shutting down: finishing in-flight requests")
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.shutdownGrace())
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.log.Warn().Str("event", "shutdown").Msg("grace period over: canceling the requests still running")
		// The ops still running are canceled and answer 503 not_ready
		// (s.fail), on their connections, which stay open until the
		// answers are written; only then is everything closed.
		s.cut.Store(true)
		cancelBase()
		s.drain()
		fctx, fcancel := context.WithTimeout(context.Background(), time.Second)
		_ = srv.Shutdown(fctx)
		fcancel()
		_ = srv.Close()
	}
	s.drain()
	<-errc // http.ErrServerClosed
	s.log.Info().Str("event", "stopped").Msg("sidecar stopped")
	return nil
}

// drain refuses new handlers and waits for the running ones.
func (s *Server) drain() {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	s.active.Wait()
}

// httpErrorLog sends net/http's own complaints (TLS, malformed requests)
// to the logger at debug level.
type httpErrorLog struct{ log zerolog.Logger }

func (h httpErrorLog) Write(p []byte) (int, error) {
	h.log.Debug().Str("event", "http_server").Str("error", string(p)).Msg("http server")
	return len(p), nil
}

// acquire takes a concurrency slot without waiting, or answers busy.
func (s *Server) acquire() (release func(), e *Error) {
	select {
	case s.slots <- struct{}{}:
		s.m.inFlight.Inc()
		return func() {
			s.m.inFlight.Dec()
			<-s.slots
		}, nil
	default:
		return nil, s.busy("every op slot is taken; retry shortly")
	}
}

// unavailable is the answer when the state store did not answer.
func (s *Server) unavailable(msg string) *Error {
	e := newError(CodeUnavailable, msg)
	e.RetryAfter = int((s.cfg.unavailableRetryAfter() + time.Second - 1) / time.Second)
	return e
}

func (s *Server) busy(msg string) *Error {
	e := newError(CodeBusy, msg)
	e.RetryAfter = int((s.cfg.busyRetryAfter() + time.Second - 1) / time.Second)
	return e
}

// checkToken compares the caller's bearer token with CallerToken in
// constant time (both hashed first, so lengths do not leak either).
func (s *Server) checkToken(r *http.Request) bool {
	const prefix = "Bearer "
	h := r.Header.Get("Authorization")
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return false
	}
	sum := sha256.Sum256([]byte(h[len(prefix):]))
	return subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1
}

// readBody reads the request body up to MaxBodyBytes.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *Error) {
	if r.ContentLength > s.cfg.maxBodyBytes() {
		return nil, newError(CodeTooLarge, fmt.Sprintf("the body is larger than %d bytes", s.cfg.maxBodyBytes()))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.maxBodyBytes()))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, newError(CodeTooLarge, fmt.Sprintf("the body is larger than %d bytes", s.cfg.maxBodyBytes()))
		}
		return nil, newError(CodeBadRequest, "the body could not be read").withCause(err)
	}
	return body, nil
}

func (c *Config) version() string {
	if c.Version == "" {
		return "devel"
	}
	return c.Version
}
