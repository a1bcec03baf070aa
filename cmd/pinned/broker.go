package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/broker"
	"github.com/elevenmessenger/pinned/broker/regsync"
	"github.com/elevenmessenger/pinned/registry"
)

const brokerUsage = `Usage: pinned broker [flags]
       pinned broker --gen-state-key

Runs the OAuth relay: one confidential OAuth client per service, the code
exchange (PKCE where the manifest supports it) and token refresh, and the
public registry. It persists nothing. See docs/OAUTH.md.

With --registry-url and --registry-pubkey the broker syncs a signed
registry snapshot every --registry-interval, verifies it and serves the
last good one at GET /registry; it refuses a bad signature, a tampered
manifest or a rolled-back version (the log and
pinned_broker_registry_syncs_total say why). The synced registry feeds
catalogs only: sidecars run their own embedded snapshot.

Endpoints: GET /registry, GET /api/oauth/config?service=ID,
GET /oauth/ID/start?cap=read|write&return=URL, GET /oauth/ID/callback,
POST /api/refresh, GET /healthz, GET /metrics.

Environment:
  LCHAT_OAUTH_<ID>_CLIENT_ID       a service's OAuth client id (ID upper-cased:
  LCHAT_OAUTH_<ID>_CLIENT_SECRET   LCHAT_OAUTH_GITHUB_CLIENT_ID); both or neither.
                                   A service's Connect button appears once set.
  LCHAT_OAUTH_<ID>_REDIRECT_URI    optional; default <public-url>/oauth/<id>/callback
  LCHAT_DNSIMPLE_CLIENT_ID         DNSimple's legacy names, used when its
  LCHAT_DNSIMPLE_CLIENT_SECRET     LCHAT_OAUTH_DNSIMPLE_ pair is unset
  PINNED_BROKER_STATE_KEY          the state sealing key, base64 of 32 bytes
                                   (or --state-key-file); REQUIRED
  PINNED_BROKER_INSTANCE_TOKENS    comma-separated instance tokens for
                                   POST /api/refresh (or --instance-tokens-file);
                                   none: refresh is disabled
  PINNED_BROKER_<FLAG>             every flag below, upper-cased with dashes as
                                   underscores (PINNED_BROKER_PUBLIC_URL); a flag
                                   given on the command line wins

Exit status: 0 after a clean shutdown (SIGINT or SIGTERM), 1 the broker
could not listen or serve, 2 bad usage or configuration.

Flags:
`

// brokerEnvPrefix prefixes the environment form of every flag.
const brokerEnvPrefix = "PINNED_BROKER_"

// brokerIO is what runBrokerContext needs from its surroundings (tests
// substitute every part).
type brokerIO struct {
	environ []string
	stdout  io.Writer
	stderr  io.Writer
	ready   func(addr string) // called once listening (tests)
}

func runBroker(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runBrokerContext(ctx, args, brokerIO{environ: os.Environ(), stdout: stdout, stderr: stderr})
}

// brokerFlags are the parsed flags.
type brokerFlags struct {
	listen, publicURL, allowReturn   string
	stateKeyFile, instanceTokensFile string
	stateTTL, providerTimeout        time.Duration
	bindBrowser                      bool
	refreshRate                      float64
	refreshBurst                     int
	proxy, providerAddr, providerCA  string
	logLevel, logFormat              string
	genStateKey                      bool
	addrFile                         string
	registryURL, registryPubkey      string
	registryCA                       string
	registryInterval                 time.Duration
}

