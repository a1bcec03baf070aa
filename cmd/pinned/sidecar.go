package main

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"github.com/elevenmessenger/pinned/internal/tracing/export"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/broker"
	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/demo/fakemodel"
	"github.com/elevenmessenger/pinned/internal/research/claude"
	"github.com/elevenmessenger/pinned/internal/rotate"
	"github.com/elevenmessenger/pinned/internal/state"
	"github.com/elevenmessenger/pinned/secret"
	"github.com/elevenmessenger/pinned/sidecar"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

const sidecarUsage = `Usage: pinned sidecar --key-file FILE [flags]

Serves the bot-facing HTTP API (docs/API.md) until SIGINT or SIGTERM, then
shuts down gracefully: it stops accepting, lets in-flight ops finish for up
to --shutdown-grace, and exits.

Every flag can also be set by the environment variable shown with it; a
flag on the command line wins over the environment. docs/OPERATING.md
describes every knob, metric and log field.

The caller token is read from --token-file or from PINNED_SIDECAR_TOKEN,
never from a flag value. It is required when --listen is not a loopback
address: the sidecar refuses to start otherwise.

Token rotation (docs/OAUTH.md): with --broker-url and an instance token
from --broker-token-file or PINNED_SIDECAR_BROKER_TOKEN (never a flag
value), the sidecar refreshes expiring OAuth pairs through the broker and
hands the fresh pair back sealed to the member. Without a broker nothing
is rotated.

Several replicas (docs/OPERATING.md, "Several replicas"): with --redis-url
(or PINNED_REDIS_URL) every replica of a bot records grant nonces, takes
refresh locks and shares just-rotated pairs on one Redis, so a grant runs
once and a single-use refresh token is spent once across all of them.
The Redis password comes from --redis-password-file or
PINNED_REDIS_PASSWORD (never the URL or a flag value), the key sealing
the shared pairs from --state-key-file or PINNED_SIDECAR_STATE_KEY (64
hex characters, the same on every replica: openssl rand -hex 32). Without
--redis-url the state is in memory: one process only. When Redis does not
answer, ops are refused with 503 unavailable, never run unrecorded.

Research sessions (POST /v1/research) need a model: the Anthropic API key
from --model-key-file or PINNED_SIDECAR_MODEL_KEY (never a flag value).

--connect-to and --cacert are for tests and trials only: they map every
pinned host to a running "pinned fakeapi", as "pinned op" does. With them,
--fake-model answers research sessions with the scripted model of "pinned
demo" (no API key; not a language model).

Example (against the fake; see README.md):
  pinned keygen --out bot.key
  pinned sidecar --key-file bot.key --connect-to 127.0.0.1:8443 --cacert ca.pem

Exit status: 0 after a clean shutdown, 1 the sidecar failed, 2 bad usage
or configuration (a --cache-dir group or others can write, a tracing
setting it cannot honour).

Tracing: the standard OTEL_* variables switch on OpenTelemetry traces
(OTLP over HTTP), e.g. OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318;
off by default (docs/OPERATING.md, "Tracing").

Flags:
`

// envName is the environment variable of a flag: PINNED_SIDECAR_ and the
// flag's name in upper case with "_" for "-".
func envName(flagName string) string {
	return "PINNED_SIDECAR_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// sidecarFlags are the parsed knobs.
type sidecarFlags struct {
	listen            string
	keyFile           string
	tokenFile         string
	maxConcurrency    int
	opTimeout         time.Duration
	pagesTimeout      time.Duration
	maxBodyBytes      int64
	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	writeTimeout      time.Duration
	idleTimeout       time.Duration
	shutdownGrace     time.Duration
	busyRetryAfter    time.Duration
	replayCacheSize   int
	maxGrantTTL       time.Duration
	standingGrantTTL  time.Duration
	logLevel          string
	cacheDir          string
	stateDir          string
	connectTo         string
	fakeModel         bool
	caFile            string
	brokerURL         string
	brokerTokenFile   string
	refreshMargin     time.Duration
	refreshTimeout    time.Duration
	redisURL          string
	redisPasswordFile string
	redisCAFile       string
	redisPrefix       string
	redisTimeout      time.Duration
	stateKeyFile      string
	modelKeyFile      string
	modelBaseURL      string
	model             string
	omitTarget        bool
	audit             sidecarAuditFlags
	limits            sidecarLimitFlags
}

// envDefaults reads the environment into the flags' defaults, so an
// explicit flag still wins. A malformed value is an error naming the
// variable.
// With none set it reads nothing (a command whose variables are not the
// sidecar's).
type envDefaults struct {
	errs []string
	none bool
}

func (e *envDefaults) str(flagName, def string) string {
	if e.none {
		return def
	}
	if v, ok := os.LookupEnv(envName(flagName)); ok {
		return v
	}
	return def
}

func (e *envDefaults) dur(flagName string, def time.Duration) time.Duration {
	if e.none {
		return def
	}
	if v, ok := os.LookupEnv(envName(flagName)); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Sprintf("%s=%q is not a duration (e.g. 15s, 2m)", envName(flagName), v))
			return def
		}
		return d
	}
	return def
}

