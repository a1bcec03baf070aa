package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/broker"
	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/rotate"
	"github.com/elevenmessenger/pinned/internal/state"
	"github.com/elevenmessenger/pinned/mcpauth"
	"github.com/elevenmessenger/pinned/mcpserver"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/secret"
	"github.com/elevenmessenger/pinned/sidecar"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

const mcpUsage = `Usage: pinned mcp [--tools full|compact] [--listen ADDR] [flags]

Serves your connections (pinned connect) to your own agent over the Model
Context Protocol (docs/MCP.md): on stdin/stdout by default (what desktop
assistants and coding agents start), or over streamable HTTP with
--listen. Logs go to stderr, one JSON line per tool call; never a token.

Every call runs through the sidecar's own checks (a one-shot grant bound
to the op and its args, the sandbox, the manifest's pick). Write tools
exist only for connections made with --cap write, are offered only to
clients that can ask you (elicitation), and run only after you confirm the
manifest's sentence and every other value the call sends.

Data read from one service does not go to another: within a session, a
read whose args carry a value another service returned is refused
(cross_service_flow), and a write's confirmation says which of its values
came from which earlier call. --allow-flow FROM:TO lets reads of TO carry
what FROM returned, for this run only (docs/MCP.md).

Both protocol eras are served by default (--protocol both): a client
that sends initialize gets a 2025-11-25 session; a request carrying its
protocol version in _meta (2026-07-28) is served statelessly, and a
write's confirmation comes back as input_required with a requestState
the server sealed. --protocol 2025-11-25 or 2026-07-28 serves one era
only; the other is answered -32022 with the versions served.

Several --listen replicas behind one address finish each other's
confirmations when they share --confirm-key-file (or
PINNED_MCP_CONFIRM_KEY: 64 hex characters) and --redis-url, where each
confirmation's nonce is spent once. With a confirm key and no Redis, the
nonces are kept in a file under --state-dir (one process).

With --listen, a bearer token (--token-file or PINNED_MCP_TOKEN, never a
flag value) is required, on loopback too: every local user can reach it.
--oauth-resource URL adds OAuth 2.1 for hosted assistants: Protected
Resource Metadata, an authorization server (code + PKCE, client ID
metadata documents) whose consent page you approve with the bearer token,
and access tokens scoped mcp:read or mcp:write (step-up for writes).
--approval-links url lets a client that can show a link but not a form
(URL-mode elicitation) run writes: each write's consent is a page of
this server, /approve/<id>, that shows every value sent; you approve it
there with the bearer token, once, before it expires. --approval-links
always does so for every client. --approval-url sets the base URL your
browser uses (default the --oauth-resource origin, or the loopback
--listen address).
Token rotation of expiring OAuth pairs needs a broker: --broker-url with
--broker-token-file or PINNED_MCP_BROKER_TOKEN.

Examples:
  pinned mcp                                  # stdio, for the agent to start
  pinned mcp --fake                           # against the in-process provider fake
  pinned mcp --tools compact                  # one tool per service
  pinned mcp --allow-flow dnsimple:github     # reads of GitHub may carry DNSimple values
  PINNED_MCP_TOKEN=$(cat tok) pinned mcp --listen 127.0.0.1:8765
  PINNED_MCP_TOKEN=$(cat tok) PINNED_MCP_CONFIRM_KEY=$(cat confirm.key) \
    pinned mcp --listen 127.0.0.1:8765 --redis-url redis://127.0.0.1:6379
  PINNED_MCP_TOKEN=$(cat tok) pinned mcp --listen 127.0.0.1:8765 \
    --oauth-resource https://mcp.example.com/mcp      # behind a TLS proxy
  PINNED_MCP_TOKEN=$(cat tok) pinned mcp --listen 127.0.0.1:8765 --approval-links url

Exit status: 0 after the client closed stdin (or SIGINT/SIGTERM), 1 the
server failed, 2 bad usage or configuration (a --cache-dir others can
write).

Flags:
`