// runBrokerContext runs the broker until ctx is done.
func runBrokerContext(ctx context.Context, args []string, bio brokerIO) int {
	stderr := bio.stderr
	env := map[string]string{}
	for _, kv := range bio.environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	var f brokerFlags
	fs := flag.NewFlagSet("broker", flag.ContinueOnError)
	fs.StringVar(&f.listen, "listen", broker.DefaultListen, "`address` to listen on, host:port (plain HTTP: terminate TLS in front of the broker)")
	fs.StringVar(&f.publicURL, "public-url", "", "the broker's public base `URL` as browsers and providers reach it (default http://<listen>); redirect URIs are <public-url>/oauth/<id>/callback")
	fs.StringVar(&f.allowReturn, "allow-return", "", "comma-separated `origins` a flow may return to (https://app.example.com,http://localhost:3000); exact scheme, host and port")
	fs.StringVar(&f.stateKeyFile, "state-key-file", "", "`file` holding the state key (base64 of 32 bytes); instead of PINNED_BROKER_STATE_KEY")
	fs.DurationVar(&f.stateTTL, "state-ttl", broker.DefaultStateTTL, "how long a member may take on the provider's consent page")
	fs.BoolVar(&f.bindBrowser, "bind-browser", true, "bind each flow to the browser that started it with a short-lived cookie (login-CSRF defence)")
	fs.StringVar(&f.instanceTokensFile, "instance-tokens-file", "", "`file` with one instance token per line (# comments allowed); instead of PINNED_BROKER_INSTANCE_TOKENS")
	fs.Float64Var(&f.refreshRate, "refresh-rate", broker.DefaultRefreshRate, "POST /api/refresh requests per second allowed per instance token (unauthenticated: per address)")
	fs.IntVar(&f.refreshBurst, "refresh-burst", broker.DefaultRefreshBurst, "burst of POST /api/refresh requests allowed per instance token")
	fs.DurationVar(&f.providerTimeout, "provider-timeout", broker.DefaultProviderTimeout, "bound on one call to a provider's token endpoint")
	fs.StringVar(&f.proxy, "proxy", "", "HTTP(S) proxy `URL` for calls to providers (proxy environment variables are ignored)")
	fs.StringVar(&f.providerAddr, "provider-addr", "", "TESTS AND TRIALS ONLY: dial every provider at this `ip:port` (the address of pinned fakeapi)")
	fs.StringVar(&f.providerCA, "provider-ca", "", "TESTS AND TRIALS ONLY: PEM `file` of an extra CA trusted for providers (with --provider-addr)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "json", "log `format`: json or console")
	fs.BoolVar(&f.genStateKey, "gen-state-key", false, "print a fresh random state key (base64) and exit")
	fs.StringVar(&f.addrFile, "addr-file", "", addrFileHelp)
	fs.StringVar(&f.registryURL, "registry-url", "", "https `URL` of a signed registry snapshot (snapshot.json; its signature at URL.minisig) to sync and serve at GET /registry; default: serve the embedded registry")
	fs.StringVar(&f.registryPubkey, "registry-pubkey", "", "the registry publisher's minisign public `key` (a .pub file or its base64 line); required with --registry-url")
	fs.DurationVar(&f.registryInterval, "registry-interval", regsync.DefaultInterval, "how often to fetch the registry snapshot")
	fs.StringVar(&f.registryCA, "registry-ca", "", "TESTS AND TRIALS ONLY: PEM `file` of an extra CA trusted for --registry-url")
	if code, ok := parseFlags(fs, brokerUsage, args, bio.stdout, stderr); !ok {
		return code
	}
	if f.genStateKey {
		fmt.Fprintln(bio.stdout, broker.GenerateStateKey())
		return 0
	}
	// Flags not given on the command line take PINNED_BROKER_<FLAG>.
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	var envErr error
	fs.VisitAll(func(fl *flag.Flag) {
		name := brokerEnvPrefix + strings.ToUpper(strings.ReplaceAll(fl.Name, "-", "_"))
		if v, ok := env[name]; ok && !given[fl.Name] && fl.Name != "gen-state-key" && fl.Name != "addr-file" && envErr == nil {
			if err := fs.Set(fl.Name, v); err != nil {
				envErr = fmt.Errorf("%s: %v", name, err)
			}
		}
	})
	if envErr != nil {
		fmt.Fprintf(stderr, "pinned broker: %s\n", errText(envErr))
		return 2
	}
	cfg, log, err := brokerConfig(&f, env, bio.environ, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "pinned broker: %s\n", errText(err))
		return 2
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		fmt.Fprintf(stderr, "pinned broker: listen: %s\n", listenFailed(err))
		return 1
	}
	defer ln.Close()
	if cfg.PublicURL == "" { // the address actually bound (--listen may say port 0)
		cfg.PublicURL = "http://" + ln.Addr().String()
	}
	syncer, err := registrySyncer(&f, *cfg.Logger)
	if err != nil {
		fmt.Fprintf(stderr, "pinned broker: %s\n", errText(err))
		return 2
	}
	cfg.RegistrySync = syncer
	b, err := broker.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "pinned broker: %s\n", errText(err))
		return 2
	}
	defer b.Close()
	if syncer != nil {
		syncCtx, stopSync := context.WithCancel(ctx)
		syncDone := make(chan struct{})
		go func() { defer close(syncDone); syncer.Run(syncCtx) }()
		defer func() { stopSync(); <-syncDone }()
	}
	srv := &http.Server{
		Handler:           b.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      cfg.ProviderTimeout + 30*time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	enabled := b.Enabled()
	redirects := zerolog.Dict()
	for _, id := range enabled {
		redirects = redirects.Str(id, b.RedirectURL(id))
	}
	log.Info().Str("listen", ln.Addr().String()).Str("public_url", cfg.PublicURL).
		Strs("allowed_return_origins", cfg.AllowedReturnOrigins).Strs("oauth_enabled", enabled).
		Dict("redirect_uris", redirects).Int("instance_tokens", len(cfg.InstanceTokens)).
		Bool("browser_binding", !cfg.NoBrowserBinding).Str("registry", registry.Default().Digest()).
		Msg("broker listening")
	if len(cfg.AllowedReturnOrigins) == 0 {
		log.Warn().Msg("no return origins are allowed (--allow-return): every /oauth/<id>/start is refused")
	}
	if len(cfg.InstanceTokens) == 0 {
		log.Warn().Msg("no instance tokens (PINNED_BROKER_INSTANCE_TOKENS): POST /api/refresh answers refresh_disabled")
	}
	if len(enabled) == 0 {
		log.Warn().Msg("no OAuth clients configured (LCHAT_OAUTH_<ID>_CLIENT_ID / _CLIENT_SECRET): no Connect button can start")
	}
	if cfg.Override != nil {
		log.Warn().Str("provider_addr", cfg.Override.Addr).Msg("provider override active: every provider call goes to a local server (tests and trials only)")
	}
	removeAddr, err := writeAddrFile(f.addrFile, ln.Addr().String())
	if err != nil {
		fmt.Fprintf(stderr, "pinned broker: %s\n", errText(err))
		return 1
	}
	defer removeAddr()
	if bio.ready != nil {
		bio.ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		log.Error().Err(err).Msg("serve failed")
		return 1
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		log.Warn().Err(err).Msg("shutdown")
	}
	<-errc
	log.Info().Msg("broker stopped")
	return 0
}