func (e *envDefaults) bool(flagName string, def bool) bool {
	if e.none {
		return def
	}
	if v, ok := os.LookupEnv(envName(flagName)); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Sprintf("%s=%q is not a boolean (true or false)", envName(flagName), v))
			return def
		}
		return b
	}
	return def
}

func (e *envDefaults) int(flagName string, def int64) int64 {
	if e.none {
		return def
	}
	if v, ok := os.LookupEnv(envName(flagName)); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			e.errs = append(e.errs, fmt.Sprintf("%s=%q is not an integer", envName(flagName), v))
			return def
		}
		return n
	}
	return def
}

// runSidecar implements `pinned sidecar`: it serves until SIGINT or
// SIGTERM.
func runSidecar(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runSidecarContext(ctx, args, stdout, stderr)
}

// runSidecarContext serves until ctx is done (tests cancel ctx instead of
// sending a signal).
func runSidecarContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f sidecarFlags
	env := &envDefaults{}
	fs := flag.NewFlagSet("sidecar", flag.ContinueOnError)
	h := func(name, help string) string { return help + " [$" + envName(name) + "]" }
	fs.StringVar(&f.listen, "listen", env.str("listen", "127.0.0.1:8080"), h("listen", "`address` to listen on (host:port); beyond loopback a caller token is required"))
	fs.StringVar(&f.keyFile, "key-file", env.str("key-file", ""), h("key-file", "`file` holding the bot's private key, written by pinned keygen (mode 0600); required"))
	fs.StringVar(&f.tokenFile, "token-file", env.str("token-file", ""), h("token-file", "`file` holding the caller bearer token (or set PINNED_SIDECAR_TOKEN); required beyond loopback"))
	fs.IntVar(&f.maxConcurrency, "max-concurrency", int(env.int("max-concurrency", sidecar.DefaultMaxConcurrency)), h("max-concurrency", "ops and consent checks running at once; past it callers get 503 busy"))
	fs.DurationVar(&f.opTimeout, "op-timeout", env.dur("op-timeout", host.DefaultTimeout), h("op-timeout", "deadline of one op: sandbox, connect, TLS, upstream answer"))
	fs.DurationVar(&f.pagesTimeout, "pages-timeout", env.dur("pages-timeout", host.DefaultPagesTimeout), h("pages-timeout", "deadline of a whole paged call (pages in POST /v1/ops), every page in it; must be below --write-timeout"))
	fs.Int64Var(&f.maxBodyBytes, "max-body-bytes", env.int("max-body-bytes", sidecar.DefaultMaxBodyBytes), h("max-body-bytes", "largest request body accepted"))
	fs.DurationVar(&f.readHeaderTimeout, "read-header-timeout", env.dur("read-header-timeout", sidecar.DefaultReadHeaderTimeout), h("read-header-timeout", "HTTP server: time to read request headers"))
	fs.DurationVar(&f.readTimeout, "read-timeout", env.dur("read-timeout", sidecar.DefaultReadTimeout), h("read-timeout", "HTTP server: time to read a whole request"))
	fs.DurationVar(&f.writeTimeout, "write-timeout", env.dur("write-timeout", sidecar.DefaultWriteTimeout), h("write-timeout", "HTTP server: time from the end of the request headers to the end of the answer; must exceed --op-timeout"))
	fs.DurationVar(&f.idleTimeout, "idle-timeout", env.dur("idle-timeout", sidecar.DefaultIdleTimeout), h("idle-timeout", "HTTP server: how long an idle keep-alive connection stays open"))
	fs.DurationVar(&f.shutdownGrace, "shutdown-grace", env.dur("shutdown-grace", sidecar.DefaultShutdownGrace), h("shutdown-grace", "on SIGINT/SIGTERM, how long in-flight requests may finish before they are canceled"))
	fs.DurationVar(&f.busyRetryAfter, "busy-retry-after", env.dur("busy-retry-after", sidecar.DefaultBusyRetryAfter), h("busy-retry-after", "Retry-After of a busy answer (whole seconds, rounded up)"))
	fs.IntVar(&f.replayCacheSize, "replay-cache-size", int(env.int("replay-cache-size", grant.DefaultReplayCacheSize)), h("replay-cache-size", "grant nonces remembered at once (about 100 bytes each); when full of live grants, new grants get busy"))
	fs.DurationVar(&f.maxGrantTTL, "max-grant-ttl", env.dur("max-grant-ttl", grant.DefaultMaxTTL), h("max-grant-ttl", "refuse grants that expire further ahead than this"))
	fs.DurationVar(&f.standingGrantTTL, "standing-grant-ttl", env.dur("standing-grant-ttl", grant.DefaultStandingMaxTTL), h("standing-grant-ttl", "refuse standing read grants that expire further ahead than this (a stolen one runs reads until then)"))
	fs.StringVar(&f.logLevel, "log-level", env.str("log-level", "info"), h("log-level", "log `level`: debug, info, warn or error"))
	fs.BoolVar(&f.omitTarget, "omit-target", env.bool("omit-target", false), h("omit-target", "log no request target (path and query as sent) in egress events and audit records, so no argument value is written anywhere; default: the target, secret args redacted"))
	fs.StringVar(&f.cacheDir, "cache-dir", env.str("cache-dir", defaultCacheDir()), h("cache-dir", "cache `directory`, writable by you only: the compiled guest, and the reset pool's template and page classes (empty: compile and build them at every start). A start that finds no compiled guest here serves its first ops on wazero's interpreter until the machine code is ready (the compiled event)"))
	fs.StringVar(&f.stateDir, "state-dir", env.str("state-dir", defaultStateDir()), h("state-dir", "`directory` of the durable state file (grant replay records and the grace cache of rotated pairs; one file per bot key), so a restart loses no grant use; empty: in memory, lost on restart; not used with --redis-url"))
	fs.StringVar(&f.brokerURL, "broker-url", env.str("broker-url", ""), h("broker-url", "the broker's base `URL` (https, or http on loopback) for token rotation; empty: never rotate"))
	fs.StringVar(&f.brokerTokenFile, "broker-token-file", env.str("broker-token-file", ""), h("broker-token-file", "`file` holding the broker instance token (or set PINNED_SIDECAR_BROKER_TOKEN); required with --broker-url"))
	fs.DurationVar(&f.refreshMargin, "refresh-margin", env.dur("refresh-margin", rotate.DefaultMargin), h("refresh-margin", "refresh a token pair before the call when it expires within this"))
	fs.DurationVar(&f.refreshTimeout, "refresh-timeout", env.dur("refresh-timeout", sidecar.DefaultRefreshTimeout), h("refresh-timeout", "bound on one token refresh through the broker"))
	fs.StringVar(&f.redisURL, "redis-url", envOr("PINNED_REDIS_URL", ""), "`URL` of the Redis holding the shared state of several replicas: redis://[user@]host:port[/db], rediss://... (TLS) or unix:///path; no password in it; empty: in memory, one process [$PINNED_REDIS_URL]")
	fs.StringVar(&f.redisPasswordFile, "redis-password-file", env.str("redis-password-file", ""), h("redis-password-file", "`file` holding the Redis password (or set PINNED_REDIS_PASSWORD)"))
	fs.StringVar(&f.redisCAFile, "redis-cacert", env.str("redis-cacert", ""), h("redis-cacert", "PEM `file` of the CA a rediss:// server's certificate chains to (default: the system's)"))
	fs.StringVar(&f.redisPrefix, "redis-prefix", env.str("redis-prefix", state.DefaultRedisPrefix), h("redis-prefix", "`prefix` of every Redis key; the replicas of one bot share it, other bots on the same Redis use another"))
	fs.DurationVar(&f.redisTimeout, "redis-timeout", env.dur("redis-timeout", state.DefaultRedisTimeout), h("redis-timeout", "bound on one Redis operation; past it the op is refused with unavailable"))
	fs.StringVar(&f.stateKeyFile, "state-key-file", env.str("state-key-file", ""), h("state-key-file", "`file` holding the 64-hex-character key sealing token pairs shared on Redis (or set PINNED_SIDECAR_STATE_KEY); the same on every replica; required with --redis-url"))
	fs.StringVar(&f.modelKeyFile, "model-key-file", env.str("model-key-file", ""), h("model-key-file", "`file` holding the Anthropic API key for research sessions (or set PINNED_SIDECAR_MODEL_KEY); without one /v1/research answers model_not_configured"))
	fs.StringVar(&f.modelBaseURL, "model-base-url", env.str("model-base-url", ""), h("model-base-url", "the Messages API base `URL` (default https://api.anthropic.com)"))
	fs.StringVar(&f.model, "model", env.str("model", claude.DefaultModel), h("model", "model `id` for research sessions"))
	fs.StringVar(&f.connectTo, "connect-to", "", "DEV/TEST ONLY: send every pinned host to this `ip:port` (a running pinned fakeapi); needs --cacert")
	fs.StringVar(&f.caFile, "cacert", "", "DEV/TEST ONLY: PEM `file` of an extra CA to trust with --connect-to")
	fs.BoolVar(&f.fakeModel, "fake-model", false, "DEV/TEST ONLY: answer research sessions with pinned demo's scripted model (a program replaying tool calls, not a language model); with --connect-to")
	f.audit.register(fs, env, h)
	f.limits.register(fs, env, h)
	addrFile := fs.String("addr-file", "", addrFileHelp)
	if code, ok := parseFlags(fs, sidecarUsage, args, stdout, stderr); !ok {
		return code
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "pinned sidecar: "+format+"\n", a...)
		return 2
	}
	if len(env.errs) > 0 {
		return usage("%s", strings.Join(env.errs, "; "))
	}
	cfg, key, token, err := f.check()
	if err != nil {
		return usage("%s", errText(err))
	}
	auditCfg, err := f.audit.resolve(f.stateDir)
	if err != nil {
		return usage("%s", errText(err))
	}
	if err := f.limits.apply(&cfg); err != nil {
		return usage("%s", err)
	}
	tp, err := export.New(ctx, os.Getenv, "pinned-sidecar", binaryVersion())
	if err != nil {
		return usage("%s (docs/OPERATING.md, \"Tracing\")", errText(err))
	}
	if tp != nil {
		cfg.Tracer = tp
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = tp.Shutdown(sctx) // flush the last spans; an unreachable collector loses them
		}()
	}
	cfg.Version = binaryVersion()
	if cfg.Store != nil {
		defer cfg.Store.Close()
	}
	level, _ := zerolog.ParseLevel(f.logLevel)
	base := zerolog.New(stderr).Level(level).With().Timestamp()
	log := base.Str("component", "sidecar").Logger()
	hostLog := zerolog.New(stderr).Level(level).With().Timestamp().Str("component", "host").Logger()

	if rs, ok := cfg.Store.(*state.Redis); ok {
		if code := checkRedis(rs, f, log, stderr); code != 0 {
			return code
		}
	} else if fst, ok := cfg.Store.(*state.File); ok {
		log.Info().Str("event", "state_store").Str("store", "file").Str("path", fst.Path()).Msg("state in a file: a restart loses no grant use; run one replica per bot key, or share --redis-url (docs/OPERATING.md)")
	} else {
		log.Warn().Str("event", "state_store").Str("store", "memory").Msg("state in memory (--state-dir empty): a restart forgets which grants ran, so one captured inside its TTL runs again; run one replica per bot key (docs/OPERATING.md)")
	}

	auditLog, err := auditCfg.open(f.audit.keyFile == "", log)
	if err != nil {
		return usage("%s", err)
	}
	if auditLog != nil {
		cfg.Audit = auditLog
		defer func() {
			if err := auditLog.Close(); err != nil {
				log.Error().Str("event", "audit_log").AnErr("cause", err).Msg("the audit log could not be sealed and closed")
			}
		}()
	} else {
		log.Warn().Str("event", "audit_log").Bool("enabled", false).Msg("no audit trail (--audit-log off, or no --state-dir)")
	}

	prom := prometheus.NewRegistry()
	prom.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	hcfg := host.Config{PoolInBackground: true, Timeout: f.opTimeout, PagesTimeout: f.pagesTimeout, CacheDir: f.cacheDir, Logger: &hostLog, Metrics: host.NewMetrics(prom), OmitTarget: f.omitTarget}
	if f.connectTo != "" {
		pem, err := os.ReadFile(f.caFile)
		if err != nil {
			return usage("--cacert: %s", errText(err))
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return usage("--cacert %s: no PEM certificate in it (pinned fakeapi --ca-out writes one)", f.caFile)
		}
		hcfg.Override = &host.Override{Addr: f.connectTo, CAPEM: pem}
		log.Warn().Str("event", "dev_override").Str("connect_to", f.connectTo).
			Msg("DEV/TEST ONLY: every pinned host is mapped to --connect-to")
	}
	if f.fakeModel {
		fm, m, err := scriptedModel(fakemodel.Pages())
		if err != nil {
			fmt.Fprintf(stderr, "pinned sidecar: %s\n", errText(err))
			return 1
		}
		defer fm.Close()
		cfg.Model = m
		log.Warn().Str("event", "dev_fake_model").Msg("DEV/TEST ONLY: research sessions are answered by a scripted model, not a language model")
	}
	// Bind before compiling: a taken port fails at once, not after the
	// sandbox is built. Connections wait in the backlog until Serve.
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		fmt.Fprintf(stderr, "pinned sidecar: %s\n", listenFailed(err))
		return 1
	}
	defer ln.Close()
	start := time.Now()
	eng, err := host.New(context.Background(), hcfg)
	if err != nil {
		return engineFailed(stderr, "sidecar", err)
	}
	defer eng.Close(context.Background())
	// The isolation strategy in use, with why reset was not possible
	// (off Linux: "fresh (copy-on-write memory needs Linux)").
	// The engine that runs ops now: "interpreter" on a start with no
	// machine code cached, until the compiler's is ready (the pool_ready
	// event comes after it).
	tier := eng.Tier()
	log.Info().Str("event", "engine_ready").Str("isolation", eng.Strategy()).Str("tier", tier).
		Float64("took_ms", float64(time.Since(start).Microseconds())/1000).Msg("sandbox compiled")
	// Started on the interpreter, say when ops run on machine code; then,
	// as the reset pool is built while the sidecar serves (ops run in fresh
	// instances until then), say when it is, and what it is. One
	// goroutine, so the events come in that order.
	go func() {
		if tier != "compiler" {
			switch err := eng.WaitCompiled(ctx); {
			case ctx.Err() != nil, errors.Is(err, context.Canceled): // shutting down
				return
			case err != nil:
				log.Error().Str("event", "compile_failed").Str("error", errText(err)).Msg("the guest's machine code could not be compiled: every op runs on the interpreter")
			default:
				log.Info().Str("event", "compiled").Str("tier", eng.Tier()).
					Float64("took_ms", float64(time.Since(start).Microseconds())/1000).Msg("guest compiled to machine code: ops run on it")
			}
		}
		err := eng.WaitPool(ctx)
		switch {
		case ctx.Err() != nil, errors.Is(err, context.Canceled): // shutting down
		case err != nil:
			log.Error().Str("event", "pool_failed").Str("error", errText(err)).Msg("the reset pool could not be built: every op runs in a fresh instance")
		case eng.Strategy() == host.IsolationReset:
			log.Info().Str("event", "pool_ready").Str("reset_scan", eng.ResetScan()).Str("page_classes", eng.PageClasses()).Str("template", eng.Template()).
				Float64("took_ms", float64(time.Since(start).Microseconds())/1000).Msg("reset pool built: ops reuse reset instances")
		}
	}()

	cfg.Engine, cfg.Key, cfg.CallerToken = eng, key, token
	cfg.Logger, cfg.Prometheus = &log, prom
	if cfg.Refresher != nil {
		log.Info().Str("event", "rotation").Str("broker", f.brokerURL).Float64("margin_ms", float64(f.refreshMargin.Milliseconds())).
			Float64("timeout_ms", float64(f.refreshTimeout.Milliseconds())).Msg("token rotation through the broker")
	} else {
		log.Info().Str("event", "rotation").Bool("enabled", false).Msg("no broker configured: expiring tokens are not rotated")
	}
	srv, err := sidecar.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "pinned sidecar: %s\n", errText(err))
		return 1
	}
	fmt.Fprintf(stderr, "pinned sidecar %s: listening on http://%s (bot public key %s)\n", cfg.Version, ln.Addr(), key.Public())
	removeAddr, err := writeAddrFile(*addrFile, ln.Addr().String())
	if err != nil {
		fmt.Fprintf(stderr, "pinned sidecar: %s\n", errText(err))
		return 1
	}
	defer removeAddr()
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Fprintf(stderr, "pinned sidecar: %s\n", errText(err))
		return 1
	}
	return 0
}

