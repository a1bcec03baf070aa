package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/demo/fakemodel"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/secret"
	"github.com/elevenmessenger/pinned/sidecar/api"
)

const demoUsage = `Usage: pinned demo [--full] | pinned demo --web [--listen ADDR]

Starts the local HTTPS provider fake in-process (nothing leaves this
machine), then runs, for each service of the registry, its viewer op and
a list op, plus one confirmed write, all through the WebAssembly sandbox. For
each op it prints the bytes the provider sent, the bytes the manifest's
pick let through, and the result.

Then one research session (POST /v1/research) asks "Which of my DNSimple
domains point at GitHub Pages?" under a GitHub and a DNSimple read grant,
answered by a SCRIPTED model (a program replaying tool calls against a
local fake of the Messages API, not a language model). Each tool call is
printed with its outcome. Two are failures on purpose: a repository
description carries a prompt injection, the model obeys it and calls
github.create_issue, and the call is refused access_denied (a research
session runs read ops only; nothing was sent); and one Pages domain is not
a DNSimple zone, so its list_zone_records answers upstream_error (the
provider's 404).

With --web it instead starts, in this one process and on loopback only,
the provider fake, the OAuth broker with the fake's OAuth apps, a bot
sidecar and pinned web, prints the catalog's URL and serves until Ctrl-C.
Paste the fake's tokens it prints, or use Connect with X in a browser that
reaches the fake through the printed proxy.

Exit status: 0 every op succeeded, 1 an op failed, 2 bad usage.

Flags:
`

// demoOp is one op the demo runs.
type demoOp struct {
	service, op, args string
}

// demoOps are the demo's ops: for every service of the embedded
// registry its viewer and its first list op, run with the example args
// of the fake's fixtures (less the cursor, so the first page comes
// back), then one confirmed write. They are built on first use: reading
// the registry and the fake's fixtures takes ~200 ms, which no other
// command should pay at start.
var demoOps = sync.OnceValue(func() []demoOp {
	var out []demoOp
	for _, m := range registry.Default().Services() {
		if m.Viewer != "" {
			out = append(out, demoOp{m.ID, m.Viewer, `{}`})
		}
		if name := listOp(m); name != "" {
			out = append(out, demoOp{m.ID, name, firstPage(m, name)})
		}
	}
	return append(out, demoOp{"github", "create_issue", `{"owner":"pinned-tester","repo":"notes","title":"Hello from pinned","body":"Opened by pinned demo through the sandbox."}`})
})

// listOp names a service's list op: its first read op that pages, or
// else its first read op named list_*, other than the viewer.
func listOp(m *registry.Manifest) string {
	var named string
	for _, name := range m.OpNames() {
		op := m.Ops[name]
		switch {
		case name == m.Viewer || op.Access != registry.AccessRead:
		case op.Paginate != nil:
			return name
		case named == "" && strings.HasPrefix(name, "list_"):
			named = name
		}
	}
	return named
}

// firstPage is an op's example args in the fake's fixtures, less its
// paginate arg.
func firstPage(m *registry.Manifest, name string) string {
	var args map[string]json.RawMessage
	if json.Unmarshal(fakeapi.Example(m.ID, name), &args) != nil || args == nil {
		return `{}`
	}
	if pg := m.Ops[name].Paginate; pg != nil {
		delete(args, pg.Arg)
	}
	b, _ := json.Marshal(args)
	return string(b)
}

