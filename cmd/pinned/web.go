package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/elevenmessenger/pinned/secret"

	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/web"
)

const webUsage = `Usage: pinned web --bot NAME=URL [--bot-token-file NAME=FILE] [flags]

Serves the member's side: the integrations catalog (connect a service with
a scoped token or OAuth, choose read-only or read & write) and the GitHub
companion app, at http://<listen>/. Credentials stay in the member's
browser, sealed to the member's own key; pinned web relays sealed grants to
the bots' sidecars and adds each sidecar's caller token. docs/WEB.md.

Example, with a sidecar on 127.0.0.1:8080 and a broker on 127.0.0.1:8081:

  pinned web --bot eleven=http://127.0.0.1:8080 --bot-token-file eleven=caller.token \
             --broker-url http://127.0.0.1:8081

The broker must list pinned web's origin in --allow-return. To try it all
against the local fakes in one process: pinned demo --web.

Exit status: 0 after a clean shutdown (SIGINT or SIGTERM), 1 pinned web
could not listen or serve, 2 bad usage or configuration.

Flags:
`

// pairFlag collects repeated NAME=VALUE flags.
type pairFlag struct {
	what  string
	pairs [][2]string
}

func (p *pairFlag) String() string { return "" }

func (p *pairFlag) Set(v string) error {
	name, val, ok := strings.Cut(v, "=")
	if !ok || name == "" || val == "" {
		return fmt.Errorf("want NAME=%s, got %q", p.what, v)
	}
	for _, q := range p.pairs {
		if q[0] == name {
			return fmt.Errorf("%s is given twice", name)
		}
	}
	p.pairs = append(p.pairs, [2]string{name, val})
	return nil
}

func runWeb(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runWebContext(ctx, args, stdout, stderr)
}

func runWebContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("web", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8090", "`address` to listen on (host:port)")
	bots := &pairFlag{what: "URL"}
	fs.Var(bots, "bot", "a bot sidecar, `NAME=URL` (repeat for several; the first is the default)")
	tokens := &pairFlag{what: "FILE"}
	fs.Var(tokens, "bot-token-file", "`NAME=FILE`: the file holding that bot's sidecar caller token (mode 0600)")
	brokerURL := fs.String("broker-url", "", "the broker's public base `URL`, for Connect with OAuth; empty: paste-a-token only")
	var hosts []string
	fs.Func("public-host", "a `NAME` this server answers to behind a reverse proxy on the same machine (repeat); other non-loopback Hosts on loopback are refused (DNS rebinding)", func(v string) error {
		if v == "" || strings.ContainsAny(v, ":/ ") {
			return fmt.Errorf("want a host name without port or scheme, got %q", v)
		}
		hosts = append(hosts, v)
		return nil
	})
	logLevel := fs.String("log-level", "info", "log `level`: debug, info, warn or error")
	logFormat := fs.String("log-format", "json", "log `format`: json or console")
	if code, ok := parseFlags(fs, webUsage, args, stdout, stderr); !ok {
		return code
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "pinned web: "+format+"\nrun 'pinned web --help' for usage\n", a...)
		return 2
	}
	if len(bots.pairs) == 0 {
		return usage("--bot NAME=URL is required (the sidecar ops are relayed to)")
	}
	level, err := zerolog.ParseLevel(*logLevel)
	if err != nil || *logLevel == "" {
		return usage("--log-level %q: use debug, info, warn or error", *logLevel)
	}
	var out io.Writer = stderr
	switch *logFormat {
	case "json":
	case "console":
		out = zerolog.ConsoleWriter{Out: stderr, NoColor: true}
	default:
		return usage("--log-format %q: use json or console", *logFormat)
	}
	cfg := web.Config{BrokerURL: *brokerURL, Hosts: hosts}
	for _, b := range bots.pairs {
		cfg.Bots = append(cfg.Bots, web.Bot{Name: b[0], URL: b[1]})
	}
	for _, t := range tokens.pairs {
		i := -1
		for j, b := range cfg.Bots {
			if b.Name == t[0] {
				i = j
			}
		}
		if i < 0 {
			return usage("--bot-token-file %s: no --bot of that name", t[0])
		}
		tok, err := secretFromFileOrEnv("caller token", "--bot-token-file", t[1], "", minTokenLen)
		if err != nil {
			return usage("%s", errText(err))
		}
		cfg.Bots[i].Token = secret.Secret(tok)
	}
	log := zerolog.New(out).Level(level).With().Timestamp().Str("component", "web").Logger()
	cfg.Logger = &log
	srv, err := web.New(cfg)
	if err != nil {
		return usage("%s", strings.TrimPrefix(errText(err), "web: "))
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "pinned web: %s\n", listenFailed(err))
		return 1
	}
	defer ln.Close()
	fmt.Fprintf(stderr, "pinned web: the catalog is at http://%s/\n", ln.Addr())
	if err := srv.Serve(ctx, ln); err != nil && !errors.Is(err, net.ErrClosed) {
		fmt.Fprintf(stderr, "pinned web: %s\n", errText(err))
		return 1
	}
	return 0
}