// check validates the flags and loads the key and the caller token.
func (f *sidecarFlags) check() (sidecar.Config, *grant.PrivateKey, secret.Secret, error) {
	var cfg sidecar.Config
	if _, err := zerolog.ParseLevel(f.logLevel); err != nil || f.logLevel == "" {
		return cfg, nil, "", fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	positive := []struct {
		name string
		d    time.Duration
	}{
		{"--op-timeout", f.opTimeout}, {"--pages-timeout", f.pagesTimeout}, {"--read-header-timeout", f.readHeaderTimeout}, {"--read-timeout", f.readTimeout},
		{"--write-timeout", f.writeTimeout}, {"--idle-timeout", f.idleTimeout}, {"--shutdown-grace", f.shutdownGrace},
		{"--busy-retry-after", f.busyRetryAfter}, {"--max-grant-ttl", f.maxGrantTTL}, {"--standing-grant-ttl", f.standingGrantTTL},
		{"--refresh-margin", f.refreshMargin}, {"--refresh-timeout", f.refreshTimeout}, {"--redis-timeout", f.redisTimeout},
	}
	for _, p := range positive {
		if p.d <= 0 {
			return cfg, nil, "", fmt.Errorf("%s must be positive, not %s", p.name, p.d)
		}
	}
	if f.writeTimeout <= f.opTimeout {
		return cfg, nil, "", fmt.Errorf("--write-timeout (%s) must exceed --op-timeout (%s), or answers to slow ops are cut off", f.writeTimeout, f.opTimeout)
	}
	if f.writeTimeout <= f.pagesTimeout {
		return cfg, nil, "", fmt.Errorf("--write-timeout (%s) must exceed --pages-timeout (%s), or answers to paged calls are cut off while pages are still read", f.writeTimeout, f.pagesTimeout)
	}
	if f.maxConcurrency <= 0 || f.maxBodyBytes <= 0 || f.replayCacheSize <= 0 {
		return cfg, nil, "", errors.New("--max-concurrency, --max-body-bytes and --replay-cache-size must be positive")
	}
	if (f.connectTo == "") != (f.caFile == "") {
		return cfg, nil, "", errors.New("--connect-to and --cacert go together (the address and CA of a running pinned fakeapi)")
	}
	if f.fakeModel && f.connectTo == "" {
		return cfg, nil, "", errors.New("--fake-model answers from the provider fake's data: use it with --connect-to and --cacert")
	}
	if f.connectTo != "" {
		if _, err := netip.ParseAddrPort(f.connectTo); err != nil {
			return cfg, nil, "", fmt.Errorf("--connect-to %q: want ip:port, the address pinned fakeapi printed (e.g. 127.0.0.1:8443)", f.connectTo)
		}
	}
	if f.keyFile == "" {
		return cfg, nil, "", errors.New("--key-file is required (create one with: pinned keygen --out bot.key)")
	}
	key, err := grant.LoadKeyFile(f.keyFile)
	if err != nil {
		return cfg, nil, "", err
	}
	token, err := callerToken(f.tokenFile)
	if err != nil {
		return cfg, nil, "", err
	}
	loopback, err := isLoopback(f.listen)
	if err != nil {
		return cfg, nil, "", err
	}
	if !loopback && token == "" {
		return cfg, nil, "", fmt.Errorf("--listen %s is not a loopback address: set a caller token (--token-file or PINNED_SIDECAR_TOKEN) so only your bot can use the grants sent here", f.listen)
	}
	refresher, err := f.broker()
	if err != nil {
		return cfg, nil, "", err
	}
	cfg = sidecar.Config{
		MaxConcurrency: f.maxConcurrency, MaxBodyBytes: f.maxBodyBytes, BusyRetryAfter: f.busyRetryAfter,
		ReplayCacheSize: f.replayCacheSize, MaxGrantTTL: f.maxGrantTTL, StandingGrantTTL: f.standingGrantTTL,
		ReadHeaderTimeout: f.readHeaderTimeout, ReadTimeout: f.readTimeout, WriteTimeout: f.writeTimeout,
		IdleTimeout: f.idleTimeout, ShutdownGrace: f.shutdownGrace,
		RefreshMargin: f.refreshMargin, RefreshTimeout: f.refreshTimeout,
	}
	if refresher != nil {
		cfg.Refresher = refresher
	}
	store, err := f.redis()
	if err != nil {
		return cfg, nil, "", err
	}
	if store != nil {
		cfg.Store = store
	} else if f.stateDir != "" {
		// One process, durable: a file per bot key under the state
		// directory (internal/state.File).
		fst, err := state.OpenFile(stateFile(f.stateDir, key), state.FileOptions{ReplayCacheSize: f.replayCacheSize, MaxGrace: rotate.DefaultMaxCached})
		if err != nil {
			return cfg, nil, "", fmt.Errorf("--state-dir: %w", err)
		}
		cfg.Store = fst
	}
	modelKey, err := secretFromFileOrEnv("model API key", "--model-key-file", f.modelKeyFile, "PINNED_SIDECAR_MODEL_KEY", 16)
	if err != nil {
		return cfg, nil, "", err
	}
	if modelKey != "" && f.fakeModel {
		return cfg, nil, "", errors.New("--fake-model and a model key (--model-key-file, PINNED_SIDECAR_MODEL_KEY) exclude each other")
	}
	if modelKey != "" {
		m, err := claude.New(claude.Config{APIKey: modelKey, BaseURL: f.modelBaseURL, Model: f.model})
		if err != nil {
			return cfg, nil, "", err
		}
		cfg.Model = m
	}
	return cfg, key, token, nil
}

// defaultStateDir is $XDG_STATE_HOME/pinned, or ~/.local/state/pinned
// (the XDG Base Directory default); "" without a home directory.
func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "pinned")
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		return filepath.Join(home, ".local", "state", "pinned")
	}
	return ""
}

