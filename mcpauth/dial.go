package mcpauth

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// errNotPublic refuses a dial to an address that is not public.
var errNotPublic = errors.New("mcpauth: a client ID metadata document must be on a public address")

// cgnat is the shared address space of RFC 6598.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// publicControl is a net.Dialer Control that refuses loopback, private,
// link-local, CGNAT, multicast and unspecified addresses: the address
// actually dialled is checked, so DNS cannot point a fetch inside.
func publicControl(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return errNotPublic
	}
	a := ap.Addr().Unmap()
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsMulticast() ||
		a.IsUnspecified() || a.IsInterfaceLocalMulticast() || cgnat.Contains(a) {
		return errNotPublic
	}
	return nil
}

// PublicTransport returns an HTTP transport for fetching client ID
// metadata documents that dials public addresses only (no proxy), so
// that a client_id cannot make the server fetch from inside its network
// (SSRF). base, if not nil, supplies the TLS configuration.
func PublicTransport(base *http.Transport) *http.Transport {
	t := &http.Transport{}
	if base != nil {
		t = base.Clone()
	}
	t.Proxy = nil
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, Control: publicControl}).DialContext
	return t
}
