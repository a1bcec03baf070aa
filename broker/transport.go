package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"time"
)

// errRedirect refuses a token endpoint's redirect.
var errRedirect = errors.New("the token endpoint redirected; redirects are not followed")

// newProviderClient builds the HTTP client the broker's OAuth calls use
// (handed to golang.org/x/oauth2 through its context key). The broker is
// trusted code, so this is a plain net/http transport, but a strict one:
// the proxy is Config.Proxy or none (proxy environment variables are
// ignored), TLS 1.2 or later, bounded dial, handshake and response-header
// times, an overall timeout, and no redirects (a token endpoint that
// redirects is refused, so a code or refresh token is never replayed to
// another URL).
func newProviderClient(cfg *Config) (*http.Client, *http.Transport, error) {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	dial := dialer.DialContext
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ov := cfg.Override; ov != nil {
		if err := checkOverride(ov); err != nil {
			return nil, nil, err
		}
		if cfg.Proxy != nil {
			return nil, nil, errors.New("a provider override and a proxy cannot be combined")
		}
		addr := ov.Addr
		dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, addr)
		}
		if len(ov.CAPEM) > 0 {
			pool, err := x509.SystemCertPool()
			if err != nil || pool == nil {
				pool = x509.NewCertPool()
			}
			if !pool.AppendCertsFromPEM(ov.CAPEM) {
				return nil, nil, errors.New("provider override CA: no certificate in PEM")
			}
			tlsCfg.RootCAs = pool
		}
	}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            dial,
		TLSClientConfig:        tlsCfg,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  cfg.providerTimeout(),
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	if cfg.Proxy != nil {
		tr.Proxy = http.ProxyURL(cfg.Proxy)
	}
	client := &http.Client{
		Transport:     tr,
		Timeout:       cfg.providerTimeout(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect },
	}
	return client, tr, nil
}