// stateFile is the state file of the sidecar with key under dir: named
// for the key's public half, so sidecars of two bots never share one.
func stateFile(dir string, key *grant.PrivateKey) string {
	sum := sha256.Sum256([]byte(key.Public().String()))
	return filepath.Join(dir, "sidecar-"+hex.EncodeToString(sum[:6])+".db")
}

// envOr is the environment variable name's value, or def when unset.
func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// redis builds the Redis state store, or nil without --redis-url. The
// password and the state key come from files or the environment only.
func (f *sidecarFlags) redis() (*state.Redis, error) {
	pw, err := secretFromFileOrEnv("Redis password", "--redis-password-file", f.redisPasswordFile, "PINNED_REDIS_PASSWORD", 1)
	if err != nil {
		return nil, err
	}
	hexKey, err := secretFromFileOrEnv("state key", "--state-key-file", f.stateKeyFile, "PINNED_SIDECAR_STATE_KEY", 2*state.StateKeySize)
	if err != nil {
		return nil, err
	}
	if f.redisURL == "" {
		if pw != "" || hexKey != "" || f.redisCAFile != "" {
			return nil, errors.New("a Redis password, state key or --redis-cacert is set but --redis-url is empty: set --redis-url (several replicas) or none of them")
		}
		return nil, nil
	}
	if hexKey == "" {
		return nil, errors.New("--redis-url needs the state key shared by the replicas: --state-key-file or PINNED_SIDECAR_STATE_KEY (create one with: openssl rand -hex 32)")
	}
	stateKey, err := hex.DecodeString(hexKey)
	if err != nil || len(stateKey) != state.StateKeySize {
		return nil, fmt.Errorf("the state key must be %d hex characters (%d bytes; openssl rand -hex 32)", 2*state.StateKeySize, state.StateKeySize)
	}
	if f.redisPrefix == "" {
		return nil, errors.New("--redis-prefix must not be empty")
	}
	opt := state.RedisOptions{URL: f.redisURL, Password: pw, StateKey: stateKey, Prefix: f.redisPrefix, Timeout: f.redisTimeout}
	if f.redisCAFile != "" {
		pem, err := os.ReadFile(f.redisCAFile)
		if err != nil {
			return nil, fmt.Errorf("--redis-cacert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--redis-cacert %s: no PEM certificate in it", f.redisCAFile)
		}
		opt.RootCAs = pool
	}
	rs, err := state.NewRedis(opt)
	if err != nil {
		return nil, fmt.Errorf("--redis-url: %s", strings.TrimPrefix(err.Error(), "state: "))
	}
	return rs, nil
}