func runMCP(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	tools := fs.String("tools", mcpserver.ToolsFull, "tool mode: `full|compact` (full: one tool per op; compact: one tool per service)")
	listen := fs.String("listen", "", "serve streamable HTTP on this `host:port` instead of stdio")
	tokenFile := fs.String("token-file", "", "`file` holding the bearer token HTTP clients must send (or set PINNED_MCP_TOKEN)")
	useFake := fs.Bool("fake", false, "run every op against an in-process provider fake (tests and trials)")
	connectTo := fs.String("connect-to", "", "send every pinned host to a running pinned fakeapi at this `ip:port`; needs --cacert")
	caFile := fs.String("cacert", "", "PEM `file` of the CA to trust with --connect-to")
	brokerURL := fs.String("broker-url", "", "the broker's base `URL` for rotating expiring OAuth pairs; empty: never rotate")
	brokerTokenFile := fs.String("broker-token-file", "", "`file` holding the broker instance token (or set PINNED_MCP_BROKER_TOKEN)")
	maxResult := fs.Int("max-result-bytes", mcpserver.DefaultMaxResultBytes, "refuse a result whose projected data is over this many `bytes`")
	opTimeout := fs.Duration("op-timeout", host.DefaultTimeout, "deadline of one op")
	logLevel := fs.String("log-level", "info", "`level`: debug, info, warn or error")
	protocol := fs.String("protocol", mcpserver.ProtocolBoth, "protocol `era`: both, 2025-11-25 (initialize sessions only) or 2026-07-28 (per-request _meta only)")
	confirmKeyFile := fs.String("confirm-key-file", "", "`file` holding the 64-hex-character key sealing write confirmations, the same on every replica (or set PINNED_MCP_CONFIRM_KEY); empty: a fresh key each run")
	redisURL := fs.String("redis-url", os.Getenv("PINNED_MCP_REDIS_URL"), "`URL` of the Redis where replicas spend each confirmation once: redis://host:port[/db], rediss://... or unix:///path; no password in it [$PINNED_MCP_REDIS_URL]")
	redisPasswordFile := fs.String("redis-password-file", "", "`file` holding the Redis password (or set PINNED_MCP_REDIS_PASSWORD)")
	redisPrefix := fs.String("redis-prefix", "pinned:mcp:", "`prefix` of every Redis key; the replicas of one person share it")
	oauthURL := fs.String("oauth-resource", "", "the public https `URL` of this MCP endpoint: serve OAuth 2.1 for remote clients (Protected Resource Metadata and an authorization server on its origin) beside the bearer token; needs --listen")
	oauthSubject := fs.String("oauth-subject", "owner", "the `name` of the person OAuth access tokens are issued for (the sub claim)")
	oauthKeyFile := fs.String("oauth-key-file", "", "`file` holding the 64-hex-character Ed25519 seed signing access tokens, the same on every replica (or set PINNED_MCP_OAUTH_KEY); empty: a fresh key each run")
	oauthPrivate := fs.Bool("oauth-allow-private-clients", false, "fetch clients' metadata documents from loopback and private addresses too (tests and trials; the default refuses them: SSRF)")
	oauthCA := fs.String("oauth-client-cacert", "", "PEM `file` of CAs trusted, besides the system's, when fetching clients' metadata documents (a private CA)")
	approvalLinks := fs.String("approval-links", "off", "approval links for writes (MCP elicitation in URL mode; needs --listen): `mode` off, url (clients that show URLs but not forms) or always (every write, also for clients that show forms)")
	approvalURL := fs.String("approval-url", "", "the base `URL` at which the person's browser reaches this server's approval page (https, or http on loopback); default the --oauth-resource origin, else http://ADDR of a loopback --listen")
	stateDir := fs.String("state-dir", defaultStateDir(), "`directory` of the file where one process spends confirmations, with --confirm-key-file and no --redis-url")
	var auditFlags sidecarAuditFlags
	auditFlags.register(fs, &envDefaults{none: true}, func(name, help string) string {
		return strings.Replace(help, "default <state-dir>/audit when --state-dir is set; off: no trail", "off unless set: no trail", 1)
	})
	var allow []api.Flow
	fs.Func("allow-flow", "let values `FROM:TO` flow: a read of service TO may carry what service FROM returned in the session (repeatable; e.g. dnsimple:github)", func(v string) error {
		a, err := parseFlow(v)
		allow = append(allow, a)
		return err
	})
	if code, ok := parseFlags(fs, mcpUsage, args, stdout, stderr); !ok {
		return code
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "pinned mcp: "+format+"\n", a...)
		return 2
	}
	if *tools != mcpserver.ToolsFull && *tools != mcpserver.ToolsCompact {
		return usage("--tools must be full or compact, not %q", *tools)
	}
	lvl, err := zerolog.ParseLevel(*logLevel)
	if err != nil || *logLevel == "" {
		return usage("--log-level %q: want debug, info, warn or error", *logLevel)
	}
	if *maxResult <= 0 || *opTimeout <= 0 {
		return usage("--max-result-bytes and --op-timeout must be positive")
	}
	token, err := secretFromFileOrEnv("MCP bearer token", "--token-file", *tokenFile, "PINNED_MCP_TOKEN", minTokenLen)
	if err != nil {
		return usage("%s", err)
	}
	if *oauthURL != "" && *listen == "" {
		return usage("--oauth-resource is for --listen (stdio needs no authorization)")
	}
	if *listen != "" {
		loopback, err := isLoopback(*listen)
		if err != nil {
			return usage("%s", err)
		}
		// Loopback is no boundary between users: every local account and
		// process can reach 127.0.0.1, and an MCP client answers its own
		// confirmations. The token is what makes the port yours.
		switch {
		case !loopback && token == "":
			return usage("--listen %s is not a loopback address: set a bearer token (--token-file or PINNED_MCP_TOKEN) so only your agent can use your connections", *listen)
		case token == "":
			return usage("--listen %s needs a bearer token too: every user and process on this machine can reach a loopback port; set --token-file or PINNED_MCP_TOKEN so only your agent can use your connections", *listen)
		}
	} else if token != "" && *tokenFile != "" {
		return usage("--token-file is for --listen (stdio needs no token)")
	}
	switch {
	case *approvalLinks != "off" && *approvalLinks != "url" && *approvalLinks != "always":
		return usage("--approval-links %q: want off, url or always", *approvalLinks)
	case *approvalLinks != "off" && *listen == "":
		return usage("--approval-links is for --listen (the approval page is served on its address)")
	case *approvalURL != "" && *approvalLinks == "off":
		return usage("--approval-url is for --approval-links url or always")
	}
	switch *protocol {
	case mcpserver.ProtocolBoth, mcpserver.Revision20251125, mcpserver.Revision20260728:
	default:
		return usage("--protocol %q: want both, 2025-11-25 or 2026-07-28", *protocol)
	}
	confirmKey, nonces, shared, closeNonces, err := mcpConfirmState(*confirmKeyFile, *redisURL, *redisPasswordFile, *redisPrefix, *stateDir)
	if err != nil {
		return usage("%s", err)
	}
	defer closeNonces()
	refresher, err := mcpBroker(*brokerURL, *brokerTokenFile)
	if err != nil {
		return usage("%s", err)
	}
	override, stop, err := hostOverride("mcp", *useFake, *connectTo, *caFile)
	if err != nil {
		return usage("%s", err)
	}
	defer stop()

	log := zerolog.New(stderr).Level(lvl).With().Timestamp().Str("service_name", "pinned-mcp").Logger()
	store, err := openStore()
	if err != nil {
		fmt.Fprintf(stderr, "pinned mcp: %s\n", errText(err))
		return 1
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	// OmitTarget: the person's log holds no argument value (docs/MCP.md).
	eng, err := host.New(ctx, host.Config{Timeout: *opTimeout, CacheDir: defaultCacheDir(), Override: override, Logger: &log, OmitTarget: true})
	if err != nil {
		return engineFailed(stderr, "mcp", err)
	}
	defer eng.Close(context.Background())
	// The grants never leave this process: a fresh key each run.
	key, err := grant.GenerateKey(nil)
	if err != nil {
		fmt.Fprintf(stderr, "pinned mcp: %s\n", errText(err))
		return 1
	}
	scfg := sidecar.Config{Engine: eng, Key: key, Logger: &log, Version: binaryVersion()}
	// The audit trail, when asked for: one record per tool call that
	// reached the op path, as the sidecar writes per op (source "run").
	if auditFlags.dir != "" && auditFlags.dir != auditOff {
		auditCfg, err := auditFlags.resolve(*stateDir)
		if err != nil {
			return usage("%s", errText(err))
		}
		auditLog, err := auditCfg.open(auditFlags.keyFile == "", log)
		if err != nil {
			return usage("%s", err)
		}
		scfg.Audit = auditLog
		defer func() {
			if err := auditLog.Close(); err != nil {
				log.Error().Str("event", "audit_log").AnErr("cause", err).Msg("the audit log could not be sealed and closed")
			}
		}()
	}
	if refresher != nil {
		scfg.Refresher = refresher
	}
	side, err := sidecar.New(scfg)
	if err != nil {
		fmt.Fprintf(stderr, "pinned mcp: %s\n", errText(err))
		return 1
	}
	var ln net.Listener
	if *listen != "" {
		if ln, err = net.Listen("tcp", *listen); err != nil {
			fmt.Fprintf(stderr, "pinned mcp: %s\n", listenFailed(err))
			return 1
		}
		defer ln.Close()
	}
	mcfg := mcpserver.Config{Sidecar: side, Store: store, Tools: *tools, MaxResultBytes: *maxResult, Logger: &log,
		// serverInfo.version is what pinned version prints (the stamped one first).
		Version: binaryVersion(), AllowFlows: allow, Protocol: *protocol, ConfirmKey: confirmKey, Nonces: nonces}
	if *approvalLinks != "off" {
		base, err := approvalBase(*approvalURL, *oauthURL, ln.Addr())
		if err != nil {
			return usage("%s", err)
		}
		// The person approves with the bearer token, as on the OAuth
		// consent page; replicas on Redis share links and decisions.
		mcfg.ApprovalURL, mcfg.ApprovalSecret, mcfg.ApprovalOnly = base, token, *approvalLinks == "always"
		if shared != nil {
			mcfg.Approvals = shared
		}
	}
	srv, err := mcpserver.New(mcfg)
	if err != nil {
		fmt.Fprintf(stderr, "pinned mcp: %s\n", errText(err))
		return 1
	}
	conns, _ := store.List()
	log.Info().Str("event", "start").Int("connections", len(conns)).Str("tools", *tools).Bool("rotation", refresher != nil).
		Str("transport", map[bool]string{true: "streamable_http", false: "stdio"}[*listen != ""]).Msg("pinned mcp")
	if len(conns) == 0 {
		log.Warn().Str("event", "no_connections").Msg("no connections: the agent sees no tools; run pinned connect SERVICE")
	}

	if *listen == "" {
		// mcpserver's stdio transport answers a bad line (-32700,
		// -32600) and reads on, where the SDK's would end the session.
		err := srv.MCP().Run(ctx, &mcpserver.StdioTransport{In: os.Stdin, Out: os.Stdout, Logger: &log, Versions: srv.Versions()})
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, mcp.ErrConnectionClosed) && !errors.Is(err, io.EOF) {
			fmt.Fprintf(stderr, "pinned mcp: %s\n", err)
			return 1
		}
		return 0
	}
	var codes mcpauth.CodeStore // nil: this process's memory
	if shared != nil {
		codes = shared // a code issued by one replica is redeemed at another, once
	}
	handler, err := mcpHandler(srv, token, *oauthURL, *oauthSubject, *oauthKeyFile, *oauthCA, *oauthPrivate, codes)
	if err != nil {
		return usage("%s", err)
	}
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
	fmt.Fprintf(stderr, "pinned mcp: listening on http://%s/ (streamable HTTP)\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintf(stderr, "pinned mcp: %s\n", err)
		return 1
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = hs.Shutdown(sctx)
	return 0
}

