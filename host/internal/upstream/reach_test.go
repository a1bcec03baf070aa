package upstream

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/elevenmessenger/pinned/host/api"
)

type timeoutErr struct{ msg string }

func (e timeoutErr) Error() string   { return e.msg }
func (e timeoutErr) Timeout() bool   { return true }
func (e timeoutErr) Temporary() bool { return true }

// TestUnreachableReason: upstream_unreachable says which step failed (DNS,
// connect, TLS, timeout) and never an address or Go error text.
func TestUnreachableReason(t *testing.T) {
	dial := func(err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 443}, Err: err}
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "no such host", err: &net.DNSError{Err: "no such host", Name: "api.github.com", IsNotFound: true}, want: "DNS: api.github.com does not resolve (no such host)"},
		{name: "DNS server failure", err: &net.DNSError{Err: "server misbehaving", Name: "api.github.com", Server: "10.0.0.53:53"}, want: "DNS: the lookup of api.github.com failed"},
		{name: "connection refused", err: dial(os.NewSyscallError("connect", syscall.ECONNREFUSED)), want: "connect: api.github.com:443 refused the connection"},
		{name: "connect timeout", err: dial(timeoutErr{"i/o timeout"}), want: "connect: connecting to api.github.com:443 timed out"},
		{name: "network unreachable", err: dial(os.NewSyscallError("connect", syscall.ENETUNREACH)), want: "connect: no connection to api.github.com:443"},
		{name: "unknown authority", err: &url_Error{x509.UnknownAuthorityError{}}, want: "TLS: api.github.com was reached but its certificate was not accepted"},
		{name: "TLS handshake timeout", err: timeoutErr{"net/http: TLS handshake timeout"}, want: "timeout: the TLS handshake with api.github.com timed out"},
		{name: "read timeout", err: timeoutErr{"read tcp 10.1.1.1:5->203.0.113.7:443: i/o timeout"}, want: "timeout: api.github.com stopped answering"},
		{name: "other", err: errors.New("EOF 203.0.113.7"), want: "the connection to api.github.com failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			he := transportFailure(context.Background(), tt.err, "api.github.com")
			if he.Code != api.CodeUpstreamUnreachable || !strings.HasPrefix(he.Message, "the provider could not be reached: "+tt.want) {
				t.Fatalf("%s: %q; want %s with %q", he.Code, he.Message, api.CodeUpstreamUnreachable, tt.want)
			}
			for _, leak := range []string{"203.0.113", "10.0.0.53", "10.1.1.1", "i/o", "x509", "EOF"} {
				if strings.Contains(he.Message, leak) {
					t.Fatalf("message %q leaks %q", he.Message, leak)
				}
			}
		})
	}
}

// url_Error wraps like *url.Error does.
type url_Error struct{ err error }

func (e *url_Error) Error() string { return "Get: " + e.err.Error() }
func (e *url_Error) Unwrap() error { return e.err }