// brokerConfig turns flags and environment into a broker.Config and the
// logger. Errors name flags, variables and files, never secret values.
func brokerConfig(f *brokerFlags, env map[string]string, environ []string, stderr io.Writer) (broker.Config, zerolog.Logger, error) {
	var cfg broker.Config
	level, err := zerolog.ParseLevel(f.logLevel)
	if err != nil || f.logLevel == "" {
		return cfg, zerolog.Nop(), fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	var out io.Writer = stderr
	switch f.logFormat {
	case "json":
	case "console":
		// Colour codes only on a terminal, not into a file or a pipe.
		out = zerolog.ConsoleWriter{Out: stderr, TimeFormat: time.RFC3339, NoColor: !isTerminal(stderr)}
	default:
		return cfg, zerolog.Nop(), fmt.Errorf("--log-format %q: want json or console", f.logFormat)
	}
	log := zerolog.New(out).Level(level).With().Timestamp().Str("process", "pinned-broker").Logger()
	cfg.Logger = &log

	// The state key: fail closed without one.
	keyEnv, keyFile := strings.TrimSpace(env[brokerEnvPrefix+"STATE_KEY"]), f.stateKeyFile
	switch {
	case keyEnv != "" && keyFile != "":
		return cfg, log, errors.New("both PINNED_BROKER_STATE_KEY and --state-key-file are set; use one")
	case keyEnv != "":
		cfg.StateKey, err = broker.ParseStateKey(keyEnv)
		if err != nil {
			return cfg, log, fmt.Errorf("PINNED_BROKER_STATE_KEY: %v", err)
		}
	case keyFile != "":
		b, err := os.ReadFile(keyFile)
		if err != nil {
			return cfg, log, fmt.Errorf("--state-key-file: %v", err)
		}
		cfg.StateKey, err = broker.ParseStateKey(string(b))
		if err != nil {
			return cfg, log, fmt.Errorf("--state-key-file %s: %v", keyFile, err)
		}
		if st, err := os.Stat(keyFile); err == nil && st.Mode().Perm()&0o077 != 0 {
			log.Warn().Str("file", keyFile).Msg("the state key file is readable by group or others; chmod 600 it")
		}
	default:
		return cfg, log, errors.New("refusing to start without a state key: generate one with `pinned broker --gen-state-key` and set PINNED_BROKER_STATE_KEY or --state-key-file")
	}

	// Instance tokens for POST /api/refresh.
	tokEnv := env[brokerEnvPrefix+"INSTANCE_TOKENS"]
	if tokEnv != "" && f.instanceTokensFile != "" {
		return cfg, log, errors.New("both PINNED_BROKER_INSTANCE_TOKENS and --instance-tokens-file are set; use one")
	}
	for _, t := range strings.Split(tokEnv, ",") {
		if t = strings.TrimSpace(t); t != "" {
			cfg.InstanceTokens = append(cfg.InstanceTokens, t)
		}
	}
	if f.instanceTokensFile != "" {
		b, err := os.ReadFile(f.instanceTokensFile)
		if err != nil {
			return cfg, log, fmt.Errorf("--instance-tokens-file: %v", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				cfg.InstanceTokens = append(cfg.InstanceTokens, line)
			}
		}
	}

	cfg.PublicURL = f.publicURL
	if cfg.PublicURL == "" {
		host, _, err := net.SplitHostPort(f.listen)
		if err != nil {
			return cfg, log, fmt.Errorf("--listen %q: %v", f.listen, err)
		}
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			return cfg, log, fmt.Errorf("--listen %s listens on every address: set --public-url to the URL browsers and providers use", f.listen)
		}
		// Left empty: runBrokerContext fills in the address it binds.
	}
	for _, o := range strings.Split(f.allowReturn, ",") {
		if o = strings.TrimSpace(o); o != "" && !slices.Contains(cfg.AllowedReturnOrigins, o) {
			cfg.AllowedReturnOrigins = append(cfg.AllowedReturnOrigins, o)
		}
	}
	cfg.StateTTL = f.stateTTL
	cfg.NoBrowserBinding = !f.bindBrowser
	cfg.RefreshRate, cfg.RefreshBurst = f.refreshRate, f.refreshBurst
	cfg.ProviderTimeout = f.providerTimeout
	if f.stateTTL <= 0 || f.providerTimeout <= 0 || f.refreshRate <= 0 || f.refreshBurst <= 0 {
		return cfg, log, errors.New("--state-ttl, --provider-timeout, --refresh-rate and --refresh-burst must be positive")
	}
	if f.proxy != "" {
		u, err := url.Parse(f.proxy)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cfg, log, fmt.Errorf("--proxy: want http://host:port or https://host:port")
		}
		cfg.Proxy = u
	}
	if f.providerAddr != "" {
		cfg.Override = &broker.Override{Addr: f.providerAddr}
		if f.providerCA != "" {
			pem, err := os.ReadFile(f.providerCA)
			if err != nil {
				return cfg, log, fmt.Errorf("--provider-ca: %v", err)
			}
			cfg.Override.CAPEM = pem
		}
	} else if f.providerCA != "" {
		return cfg, log, errors.New("--provider-ca needs --provider-addr")
	}
	cfg.Clients, err = broker.ClientsFromEnv(nil, environ)
	if err != nil {
		return cfg, log, fmt.Errorf("OAuth clients: %v", err)
	}
	return cfg, log, nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
