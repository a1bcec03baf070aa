package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
)

const fakeAPIUsage = `Usage: pinned fakeapi [--listen 127.0.0.1:0] [--ca-out FILE] [--addr-file FILE]

Serves the local HTTPS fake of the providers (GitHub, DNSimple, Stripe,
HubSpot, Linear) until interrupted (SIGINT or SIGTERM). It is for tests and
trials only: the data is generated, the credentials are fixed fake values,
and it listens on a loopback address only.

A fresh certificate authority is generated in memory at every start; its
certificate names every provider host. Pass --ca-out to write the CA
certificate (PEM) for curl --cacert or pinned op --cacert. Requests are
routed by their Host, so map each provider host to the fake's address:

  curl --cacert ca.pem --resolve api.github.com:PORT:127.0.0.1 \
       -H "Authorization: Bearer <github token>" https://api.github.com:PORT/user
  PINNED_TOKEN=<token> pinned op --connect-to 127.0.0.1:PORT --cacert ca.pem \
       --service github --op list_repos

The fake tokens and ready-to-run curl lines are printed at start.

Exit status: 0 after SIGINT or SIGTERM, 1 the fake failed, 2 bad usage.

Flags:
`

// runFakeAPI implements `pinned fakeapi`: it serves the provider fake until
// SIGINT or SIGTERM.
func runFakeAPI(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runFakeAPIContext(ctx, args, stdout, stderr)
}

// runFakeAPIContext serves the fake until ctx is done (tests cancel ctx
// instead of sending a signal).
func runFakeAPIContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fakeapi", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "loopback `address` to listen on: 127.0.0.1, [::1] or localhost (127.0.0.1), with a port; port 0 picks a free one")
	caOut := fs.String("ca-out", "", "write the generated CA certificate (PEM) to this `file`")
	addrFile := fs.String("addr-file", "", addrFileHelp)
	if code, ok := parseFlags(fs, fakeAPIUsage, args, stdout, stderr); !ok {
		return code
	}
	addr := fakeListenAddr(*listen)
	if _, _, err := net.SplitHostPort(addr); err != nil {
		// "30444" or "localhost": the address is incomplete, which is not
		// the same as off loopback.
		if _, nerr := strconv.ParseUint(*listen, 10, 16); nerr == nil {
			fmt.Fprintf(stderr, "pinned fakeapi: --listen %s: a port alone is not an address: use 127.0.0.1:%s\n", *listen, *listen)
		} else {
			fmt.Fprintf(stderr, "pinned fakeapi: --listen %s: want host:port on loopback, e.g. 127.0.0.1:8443 (port 0 picks a free one)\n", *listen)
		}
		return 2
	}
	if err := fakeapi.CheckLoopback(addr); err != nil {
		fmt.Fprintf(stderr, "pinned fakeapi: refusing --listen %s: the fake serves fixed credentials and listens on loopback only (e.g. 127.0.0.1:8443 or localhost:8443)\n", *listen)
		return 2
	}
	srv, err := fakeapi.New(fakeapi.WithListen(addr))
	if err != nil {
		fmt.Fprintf(stderr, "pinned fakeapi: %s\n", listenFailed(err))
		return 1
	}
	defer srv.Close()

	caName := "ca.pem"
	if *caOut != "" {
		if err := os.WriteFile(*caOut, srv.CACertPEM(), 0o644); err != nil {
			fmt.Fprintf(stderr, "pinned fakeapi: write the CA certificate: %s\n", errText(err))
			return 1
		}
		caName = *caOut
	}
	printFakeAPIBanner(stdout, srv, caName, *caOut != "")
	// Last: once the file exists, the CA file is complete too.
	removeAddr, err := writeAddrFile(*addrFile, srv.Addr())
	if err != nil {
		fmt.Fprintf(stderr, "pinned fakeapi: %s\n", errText(err))
		return 1
	}
	defer removeAddr()

	<-ctx.Done()
	fmt.Fprintln(stdout, "pinned fakeapi: stopping")
	return 0
}

// fakeListenAddr maps "localhost:PORT" to "127.0.0.1:PORT", as the
// sidecar accepts localhost too; the fake binds IP literals only, so the
// address it prints is the one to pass to --connect-to. Every other
// address is returned unchanged.
func fakeListenAddr(listen string) string {
	h, port, err := net.SplitHostPort(listen)
	if err != nil || !strings.EqualFold(h, "localhost") {
		return listen
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// printFakeAPIBanner tells the user where the fake is, which tokens it
// accepts and how to call it.
func printFakeAPIBanner(w io.Writer, srv *fakeapi.Server, caName string, caWritten bool) {
	addr, port := srv.Addr(), srv.Port()
	ip, _, _ := net.SplitHostPort(addr)
	if strings.Contains(ip, ":") {
		ip = "[" + ip + "]" // curl --resolve wants IPv6 in brackets
	}
	fmt.Fprintf(w, "pinned fakeapi: serving the provider fake on %s (HTTPS, tests and trials only)\n", addr)
	if caWritten {
		fmt.Fprintf(w, "CA certificate written to %s\n", caName)
	} else {
		fmt.Fprintln(w, "CA certificate not written; restart with --ca-out ca.pem to use the curl lines below")
	}
	fmt.Fprintln(w, "\nFake tokens (PINNED_TOKEN=<token>; pinned sends each as its provider expects):")
	fmt.Fprintf(w, "  %-9s %-43s %s\n", "SERVICE", "TOKEN", "OAUTH ACCESS TOKEN")
	for _, svc := range fakeapi.Services() {
		fmt.Fprintf(w, "  %-9s %-43s %s\n", svc, fakeapi.Token(svc), fakeapi.OAuthToken(svc))
	}
	fmt.Fprintln(w, "\nTry:")
	for _, svc := range fakeapi.Services() {
		h := fakeapi.Host(svc)
		base := fmt.Sprintf("curl --cacert %s --resolve %s:%d:%s", caName, h, port, ip)
		switch svc {
		case fakeapi.GitHub:
			fmt.Fprintf(w, "  %s -H \"Authorization: Bearer %s\" https://%s:%d/user\n", base, fakeapi.Token(svc), h, port)
		case fakeapi.DNSimple:
			fmt.Fprintf(w, "  %s -H \"Authorization: Bearer %s\" https://%s:%d/v2/whoami\n", base, fakeapi.Token(svc), h, port)
		case fakeapi.Stripe:
			fmt.Fprintf(w, "  %s -H \"Authorization: Bearer %s\" 'https://%s:%d/v1/customers?limit=3'\n", base, fakeapi.Token(svc), h, port)
		case fakeapi.HubSpot:
			fmt.Fprintf(w, "  %s -H \"Authorization: Bearer %s\" 'https://%s:%d/crm/v3/objects/contacts?limit=3'\n", base, fakeapi.Token(svc), h, port)
		case fakeapi.Linear:
			fmt.Fprintf(w, "  %s -H \"Authorization: %s\" -H 'Content-Type: application/json' -d '{\"query\":\"query { viewer { id name email } }\"}' https://%s:%d/graphql\n", base, fakeapi.Token(svc), h, port)
		}
	}
	fmt.Fprintf(w, "\nRun ops through the sandbox against it:\n  PINNED_TOKEN=%s %s op --connect-to %s --cacert %s --service github --op list_repos\n", fakeapi.Token(fakeapi.GitHub), invokedAs(), addr, caName)
	fmt.Fprintln(w, "\nPress Ctrl-C to stop.")
}
