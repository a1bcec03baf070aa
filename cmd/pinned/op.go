package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"time"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/fakeapi"
	"github.com/elevenmessenger/pinned/registry"
)

const opUsage = `Usage: pinned op --service S --op O [--args JSON] [flags]

Runs one op of the embedded registry through the sandbox and prints the
projected result as JSON on stdout.

The credential is read from the environment variable named by --token-env
(default PINNED_TOKEN); it is never accepted on the command line, where it
would land in shell history and process listings.

Examples:
  PINNED_TOKEN=ghp_... pinned op --service github --op list_repos --args '{"per_page":100}'
  pinned op --fake --service github --op list_repos --args '{"per_page":100}' -v
  pinned op --connect-to 127.0.0.1:8443 --cacert ca.pem --service stripe --op list_customers
  pinned op --fake --service stripe --op list_customers --args '{"limit":100}' --pages 3

An op that pages (its manifest declares paginate) prints, on stderr, the
args of the next page ("next: {...}": pass them as --args to go on) and,
when paging stopped for a reason, "stopped: <reason>: <why>". --pages N
follows next in the host, up to N pages (at most the op's max_pages),
and prints the items of all of them as one list.

Exit status: 0 success, 1 the op failed (the error code and message are
printed on stderr: unknown_service, unknown_op, bad_args, upstream_error,
...), 2 bad usage (an unknown flag, a missing or malformed flag value).

Flags:
`

