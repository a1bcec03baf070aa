package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/demo/webstack"
)

// runDemoWeb serves the whole member's side against the fakes until ctx
// is done (pinned demo --web, make web).
func runDemoWeb(ctx context.Context, listen string, stdout, stderr io.Writer) int {
	st, err := webstack.Start(ctx, webstack.Options{WebListen: listen, CacheDir: defaultCacheDir()})
	if err != nil {
		fmt.Fprintf(stderr, "pinned demo: %s\n", listenFailed(err))
		return 1
	}
	defer st.Close()
	ca := filepath.Join(os.TempDir(), "pinned-demo-ca.pem")
	if err := os.WriteFile(ca, st.Fake.CACertPEM(), 0o644); err != nil {
		ca = "(could not be written: " + errText(err) + ")"
	}
	fmt.Fprintf(stdout, "pinned demo --web: provider fake on %s, broker on %s, sidecar on %s (all loopback).\n\n", st.Fake.Addr(), st.BrokerURL, st.SidecarURL)
	fmt.Fprintf(stdout, "  Open the catalog:  %s/\n\n", st.WebURL)
	fmt.Fprintln(stdout, "  Paste a fake token to connect a service (they work only against the fake):")
	for _, s := range fakeapi.Services() {
		fmt.Fprintf(stdout, "    %-9s %s\n", s, fakeapi.Token(s))
	}
	fmt.Fprintf(stdout, "\n  \"Connect with X\" sends the browser to the provider's own page, which here is the fake:\n"+
		"  start a throwaway browser that reaches it through the demo's proxy, e.g.\n"+
		"    chromium --user-data-dir=$(mktemp -d) --proxy-server=http://%s --ignore-certificate-errors %s/\n"+
		"  (the fake's CA is in %s). Ctrl-C stops everything.\n", st.ProxyAddr, st.WebURL, ca)
	<-ctx.Done()
	return 0
}