// mcpHandler is the --listen handler: the static bearer token alone, or
// with resourceURL set, OAuth 2.1 besides it (package mcpauth): the
// authorization server's endpoints on the resource's origin, the
// Protected Resource Metadata, and access tokens bound to resourceURL
// and subject. The consent page's owner secret is the bearer token;
// codes holds the authorization codes (nil: this process's memory).
func mcpHandler(srv *mcpserver.Server, token, resourceURL, subject, keyFile, caFile string, private bool, codes mcpauth.CodeStore) (http.Handler, error) {
	if resourceURL == "" && caFile != "" {
		return nil, errors.New("--oauth-client-cacert is for --oauth-resource")
	}
	if resourceURL == "" {
		if keyFile != "" || os.Getenv("PINNED_MCP_OAUTH_KEY") != "" {
			return nil, errors.New("an OAuth key is set but --oauth-resource is empty: set both or neither")
		}
		return srv.Handler(token), nil
	}
	u, err := url.Parse(resourceURL)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopbackURLHost(u.Hostname()))) {
		return nil, fmt.Errorf("--oauth-resource %q must be an https URL without query or fragment (http only on loopback)", resourceURL)
	}
	if subject == "" {
		return nil, errors.New("--oauth-subject must not be empty")
	}
	seedHex, err := secretFromFileOrEnv("OAuth signing key", "--oauth-key-file", keyFile, "PINNED_MCP_OAUTH_KEY", 2*ed25519.SeedSize)
	if err != nil {
		return nil, err
	}
	var key ed25519.PrivateKey
	if seedHex == "" {
		_, key, _ = ed25519.GenerateKey(rand.Reader)
	} else {
		seed, err := hex.DecodeString(seedHex)
		if err != nil || len(seed) != ed25519.SeedSize {
			return nil, errors.New("the OAuth signing key must be 64 hex characters (openssl rand -hex 32)")
		}
		key = ed25519.NewKeyFromSeed(seed)
	}
	origin := u.Scheme + "://" + u.Host
	base := &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}, TLSHandshakeTimeout: 10 * time.Second}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--oauth-client-cacert: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--oauth-client-cacert %s holds no PEM certificate", caFile)
		}
		base.TLSClientConfig.RootCAs = pool
	}
	docs := &http.Client{Timeout: 10 * time.Second, Transport: mcpauth.PublicTransport(base)}
	if private {
		docs.Transport = base
	}
	as, err := mcpauth.New(mcpauth.Config{Issuer: origin, Resource: resourceURL, Subject: subject, Key: key, OwnerSecret: token, HTTPClient: docs, Codes: codes})
	if err != nil {
		return nil, err
	}
	v := &mcpauth.Verifier{Key: key.Public().(ed25519.PublicKey), Issuer: origin, Resource: resourceURL, Subject: subject, Leeway: 30 * time.Second}
	prmURL := origin + "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.EscapedPath(), "/")
	h := srv.HandlerAuth(mcpserver.Auth{Token: token, Verify: v.Verify, MetadataURL: prmURL,
		Metadata: &oauthex.ProtectedResourceMetadata{Resource: resourceURL, AuthorizationServers: []string{origin},
			ScopesSupported: []string{mcpserver.ScopeRead, mcpserver.ScopeWrite}, BearerMethodsSupported: []string{"header"}, ResourceName: "pinned mcp"}})
	mux := http.NewServeMux()
	ash := as.Handler()
	for _, p := range []string{"/.well-known/oauth-authorization-server", "/authorize", "/token", "/jwks"} {
		mux.Handle(p, ash)
	}
	mux.Handle("/", h)
	return mux, nil
}

