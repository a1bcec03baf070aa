package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

const healthcheckUsage = `Usage: pinned healthcheck [--url URL] [--timeout 3s]

Asks a local sidecar whether it is ready (GET /readyz) and exits 0 when it
answers 200, 1 otherwise: a container HEALTHCHECK, which distroless images
(no shell, no curl) cannot do any other way.

The default URL is http://<PINNED_SIDECAR_LISTEN>/readyz with an
unspecified host (0.0.0.0, ::, empty) replaced by 127.0.0.1, so the check
follows the same environment the sidecar reads; 127.0.0.1:8080 when unset.

Exit status: 0 ready, 1 not ready or unreachable, 2 bad usage.

Flags:
`

func runHealthcheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	url := fs.String("url", "", "the `URL` to GET (default from PINNED_SIDECAR_LISTEN, see above)")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	if code, ok := parseFlags(fs, healthcheckUsage, args, stdout, stderr); !ok {
		return code
	}
	if *url == "" {
		*url = "http://" + probeAddr(os.Getenv(envName("listen"))) + "/readyz"
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return flagError(stderr, "healthcheck", fmt.Sprintf("--url %q: %v", *url, err))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "pinned healthcheck: %s: %v\n", *url, unwrapURLError(err))
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "pinned healthcheck: %s answered %d\n", *url, resp.StatusCode)
		return 1
	}
	return 0
}

// probeAddr is the address to probe for a listen address: its port on
// 127.0.0.1 when it listens on every address.
func probeAddr(listen string) string {
	if listen == "" {
		return "127.0.0.1:8080"
	}
	h, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
		h = "127.0.0.1"
	}
	return net.JoinHostPort(h, port)
}

// unwrapURLError drops net/url's "Get \"URL\": " (the line names the URL).
func unwrapURLError(err error) error {
	type unwrapper interface{ Unwrap() error }
	if u, ok := err.(unwrapper); ok && u.Unwrap() != nil {
		return u.Unwrap()
	}
	return err
}