// checkRedis logs where the state is and refuses a Redis that may evict
// replay records. A Redis that does not answer yet is only logged: the
// sidecar serves not-ready (ops answer unavailable) until it answers.
func checkRedis(rs *state.Redis, f sidecarFlags, log zerolog.Logger, stderr io.Writer) int {
	ctx := context.Background()
	addr := "?"
	if o, err := state.ParseRedisURL(f.redisURL); err == nil {
		addr = o.Network + ":" + o.Addr
	}
	if err := rs.Ping(ctx); err != nil {
		log.Warn().Str("event", "state_store").Str("store", "redis").Str("addr", addr).AnErr("cause", err).
			Msg("Redis does not answer yet: not ready, ops are refused with unavailable until it does")
		return 0
	}
	policy, err := rs.EvictionPolicy(ctx)
	switch {
	case err != nil:
		log.Warn().Str("event", "state_store").Str("store", "redis").Str("addr", addr).
			Msg("cannot read Redis's maxmemory-policy (CONFIG GET is not allowed): make sure it is noeviction, or an evicted replay record lets a grant run twice")
	case policy != "noeviction":
		fmt.Fprintf(stderr, "pinned sidecar: Redis's maxmemory-policy is %q: it may evict replay records and let a grant run twice; set maxmemory-policy noeviction (docs/OPERATING.md)\n", policy)
		return 1
	}
	log.Info().Str("event", "state_store").Str("store", "redis").Str("addr", addr).Str("prefix", f.redisPrefix).
		Float64("timeout_ms", float64(f.redisTimeout.Milliseconds())).Msg("shared state on Redis")
	return 0
}