// approvalBase is the approval page's base URL: set, the origin of the
// OAuth resource, or http://ADDR of a loopback listener.
func approvalBase(set, resource string, addr net.Addr) (string, error) {
	switch {
	case set != "":
		u, err := url.Parse(set)
		if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopbackURLHost(u.Hostname()))) {
			return "", fmt.Errorf("--approval-url %q must be an https URL without query or fragment (http only on loopback)", set)
		}
		return set, nil
	case resource != "":
		u, _ := url.Parse(resource) // checked by mcpHandler's rules below
		if u == nil || u.Host == "" {
			return "", errors.New("--oauth-resource is not a URL")
		}
		return u.Scheme + "://" + u.Host, nil
	}
	if loopback, _ := isLoopback(addr.String()); !loopback {
		return "", errors.New("--approval-links on a non-loopback --listen needs --approval-url: the https URL at which your browser reaches this server")
	}
	return "http://" + addr.String(), nil
}

// isLoopbackURLHost reports whether a URL's host name is loopback.
func isLoopbackURLHost(h string) bool {
	ip := net.ParseIP(h)
	return h == "localhost" || ip != nil && ip.IsLoopback()
}

// mcpConfirmState is the confirmation key and where its nonces are spent:
// no key file, a fresh key and memory (nil); a key and Redis (replicas);
// a key and no Redis, a file under stateDir (one process, durable: a
// restart inside a confirmation's life still refuses its replay). With
// Redis, shared is the same store: it also holds what replicas must
// share besides nonces (OAuth codes, approval decisions).
func mcpConfirmState(keyFile, redisURL, pwFile, prefix, stateDir string) (key []byte, nonces mcpserver.NonceStore, shared *state.Redis, closeFn func(), err error) {
	none := func() {}
	hexKey, err := secretFromFileOrEnv("confirm key", "--confirm-key-file", keyFile, "PINNED_MCP_CONFIRM_KEY", 2*mcpserver.ConfirmKeySize)
	if err != nil {
		return nil, nil, nil, none, err
	}
	pw, err := secretFromFileOrEnv("Redis password", "--redis-password-file", pwFile, "PINNED_MCP_REDIS_PASSWORD", 1)
	if err != nil {
		return nil, nil, nil, none, err
	}
	if hexKey == "" {
		if redisURL != "" || pw != "" {
			return nil, nil, nil, none, errors.New("--redis-url needs the confirm key shared by the replicas: --confirm-key-file or PINNED_MCP_CONFIRM_KEY (create one with: openssl rand -hex 32)")
		}
		return nil, nil, nil, none, nil
	}
	key, err = hex.DecodeString(hexKey)
	if err != nil || len(key) != mcpserver.ConfirmKeySize {
		return nil, nil, nil, none, fmt.Errorf("the confirm key must be %d hex characters (openssl rand -hex 32)", 2*mcpserver.ConfirmKeySize)
	}
	if redisURL == "" {
		if pw != "" {
			return nil, nil, nil, none, errors.New("a Redis password is set but --redis-url is empty")
		}
		if stateDir == "" {
			return nil, nil, nil, none, errors.New("--confirm-key-file without --redis-url keeps spent confirmations in a file: set --state-dir")
		}
		sum := sha256.Sum256(key)
		f, err := state.OpenFile(filepath.Join(stateDir, "mcp-"+hex.EncodeToString(sum[:6])+".db"), state.FileOptions{})
		if err != nil {
			return nil, nil, nil, none, fmt.Errorf("--state-dir: %w", err)
		}
		return key, f, nil, func() { _ = f.Close() }, nil
	}
	if prefix == "" {
		return nil, nil, nil, none, errors.New("--redis-prefix must not be empty")
	}
	// The store's own key (grace entries, unused here) is derived, so the
	// confirm key itself is used for one purpose only.
	stateKey := sha256.Sum256(append([]byte("pinned mcp redis state key\x00"), key...))
	rs, err := state.NewRedis(state.RedisOptions{URL: redisURL, Password: pw, StateKey: stateKey[:], Prefix: prefix})
	if err != nil {
		return nil, nil, nil, none, fmt.Errorf("--redis-url: %s", strings.TrimPrefix(err.Error(), "state: "))
	}
	return key, rs, rs, func() { _ = rs.Close() }, nil
}

