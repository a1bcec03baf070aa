package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Resolver looks up the addresses of a host name. The default is
// net.DefaultResolver; tests substitute a hook that answers with hostile
// addresses (DNS rebinding, private ranges).
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// DialDeniedError is returned by the dialer when an address is not public
// (ABI invariant 4). It names the address, never the request.
type DialDeniedError struct {
	Addr netip.Addr
}

// Error names the refused address.
func (e *DialDeniedError) Error() string {
	return "dial refused: " + e.Addr.String() + " is not a public address"
}

// nonPublic are the ranges the host never dials: loopback, private (RFC
// 1918, RFC 4193), link-local (incl. 169.254.169.254 metadata), CGNAT (RFC
// 6598), multicast, unspecified, broadcast, "this network", IETF protocol
// assignments, benchmarking, documentation and reserved ranges.
var nonPublic = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16",
		"198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "100::/64", "2001:db8::/32", "fc00::/7", "fe80::/10", "ff00::/8",
		"2001::/23",      // IETF protocol assignments (includes Teredo 2001::/32)
		"64:ff9b:1::/48", // local-use NAT64 (RFC 8215): not globally reachable, and where the IPv4 address sits depends on the translator's prefix length
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// PublicAddr reports whether the host may dial a. IPv4-mapped
// (::ffff:a.b.c.d), well-known NAT64 (64:ff9b::/96) and 6to4 (2002::/16)
// addresses are unwrapped and the embedded IPv4 address is checked too;
// the local-use NAT64 prefix 64:ff9b:1::/48 is never public (RFC 8215),
// nor is a zoned address.
func PublicAddr(a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	a = a.Unmap()
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			if !PublicAddr(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})) {
				return false
			}
		case sixToFour.Contains(a):
			if !PublicAddr(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})) {
				return false
			}
		}
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	if a.Is4() && a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// Dialer dials pinned hosts under the address policy.
type Dialer struct {
	resolve  Resolver
	override netip.AddrPort // valid only with an Override
	net      net.Dialer
}

// NewDialer returns a dialer resolving pinned hosts with resolve; a
// valid override is the one address dialed instead of any pinned host
// (host.Override), and the one non-public address it lets through.
func NewDialer(resolve Resolver, override netip.AddrPort) *Dialer {
	d := &Dialer{resolve: resolve, override: override}
	d.net = net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: d.control}
	return d
}

// control runs on every connect, after resolution and before the SYN: the
// one place no code path (happy eyeballs, a retry, a redirect) can skip.
func (d *Dialer) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial refused: unparseable address %q", address)
	}
	if d.override.IsValid() && ap == d.override {
		return nil
	}
	if !PublicAddr(ap.Addr()) {
		return &DialDeniedError{Addr: ap.Addr()}
	}
	return nil
}

// dialContext resolves host and dials the first public address that
// answers. With an override, it dials the override address instead.
func (d *Dialer) dialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if port != "443" {
		return nil, fmt.Errorf("dial refused: port %s", port)
	}
	if d.override.IsValid() {
		return d.net.DialContext(ctx, "tcp", d.override.String())
	}
	addrs, err := d.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var firstErr error
	for _, a := range addrs {
		if !PublicAddr(a) {
			if firstErr == nil {
				firstErr = &DialDeniedError{Addr: a}
			}
			continue
		}
		c, err := d.net.DialContext(ctx, "tcp", netip.AddrPortFrom(a, 443).String())
		if err == nil {
			return c, nil
		}
		if firstErr == nil || errors.As(firstErr, new(*DialDeniedError)) {
			firstErr = err
		}
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("no address for %s", host)
	}
	return nil, firstErr
}

// DefaultResolver resolves host with net.DefaultResolver (A and AAAA).
func DefaultResolver(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// NewTransport builds the one HTTP transport of a host engine: no proxy
// (environment variables are ignored), TLS 1.2 or later with the system
// roots (plus the override's CA only when an override is set), compression
// owned by the host, connections reused per pinned host. At most 64
// connections per pinned host: over HTTP/2, which providers offer, one
// connection carries many ops, and without a cap a burst of ops each
// dialed its own TLS connection at once (1,000 concurrent handshakes took
// 0.3–2.5 s to clear and twice the memory; benchtool rss).
func NewTransport(d *Dialer, extraCAs []byte) (*http.Transport, error) {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(extraCAs) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(extraCAs) {
			return nil, errors.New("host: override CA: no certificate in PEM")
		}
		tlsCfg.RootCAs = pool
	}
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            d.dialContext,
		TLSClientConfig:        tlsCfg,
		ForceAttemptHTTP2:      true,
		DisableCompression:     true,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    64,
		MaxConnsPerHost:        64,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  0,
		MaxResponseHeaderBytes: 64 << 10,
	}, nil
}
