package host

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"

	"github.com/elevenmessenger/pinned/host/internal/egress"
)

// Override maps every pinned host to one local HTTPS server: the provider
// fake of tests and of `pinned demo`. It is the same code path as
// production (the same dialer with the same address policy, the same TLS
// verification with the pinned host as server name); only the address
// dialed and the extra trusted CA differ. The override address is the one
// non-public address the dial policy lets through.
type Override struct {
	// Addr is the "ip:port" every pinned host's port 443 is dialed at
	// instead. It must be an IP literal (New fails otherwise).
	Addr string
	// CAPEM holds PEM certificates trusted in addition to the system roots
	// (New fails when it is set and holds none).
	CAPEM []byte
}

// Resolver looks up the addresses of a host name (Config.Resolver). The
// default is net.DefaultResolver; tests substitute a hook that answers
// with hostile addresses (DNS rebinding, private ranges). Whatever it
// answers, only public addresses are dialed.
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// newTransport builds the engine's one transport: the egress dialer
// (only public addresses of the pinned host, or the override's address)
// without proxy, TLS 1.2 or later (ABI invariant 4; the upstream client
// over it follows no redirect).
func newTransport(resolve Resolver, ov *Override) (*http.Transport, error) {
	var addr netip.AddrPort
	var cas []byte
	if ov != nil {
		ap, err := netip.ParseAddrPort(ov.Addr)
		if err != nil {
			return nil, fmt.Errorf("host: override address %q: %w", ov.Addr, err)
		}
		addr, cas = ap, ov.CAPEM
	}
	return egress.NewTransport(egress.NewDialer(egress.Resolver(resolve), addr), cas)
}