// mcpBroker is the broker client for rotation, or nil without a broker.
func mcpBroker(u, tokenFile string) (*rotate.BrokerClient, error) {
	tok, err := secretFromFileOrEnv("broker instance token", "--broker-token-file", tokenFile, "PINNED_MCP_BROKER_TOKEN", broker.MinInstanceTokenLen)
	if err != nil {
		return nil, err
	}
	switch {
	case u == "" && tok == "":
		return nil, nil
	case u == "":
		return nil, errors.New("a broker instance token is set but --broker-url is empty: set both (token rotation) or neither")
	case tok == "":
		return nil, errors.New("--broker-url needs the broker instance token: --broker-token-file or PINNED_MCP_BROKER_TOKEN")
	}
	bc, err := rotate.NewBrokerClient(u, secret.Secret(tok), rotate.BrokerOptions{})
	if err != nil {
		return nil, fmt.Errorf("--broker-url: %w", err)
	}
	return bc, nil
}

// parseFlow reads a FROM:TO flag value: two different services of the
// registry.
func parseFlow(v string) (api.Flow, error) {
	from, to, ok := strings.Cut(v, ":")
	if !ok || from == "" || to == "" || strings.Contains(to, ":") {
		return api.Flow{}, fmt.Errorf("want FROM:TO, two service ids, e.g. dnsimple:github")
	}
	for _, id := range []string{from, to} {
		if !registry.Default().Has(id) {
			return api.Flow{}, fmt.Errorf("%s: %s", unknownWord("service", id, registry.Default().IDs()), "want a service of the registry")
		}
	}
	if from == to {
		return api.Flow{}, fmt.Errorf("%s:%s: a service's own values always flow back to it", from, to)
	}
	return api.Flow{From: from, To: to}, nil
}
