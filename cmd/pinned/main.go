// Command pinned runs third-party API operations for bots inside a
// WebAssembly sandbox. One binary, one subcommand per role:
//
//	pinned op        run one op through the sandbox
//	pinned sidecar   serve the bot-facing API (grants, scope, ops)
//	pinned keygen    generate a bot's key pair
//	pinned grant     seal a grant to a bot's public key, open a rotated pair
//	pinned demo      run ops of every service and a scripted research session against local fakes (--web: the catalog too)
//	pinned research  answer a question by reading services (a bounded model tool loop)
//	pinned broker    run the OAuth relay members connect their accounts through
//	pinned web       serve the member's catalog and companion apps
//	pinned registry  check, list or show manifests
//	pinned fakeapi   serve the local HTTPS provider fake
//	pinned connect   connect a service for your own agent
//	pinned connections  list or remove your connections
//	pinned mcp       serve your connections to your agent over MCP
//	pinned audit     verify the sidecar's audit trail, make a sealing key
//	pinned version   print the version and the embedded registry and guest module digests
//	pinned healthcheck  exit 0 when a local sidecar is ready
//	pinned completion  print a shell completion script
//
// Run "pinned <command> --help" for each command's flags. The binary is
// the top layer: it may import every package of the module
// (docs/ARCHITECTURE.md).
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"op", "run one op through the sandbox", runOp},
		{"sidecar", "serve the bot-facing API: open grants, enforce scope, run ops", runSidecar},
		{"keygen", "generate a bot's key pair (private key file, public key on stdout)", runKeygen},
		{"grant", "seal a grant to a bot's public key (grant seal), open a rotated pair (grant open)", runGrant},
		{"demo", "run ops of every service and a scripted research session against local fakes", runDemo},
		{"research", "answer a question by reading services: a bounded model tool loop", runResearch},
		{"broker", "run the OAuth relay (code exchange, token refresh, GET /registry)", runBroker},
		{"web", "serve the member's catalog and the GitHub app (relays sealed grants to bots)", runWeb},
		{"registry", "check, list or show manifests (registry check|list|show)", runRegistry},
		{"fakeapi", "serve the local HTTPS provider fake (tests and trials only)", runFakeAPI},
		{"connect", "connect a service for your own agent (token verified, sealed locally)", runConnect},
		{"connections", "list your connections (connections remove SERVICE deletes one)", runConnections},
		{"mcp", "serve your connections to your agent over MCP (stdio or --listen)", runMCP},
		{"audit", "verify the sidecar's audit trail (audit verify DIR --pubkey KEY), make a sealing key (audit keygen)", runAudit},
		{"version", "print the version and the embedded registry and guest module digests", runVersion},
		{"healthcheck", "exit 0 when a local sidecar is ready (a container HEALTHCHECK)", runHealthcheck},
		{"completion", "print a shell completion script (completion bash|zsh)", runCompletion},
	}
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return 0
	case "--version", "-version":
		return runVersion(args[1:], stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	if strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "pinned: %s\nrun 'pinned --help' for usage\n", undefinedFlag(args[0]))
		return 2
	}
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	fmt.Fprintf(stderr, "pinned: %s\nrun 'pinned --help' for usage\n", unknownWord("command", args[0], names))
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "pinned runs third-party API operations for bots inside a WebAssembly sandbox.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: pinned <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	width := 0
	for _, c := range commands() {
		width = max(width, len(c.name))
	}
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "pinned <command> --help" for a command's flags.`)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Exit status (every command):")
	fmt.Fprintln(w, "  0  success (and --help)")
	fmt.Fprintln(w, "  1  the command failed: an op answered an error code (unknown_op, bad_args,")
	fmt.Fprintln(w, "     upstream_error, ...), a manifest was refused, a server could not serve")
	fmt.Fprintln(w, "  2  bad usage: an unknown command or flag, a missing or malformed flag")
	fmt.Fprintln(w, "     value, a stray argument; nothing was run")
}