func runOp(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("op", flag.ContinueOnError)
	service := fs.String("service", "", "`id` of the service, e.g. github (see pinned registry list)")
	opName := fs.String("op", "", "`name` of the op, e.g. list_repos (see pinned registry list)")
	argsJSON := fs.String("args", "{}", "op arguments as a `JSON` object")
	tokenEnv := fs.String("token-env", "PINNED_TOKEN", "environment `variable` holding the credential")
	kind := fs.String("kind", "pat", "credential kind: `pat|oauth` (pat: a pasted token, sent as the manifest's scheme says; oauth: always Bearer)")
	useFake := fs.Bool("fake", false, "run against an in-process provider fake (uses its token when the env var is unset)")
	connectTo := fs.String("connect-to", "", "send every pinned host to this `ip:port` (a running pinned fakeapi); needs --cacert")
	caFile := fs.String("cacert", "", "PEM `file` of an extra CA to trust with --connect-to")
	timeout := fs.Duration("timeout", host.DefaultTimeout, "deadline for the whole op")
	verbose := fs.Bool("v", false, "print the status and the raw and projected sizes on stderr")
	pretty := fs.Bool("pretty", false, "indent the JSON output")
	pages := fs.Int("pages", 0, "follow next in the host for up to `N` pages (1 to the op's max_pages) and print all their items; 0 reads one page")
	if code, ok := parseFlags(fs, opUsage, args, stdout, stderr); !ok {
		return code
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "pinned op: "+format+"\n", a...)
		return 2
	}
	if *service == "" || *opName == "" {
		return usage("--service and --op are required (see pinned registry list)")
	}
	if !json.Valid([]byte(*argsJSON)) {
		return usage("--args is not valid JSON: %s", *argsJSON)
	}
	if !isJSONObject(*argsJSON) {
		return usage("--args must be a JSON object, e.g. '{\"per_page\":100}', not %s", *argsJSON)
	}
	if *pages < 0 {
		return usage("--pages must be 1 or more (0, the default, reads one page), not %d", *pages)
	}
	if *kind != "pat" && *kind != "oauth" {
		return usage("--kind must be pat or oauth, not %q", *kind)
	}
	if *useFake && *connectTo != "" {
		return usage("--fake and --connect-to exclude each other")
	}
	if *connectTo != "" {
		if _, err := netip.ParseAddrPort(*connectTo); err != nil {
			return usage("--connect-to %q: want ip:port, the address pinned fakeapi printed (e.g. 127.0.0.1:8443)", *connectTo)
		}
		if *caFile == "" {
			return usage("--connect-to needs --cacert (the CA file pinned fakeapi --ca-out wrote)")
		}
	} else if *caFile != "" {
		return usage("--cacert needs --connect-to (it is the CA of the pinned fakeapi --connect-to names; --fake and real providers need none)")
	}
	if m, ok := registry.Default().Service(*service); !ok {
		var ids []string
		for _, s := range registry.Default().Services() {
			ids = append(ids, s.ID)
		}
		fmt.Fprintf(stderr, "pinned op: unknown_service: unknown service %q (services: %s)\n", *service, joinList(ids))
		return 1
	} else if _, ok := m.Op(*opName); !ok {
		fmt.Fprintf(stderr, "pinned op: unknown_op: service %s has no op %q (ops: %s)\n", *service, *opName, joinList(m.OpNames()))
		return 1
	}

	cfg := host.Config{Timeout: *timeout, CacheDir: defaultCacheDir()}
	secret := os.Getenv(*tokenEnv)
	fromEnv := secret != ""
	switch {
	case *useFake:
		fake, err := fakeapi.New()
		if err != nil {
			fmt.Fprintf(stderr, "pinned op: start the provider fake: %s\n", errText(err))
			return 1
		}
		defer fake.Close()
		cfg.Override = &host.Override{Addr: fake.Addr(), CAPEM: fake.CACertPEM()}
		if secret == "" {
			secret = fakeapi.Token(*service)
			if *kind == "oauth" {
				secret = fakeapi.OAuthToken(*service)
			}
		}
	case *connectTo != "":
		pem, err := os.ReadFile(*caFile)
		if err != nil {
			return usage("--cacert: %v", err)
		}
		cfg.Override = &host.Override{Addr: *connectTo, CAPEM: pem}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return usage("--cacert %s: no PEM certificate in it (pinned fakeapi --ca-out writes one)", *caFile)
		}
	}
	if secret == "" {
		return usage("no credential: set %s (or use --fake)", *tokenEnv)
	}

	ctx := context.Background()
	eng, err := host.New(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "pinned op: %s\n", errText(err))
		return 1
	}
	defer eng.Close(ctx)
	res, err := eng.Run(ctx, host.Call{
		Service: *service, Op: *opName, Args: json.RawMessage(*argsJSON),
		Credential: host.Credential{Kind: *kind, Secret: host.Secret(secret)},
		Pages:      *pages,
	})
	if err != nil {
		var he *host.Error
		if errors.As(err, &he) {
			fmt.Fprintf(stderr, "pinned op: %s: %s", he.Code, he.Message)
			if he.Status != 0 {
				fmt.Fprintf(stderr, " (HTTP %d)", he.Status)
			}
			if he.RetryAfter != 0 {
				fmt.Fprintf(stderr, " (retry after %ds)", he.RetryAfter)
			}
			fmt.Fprintln(stderr)
			// The cause is for the operator at this terminal only (a sidecar
			// logs it and never sends it); it names no credential.
			if *verbose && he.Cause() != nil {
				fmt.Fprintf(stderr, "pinned op: cause: %s\n", he.Cause())
			}
			if he.Status == http.StatusUnauthorized && *useFake && fromEnv {
				fmt.Fprintf(stderr, "pinned op: the credential came from %s; unset it to use the fake's own token\n", *tokenEnv)
			}
			return 1
		}
		fmt.Fprintf(stderr, "pinned op: %s\n", errText(err))
		return 1
	}
	if *verbose {
		fmt.Fprintf(stderr, "status %d, %d bytes raw from upstream, %d bytes projected, %s\n",
			res.Status, res.RawBytes, len(res.Data), res.Duration.Round(time.Millisecond))
	}
	if res.Pages > 0 {
		fmt.Fprintf(stderr, "pages: %d\n", res.Pages)
	}
	if res.Next != nil {
		fmt.Fprintf(stderr, "next: %s\n", res.Next)
	}
	if res.Stopped != "" {
		fmt.Fprintf(stderr, "stopped: %s: %s\n", res.Stopped, res.StopMessage)
	}
	out := []byte(res.Data)
	if *pretty {
		var b bytes.Buffer
		if json.Indent(&b, out, "", "  ") == nil {
			out = b.Bytes()
		}
	}
	fmt.Fprintf(stdout, "%s\n", out)
	return 0
}
