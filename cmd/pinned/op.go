package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
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

Exit status: 0 success, 1 the op failed (the error code and message are
printed on stderr), 2 bad usage.

Flags:
`

func runOp(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("op", flag.ContinueOnError)
	fs.SetOutput(stderr)
	service := fs.String("service", "", "service id, e.g. github (see pinned registry list)")
	opName := fs.String("op", "", "op name, e.g. list_repos")
	argsJSON := fs.String("args", "{}", "op arguments as a JSON object")
	tokenEnv := fs.String("token-env", "PINNED_TOKEN", "environment variable holding the credential")
	kind := fs.String("kind", "pat", "credential kind: pat (pasted token, the manifest's scheme) or oauth (always Bearer)")
	useFake := fs.Bool("fake", false, "run against an in-process provider fake (uses its token when the env var is unset)")
	connectTo := fs.String("connect-to", "", "send every pinned host to this ip:port (a running `pinned fakeapi`); needs --cacert")
	caFile := fs.String("cacert", "", "PEM file of an extra CA to trust with --connect-to")
	timeout := fs.Duration("timeout", host.DefaultTimeout, "deadline for the whole op")
	verbose := fs.Bool("v", false, "print the status and the raw and projected sizes on stderr")
	pretty := fs.Bool("pretty", false, "indent the JSON output")
	fs.Usage = func() {
		fmt.Fprint(stderr, opUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pinned op: unexpected argument %q (flags only; see --help)\n", fs.Arg(0))
		return 2
	}
	if *service == "" || *opName == "" {
		fmt.Fprintln(stderr, "pinned op: --service and --op are required (see pinned registry list)")
		return 2
	}
	if !json.Valid([]byte(*argsJSON)) {
		fmt.Fprintf(stderr, "pinned op: --args is not valid JSON: %s\n", *argsJSON)
		return 2
	}
	if m, ok := registry.Default().Service(*service); !ok {
		var ids []string
		for _, s := range registry.Default().Services() {
			ids = append(ids, s.ID)
		}
		fmt.Fprintf(stderr, "pinned op: unknown_service: unknown service %q (services: %s)\n", *service, strings.Join(ids, ", "))
		return 1
	} else if _, ok := m.Op(*opName); !ok {
		fmt.Fprintf(stderr, "pinned op: unknown_op: service %s has no op %q (ops: %s)\n", *service, *opName, strings.Join(m.OpNames(), ", "))
		return 1
	}
	if *useFake && *connectTo != "" {
		fmt.Fprintln(stderr, "pinned op: --fake and --connect-to exclude each other")
		return 2
	}

	cfg := host.Config{Timeout: *timeout, CacheDir: defaultCacheDir()}
	secret := os.Getenv(*tokenEnv)
	switch {
	case *useFake:
		fake, err := fakeapi.New()
		if err != nil {
			fmt.Fprintf(stderr, "pinned op: start the provider fake: %v\n", err)
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
		if *caFile == "" {
			fmt.Fprintln(stderr, "pinned op: --connect-to needs --cacert (the CA `pinned fakeapi --ca-out` wrote)")
			return 2
		}
		pem, err := os.ReadFile(*caFile)
		if err != nil {
			fmt.Fprintf(stderr, "pinned op: %v\n", err)
			return 2
		}
		cfg.Override = &host.Override{Addr: *connectTo, CAPEM: pem}
	}
	if secret == "" {
		fmt.Fprintf(stderr, "pinned op: no credential: set %s (or use --fake)\n", *tokenEnv)
		return 2
	}

	ctx := context.Background()
	eng, err := host.New(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "pinned op: %v\n", err)
		return 1
	}
	defer eng.Close(ctx)
	res, err := eng.Run(ctx, host.Call{
		Service: *service, Op: *opName, Args: json.RawMessage(*argsJSON),
		Credential: host.Credential{Kind: *kind, Secret: host.Secret(secret)},
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
			return 1
		}
		fmt.Fprintf(stderr, "pinned op: %v\n", err)
		return 1
	}
	if *verbose {
		fmt.Fprintf(stderr, "status %d, %d bytes raw from upstream, %d bytes projected, %s\n",
			res.Status, res.RawBytes, len(res.Data), res.Duration.Round(time.Millisecond))
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