func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	full := fs.Bool("full", false, "print every result in full instead of a preview")
	withWeb := fs.Bool("web", false, "serve the member's catalog and the GitHub app against the fakes (until Ctrl-C)")
	listen := fs.String("listen", "127.0.0.1:0", "with --web: pinned web's `address` (port 0: a free one; a fixed port keeps the catalog's origin, and what the browser saved there, across runs)")
	cacheDir := fs.String("cache-dir", defaultCacheDir(), "compiled-code cache `directory`, writable by you only (empty: compile in memory)")
	if code, ok := parseFlags(fs, demoUsage, args, stdout, stderr); !ok {
		return code
	}
	// --listen and --full belong to one mode each: a flag of the other is a
	// mistake, not something to ignore.
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["listen"] && !*withWeb {
		return flagError(stderr, "demo", "--listen is pinned web's address, for --web only (pinned demo --web --listen "+*listen+")")
	}
	if *full && *withWeb {
		return flagError(stderr, "demo", "--full prints the results of the ops run without --web; --web serves the catalog instead")
	}
	if *withWeb {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return runDemoWeb(ctx, *listen, stdout, stderr)
	}
	fake, err := fakeapi.New()
	if err != nil {
		fmt.Fprintf(stderr, "pinned demo: start the provider fake: %s\n", errText(err))
		return 1
	}
	defer fake.Close()

	ctx := context.Background()
	start := time.Now()
	eng, err := host.New(ctx, host.Config{
		Override: &host.Override{Addr: fake.Addr(), CAPEM: fake.CACertPEM()},
		CacheDir: *cacheDir,
	})
	if err != nil {
		return engineFailed(stderr, "demo", err)
	}
	defer eng.Close(ctx)

	fmt.Fprintf(stdout, "pinned demo: provider fake on %s (a local HTTPS server with a generated CA; "+
		"each pinned host is mapped to it). Sandbox ready in %s.\n\n", fake.Addr(), time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(stdout, "%-14s %-20s %-6s %12s %12s %9s\n", "SERVICE", "OP", "STATUS", "RAW BYTES", "PROJECTED", "TIME")
	failed := 0
	for _, d := range demoOps() {
		res, err := eng.Run(ctx, host.Call{
			Service: d.service, Op: d.op, Args: json.RawMessage(d.args),
			Credential: host.Credential{Kind: "pat", Secret: secret.Secret(fakeapi.Token(d.service)), User: secret.Secret(fakeapi.User(d.service)), Tenant: fakeapi.Tenant(d.service)},
		})
		if err != nil {
			failed++
			var he *host.Error
			if errors.As(err, &he) {
				fmt.Fprintf(stdout, "%-14s %-20s FAILED %s: %s\n", d.service, d.op, he.Code, he.Message)
			} else {
				fmt.Fprintf(stdout, "%-14s %-20s FAILED %s\n", d.service, d.op, errText(err))
			}
			continue
		}
		fmt.Fprintf(stdout, "%-14s %-20s %-6d %12d %12d %9s\n", d.service, d.op, res.Status, res.RawBytes, len(res.Data), res.Duration.Round(100*time.Microsecond))
		fmt.Fprintf(stdout, "               args %s\n               %s\n", d.args, preview(res.Data, *full))
	}
	fmt.Fprintln(stdout)
	if failed > 0 {
		fmt.Fprintf(stdout, "%d of %d ops failed.\n", failed, len(demoOps()))
		return 1
	}
	fmt.Fprintf(stdout, "All %d ops ran %s; every result holds only the fields its manifest's pick names.\n", len(demoOps()), isolationPhrase(eng.Strategy()))
	if code := demoResearch(ctx, eng, stdout, stderr); code != 0 {
		return code
	}
	fmt.Fprintln(stdout, "Try one yourself:  "+invokedAs()+" op --fake --service github --op list_issues --args '{\"owner\":\"pinned-tester\",\"repo\":\"notes\"}' --pretty")
	return 0
}

// demoResearch runs the demo's research session: the Pages question under
// a GitHub and a DNSimple read grant, answered by the scripted model
// (fakemodel.Pages), each tool call printed as it is answered.
func demoResearch(ctx context.Context, eng *host.Engine, stdout, stderr io.Writer) int {
	const q = "Which of my DNSimple domains point at GitHub Pages?"
	fm, model, err := scriptedModel(fakemodel.Pages())
	if err != nil {
		fmt.Fprintf(stderr, "pinned demo: %s\n", errText(err))
		return 1
	}
	defer fm.Close()
	fmt.Fprintf(stdout, "\nResearch (SCRIPTED MODEL: a program replaying tool calls, not a language model): %q\n", q)
	tokens := map[string]string{"github": fakeapi.Token("github"), "dnsimple": fakeapi.Token("dnsimple")}
	ans, e, err := researchSession(ctx, eng, model, q, tokens, api.Limits{},
		func(st api.Step) { printStep(stdout, st, true) })
	switch {
	case err != nil:
		fmt.Fprintf(stdout, "research FAILED %s\n", errText(err))
		return 1
	case e != nil:
		fmt.Fprintf(stdout, "research FAILED %s: %s\n", e.Code, e.Message)
		return 1
	}
	fmt.Fprintf(stdout, "answer (%s, %d turns, %d result bytes reached the model, no credential did):\n  %s\n", ans.Stop, ans.Turns, ans.ResultBytes, termSafe(ans.Answer, true))
	return 0
}

// isolationPhrase says where the ops ran, from the engine's isolation
// strategy (host.Engine.Strategy): "reset", "fresh" or "fresh (<why reset
// was not possible>)".
func isolationPhrase(strategy string) string {
	if strategy == host.IsolationReset {
		return "in pooled sandbox instances, each restored byte for byte to its post-initialization state before the op (isolation strategy: reset)"
	}
	return "in a fresh sandbox instance each (isolation strategy: " + strategy + ")"
}

// preview shortens a result for the terminal.
func preview(data []byte, full bool) string {
	s := string(data)
	const max = 240
	if full || len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d more bytes; --full shows all)", len(s)-cut)
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// defaultCacheDir is where the CLI keeps wazero's compilation cache:
// $XDG_CACHE_HOME/pinned/wazero (or ~/.cache/pinned/wazero). Empty when no
// cache directory is known; compilation then happens in memory.
func defaultCacheDir() string {
	dir, err := userCacheDir()
	if err != nil || dir == "" {
		return ""
	}
	return strings.TrimRight(dir, "/") + "/pinned/wazero"
}

var userCacheDir = os.UserCacheDir