// broker builds the broker client for token rotation, or nil when no
// broker is configured. The URL and the instance token go together.
func (f *sidecarFlags) broker() (*rotate.BrokerClient, error) {
	tok, err := secretFromFileOrEnv("broker instance token", "--broker-token-file", f.brokerTokenFile, "PINNED_SIDECAR_BROKER_TOKEN", broker.MinInstanceTokenLen)
	if err != nil {
		return nil, err
	}
	switch {
	case f.brokerURL == "" && tok == "":
		return nil, nil
	case f.brokerURL == "":
		return nil, errors.New("a broker instance token is set but --broker-url is empty: set both (token rotation) or neither")
	case tok == "":
		return nil, errors.New("--broker-url needs the broker instance token: --broker-token-file or PINNED_SIDECAR_BROKER_TOKEN")
	}
	// An op that rotates runs at most twice and refreshes once.
	if need := 2*f.opTimeout + f.refreshTimeout; f.writeTimeout <= need {
		return nil, fmt.Errorf("with --broker-url, --write-timeout (%s) must exceed twice --op-timeout plus --refresh-timeout (%s), or the answer carrying a rotated token pair could be cut off", f.writeTimeout, need)
	}
	// A paged call whose first page is refused (401) runs again after
	// the refresh.
	if need := f.opTimeout + f.refreshTimeout + f.pagesTimeout; f.writeTimeout <= need {
		return nil, fmt.Errorf("with --broker-url, --write-timeout (%s) must exceed --op-timeout plus --refresh-timeout plus --pages-timeout (%s), or the answer to a paged call that rotated could be cut off", f.writeTimeout, need)
	}
	bc, err := rotate.NewBrokerClient(f.brokerURL, secret.Secret(tok), rotate.BrokerOptions{Timeout: f.refreshTimeout})
	if err != nil {
		return nil, fmt.Errorf("--broker-url: %w", err)
	}
	return bc, nil
}

