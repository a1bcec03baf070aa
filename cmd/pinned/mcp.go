package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/broker"
	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/rotate"
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

With --listen, a bearer token (--token-file or PINNED_MCP_TOKEN, never a
flag value) is required, on loopback too: every local user can reach it.
Token rotation of expiring OAuth pairs needs a broker: --broker-url with
--broker-token-file or PINNED_MCP_BROKER_TOKEN.

Examples:
  pinned mcp                                  # stdio, for the agent to start
  pinned mcp --fake                           # against the in-process provider fake
  pinned mcp --tools compact                  # one tool per service
  pinned mcp --allow-flow dnsimple:github     # reads of GitHub may carry DNSimple values
  PINNED_MCP_TOKEN=$(cat tok) pinned mcp --listen 127.0.0.1:8765

Exit status: 0 after the client closed stdin (or SIGINT/SIGTERM), 1 the
server failed, 2 bad usage.

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
		fmt.Fprintf(stderr, "pinned mcp: %s\n", errText(err))
		return 1
	}
	defer eng.Close(context.Background())
	// The grants never leave this process: a fresh key each run.
	key, err := grant.GenerateKey(nil)
	if err != nil {
		fmt.Fprintf(stderr, "pinned mcp: %s\n", errText(err))
		return 1
	}
	scfg := sidecar.Config{Engine: eng, Key: key, Logger: &log}
	if refresher != nil {
		scfg.Refresher = refresher
	}
	side, err := sidecar.New(scfg)
	if err != nil {
		fmt.Fprintf(stderr, "pinned mcp: %s\n", errText(err))
		return 1
	}
	// serverInfo.version is what pinned version prints (the stamped one first).
	srv, err := mcpserver.New(mcpserver.Config{Sidecar: side, Store: store, Tools: *tools, MaxResultBytes: *maxResult, Logger: &log,
		Version: readBuildInfo().Version, AllowFlows: allow})
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
		err := srv.MCP().Run(ctx, &mcpserver.StdioTransport{In: os.Stdin, Out: os.Stdout, Logger: &log})
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, mcp.ErrConnectionClosed) && !errors.Is(err, io.EOF) {
			fmt.Fprintf(stderr, "pinned mcp: %s\n", err)
			return 1
		}
		return 0
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "pinned mcp: %s\n", listenFailed(err))
		return 1
	}
	hs := &http.Server{Handler: srv.Handler(token), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
	fmt.Fprintf(stdout, "pinned mcp: listening on http://%s/ (streamable HTTP)\n", ln.Addr())
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
