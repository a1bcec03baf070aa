package httpserve

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// LoopbackHost refuses DNS rebinding (as the MCP SDK does): a request that
// arrived on a loopback address must name a loopback host (localhost,
// 127.0.0.0/8, ::1) or one of hosts (names without a port). A page of
// another site whose name was rebound to 127.0.0.1 is same-origin to the
// browser, so only the Host tells it from the server's own pages. refuse
// answers any other request.
func LoopbackHost(hosts []string, refuse http.HandlerFunc) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil &&
				IsLoopback(la.String()) && !IsLoopback(r.Host) && !hostIn(r.Host, hosts) {
				refuse(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// IsLoopback reports whether a host or host:port is localhost or a
// loopback IP.
func IsLoopback(hostport string) bool {
	h := hostOf(hostport)
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Unmap().IsLoopback()
}

func hostIn(hostport string, hosts []string) bool {
	h := hostOf(hostport)
	for _, a := range hosts {
		if strings.EqualFold(h, a) {
			return true
		}
	}
	return false
}

// hostOf is the host of a host or host:port, without IPv6 brackets.
func hostOf(hostport string) string {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		h = strings.Trim(hostport, "[]")
	}
	return h
}