// minTokenLen is the shortest caller token accepted.
const minTokenLen = 16

// callerToken reads the caller token from file, or from
// PINNED_SIDECAR_TOKEN; never both.
func callerToken(file string) (secret.Secret, error) {
	tok, err := secretFromFileOrEnv("caller token", "--token-file", file, "PINNED_SIDECAR_TOKEN", minTokenLen)
	return secret.Secret(tok), err
}

// secretFromFileOrEnv reads a secret from file (flagName names it), or
// from the environment variable envVar; never both, never from a flag
// value. White space around it is trimmed; it must be at least minLen
// printable ASCII characters without spaces. "" when neither is set.
// Errors never repeat the secret.
func secretFromFileOrEnv(what, flagName, file, envVar string, minLen int) (string, error) {
	envTok, inEnv := os.LookupEnv(envVar)
	var tok string
	switch {
	case file != "" && inEnv:
		return "", fmt.Errorf("the %s comes from %s or %s, not both", what, flagName, envVar)
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s: %w", flagName, err)
		}
		// Like the private key: a secret file others can read is refused.
		if st, err := os.Stat(file); err == nil && st.Mode().Perm()&0o077 != 0 {
			return "", fmt.Errorf("%s %s has mode %04o: it is accessible by group or others; run `chmod 600 %s`", flagName, file, st.Mode().Perm(), file)
		}
		tok = strings.TrimSpace(string(b))
		if tok == "" {
			return "", fmt.Errorf("%s %s is empty", flagName, file)
		}
	case inEnv:
		tok = strings.TrimSpace(envTok)
		if tok == "" {
			return "", fmt.Errorf("%s is set but empty", envVar)
		}
	default:
		return "", nil
	}
	if len(tok) < minLen {
		return "", fmt.Errorf("the %s must be at least %d characters (e.g. openssl rand -hex 32)", what, minLen)
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] <= 0x20 || tok[i] >= 0x7f {
			return "", fmt.Errorf("the %s must be printable ASCII without spaces", what)
		}
	}
	return tok, nil
}

// isLoopback reports whether a listen address is on loopback only:
// "localhost" or a loopback IP literal. An empty host (":8080") listens on
// every interface.
func isLoopback(addr string) (bool, error) {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("--listen %q: %v (want host:port, e.g. 127.0.0.1:8080)", addr, err)
	}
	if h == "localhost" {
		return true, nil
	}
	ip, err := netip.ParseAddr(h)
	if err != nil {
		return false, nil // a host name: it may resolve anywhere
	}
	return ip.Unmap().IsLoopback() && ip.Zone() == "", nil
}
