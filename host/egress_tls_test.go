package host

import (
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/host/api"
)

// selfSigned returns a certificate for the given DNS names and its PEM.
func selfSigned(t *testing.T, names ...string) (tls.Certificate, []byte) {
	t.Helper()
	c, p, err := newSelfSigned(names...)
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

// serveTLS serves a GitHub viewer on loopback with the given TLS config;
// tlsCfg nil serves plain HTTP.
func serveTLS(t *testing.T, tlsCfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"login":"tls-test"}`))
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// TestTLS: the host requires TLS 1.2 or later and a certificate for the
// pinned host that chains to a trusted root; the override's extra CA is
// the only addition to the system roots.
func TestTLS(t *testing.T) {
	cert, certPEM := selfSigned(t, "api.github.com")
	other, otherPEM := selfSigned(t, "evil.example.com")
	tests := []struct {
		name string
		srv  *tls.Config
		ca   []byte
		ok   bool
		// why is the message's reason: the step that failed, which points
		// at the fix (a certificate, not the network).
		why string
	}{
		{"TLS 1.2 with a trusted certificate works", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12}, certPEM, true, ""},
		{"TLS 1.3 works", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}, certPEM, true, ""},
		{"TLS 1.1 is refused", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}, certPEM, false, "TLS: the handshake with api.github.com failed"},
		{"an untrusted certificate is refused", &tls.Config{Certificates: []tls.Certificate{cert}}, nil, false, "TLS: api.github.com was reached but its certificate was not accepted"},
		{"a certificate for another name is refused", &tls.Config{Certificates: []tls.Certificate{other}}, otherPEM, false, "TLS: api.github.com was reached but its certificate was not accepted"},
		{"plain HTTP is refused", nil, certPEM, false, "TLS: the handshake with api.github.com failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := serveTLS(t, tt.srv)
			env := newEnv(t, func(c *Config) {
				c.Override = &Override{Addr: addr, CAPEM: tt.ca}
				c.Timeout = 5 * time.Second
			})
			res, herr := env.run("github", "get_viewer", `{}`)
			if tt.ok {
				if herr != nil || string(res.Data) != `{"login":"tls-test"}` {
					t.Fatalf("got %v %v", res, herr)
				}
				return
			}
			if herr == nil || herr.Code != api.CodeUpstreamUnreachable {
				t.Fatalf("got %v, want upstream_unreachable", herr)
			}
			// The message is the host's own sentence, never Go error text.
			if !strings.HasPrefix(herr.Message, "the provider could not be reached: "+tt.why) || strings.Contains(herr.Error(), "x509") || strings.Contains(herr.Error(), "tls:") ||
				strings.Contains(herr.Message, "127.0.0.1") {
				t.Fatalf("message %q", herr.Message)
			}
		})
	}
}
