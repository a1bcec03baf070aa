package host

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/fakeapi"
)

// Network-side attacks: the guest is the real executor, the attacker is
// the upstream, DNS or the environment.

func TestPublicAddr(t *testing.T) {
	tests := []struct {
		addr   string
		public bool
	}{
		{"140.82.112.6", true},
		{"2606:50c0:8000::154", true},
		{"127.0.0.1", false},
		{"127.255.255.254", false},
		{"10.1.2.3", false},
		{"172.16.0.1", false},
		{"192.168.1.1", false},
		{"169.254.169.254", false},
		{"100.64.0.1", false},
		{"100.127.255.254", false},
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"224.0.0.1", false},
		{"255.255.255.255", false},
		{"240.0.0.1", false},
		{"198.18.0.1", false},
		{"192.0.2.1", false},
		{"::", false},
		{"::1", false},
		{"fe80::1", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"ff02::1", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"::ffff:140.82.112.6", true},
		{"64:ff9b::7f00:1", false},
		{"64:ff9b::a9fe:a9fe", false},
		{"64:ff9b::8c52:7006", true},
		{"64:ff9b:1::7f00:1", false},
		{"2002:7f00:1::1", false},
		{"2002:8c52:7006::1", true},
		{"2001:db8::1", false},
		{"2001::1", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			if got := PublicAddr(netip.MustParseAddr(tt.addr)); got != tt.public {
				t.Fatalf("PublicAddr(%s) = %v, want %v", tt.addr, got, tt.public)
			}
		})
	}
}

// TestDialControl proves the connect-time check on its own: whatever the
// resolver said, a non-public address never gets a SYN.
func TestDialControl(t *testing.T) {
	d, err := newDialer(defaultResolver, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"127.0.0.1:443", "[::1]:443", "10.0.0.1:443", "[::ffff:127.0.0.1]:443", "[64:ff9b::7f00:1]:443", "169.254.169.254:443"} {
		if err := d.control("tcp", a, nil); err == nil {
			t.Errorf("control allowed %s", a)
		}
	}
	if err := d.control("tcp", "140.82.112.6:443", nil); err != nil {
		t.Errorf("control refused a public address: %v", err)
	}
	ov, err := newDialer(defaultResolver, &Override{Addr: "127.0.0.1:8443"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ov.control("tcp", "127.0.0.1:8443", nil); err != nil {
		t.Errorf("override address refused: %v", err)
	}
	if err := ov.control("tcp", "127.0.0.1:8444", nil); err == nil {
		t.Error("an override exempts only its exact address")
	}
}

// TestDNSAnswersNonPublic: the pinned host resolves to a non-public
// address (DNS rebinding, a poisoned resolver): the dial is refused and a
// listener on that address sees no connection.
func TestDNSAnswersNonPublic(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	for _, ans := range []string{"127.0.0.1", "10.0.0.7", "169.254.169.254", "100.64.0.1", "::1", "::ffff:127.0.0.1", "64:ff9b::7f00:1"} {
		t.Run(ans, func(t *testing.T) {
			var asked atomic.Int32
			env := newEnv(t, func(c *Config) {
				c.Override = nil
				c.Resolver = func(ctx context.Context, host string) ([]netip.Addr, error) {
					asked.Add(1)
					if host != "api.github.com" {
						return nil, fmt.Errorf("unexpected lookup %s", host)
					}
					return []netip.Addr{netip.MustParseAddr(ans)}, nil
				}
			})
			_, herr := env.run("github", "get_viewer", `{}`)
			if herr == nil || herr.Code != CodeEgressDenied || herr.Deny != DenyDial {
				t.Fatalf("got %v, want egress_denied/%s", herr, DenyDial)
			}
			if asked.Load() == 0 {
				t.Fatal("the resolver hook was not used")
			}
			env.assertNoLeak(t, nil, herr, fakeapi.Token("github"))
		})
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("%d connections reached a loopback listener", n)
	}
}

// TestRedirectNotFollowed: 301/302/307 to another host are answers, not
// instructions; the other host receives nothing, least of all the token.
func TestRedirectNotFollowed(t *testing.T) {
	env := newEnv(t, nil)
	for _, code := range []int{301, 302, 307, 308} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			env.fake.Reset()
			env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
				if r.Host == "api.github.com" || strings.HasPrefix(r.Host, "api.github.com:") {
					http.Redirect(w, r, "https://api.stripe.com/v1/steal", code)
					return true
				}
				return false
			})
			defer env.fake.SetHandler(nil)
			_, herr := env.run("github", "get_viewer", `{}`)
			if herr == nil || herr.Code != CodeUpstreamError || herr.Status != code || herr.Deny != DenyRedirect {
				t.Fatalf("got %+v", herr)
			}
			reqs := env.fake.Requests()
			if len(reqs) != 1 || reqs[0].Host != "api.github.com" {
				t.Fatalf("requests after redirect: %+v", reqs)
			}
			if strings.Contains(herr.Message, "stripe") {
				t.Fatalf("the redirect target leaked into the message: %s", herr.Message)
			}
			env.assertNoLeak(t, nil, herr, fakeapi.Token("github"))
		})
	}
}

// TestProxyEnvironmentIgnored: HTTPS_PROXY/HTTP_PROXY/ALL_PROXY point at a
// listener that counts connections; the host never uses them.
func TestProxyEnvironmentIgnored(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	proxy := "http://" + ln.Addr().String()
	for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy"} {
		t.Setenv(k, proxy)
	}
	t.Setenv("NO_PROXY", "")
	env := newEnv(t, nil)
	if _, herr := env.run("github", "get_viewer", `{}`); herr != nil {
		t.Fatal(herr)
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the proxy received %d connections", n)
	}
	if n := len(env.fake.Requests()); n != 1 {
		t.Fatalf("the provider received %d requests", n)
	}
}

func TestResponseCaps(t *testing.T) {
	token := fakeapi.Token("github")
	t.Run("gzip bomb stops at the decoded cap", func(t *testing.T) {
		env := newEnv(t, func(c *Config) { c.MaxResponseBytes = 1 << 20 })
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		zero := make([]byte, 1<<20)
		for i := 0; i < 64; i++ { // 64 MiB of zeros, ~64 KiB compressed
			zw.Write(zero)
		}
		zw.Close()
		env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
			if r.Header.Get("Accept-Encoding") != "gzip" {
				t.Errorf("Accept-Encoding = %q, want the host's gzip", r.Header.Get("Accept-Encoding"))
			}
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(z.Bytes())
			return true
		})
		_, herr := env.run("github", "get_viewer", `{}`)
		if herr == nil || herr.Code != CodeUpstreamTooLarge {
			t.Fatalf("got %v", herr)
		}
		env.assertNoLeak(t, nil, herr, token)
	})
	t.Run("raw body over the cap", func(t *testing.T) {
		env := newEnv(t, func(c *Config) { c.MaxResponseBytes = 64 << 10 })
		env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
			w.Write([]byte(`{"login":"` + strings.Repeat("a", 100<<10) + `"}`))
			return true
		})
		_, herr := env.run("github", "get_viewer", `{}`)
		if herr == nil || herr.Code != CodeUpstreamTooLarge {
			t.Fatalf("got %v", herr)
		}
	})
	t.Run("unknown content encoding", func(t *testing.T) {
		env := newEnv(t, nil)
		env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Encoding", "br")
			w.Write([]byte("xx"))
			return true
		})
		_, herr := env.run("github", "get_viewer", `{}`)
		if herr == nil || herr.Code != CodeUpstreamInvalid {
			t.Fatalf("got %v", herr)
		}
	})
	t.Run("result over 64 KiB after projection is refused, not truncated", func(t *testing.T) {
		env := newEnv(t, nil)
		env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
			w.Write([]byte(`{"login":"` + strings.Repeat("a", 70<<10) + `","node_id":"x"}`))
			return true
		})
		res, herr := env.run("github", "get_viewer", `{}`)
		if herr == nil || herr.Code != CodeResultTooLarge || res != nil {
			t.Fatalf("got %v %v", res, herr)
		}
		if !strings.Contains(herr.Message, "65536") {
			t.Fatalf("message does not say the limit: %s", herr.Message)
		}
	})
	t.Run("invalid JSON is refused, not partially projected", func(t *testing.T) {
		env := newEnv(t, nil)
		env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
			w.Write([]byte(`{"login":"octo","x":[1,2}`))
			return true
		})
		_, herr := env.run("github", "get_viewer", `{}`)
		if herr == nil || herr.Code != CodeUpstreamInvalid {
			t.Fatalf("got %v", herr)
		}
	})
}

func TestDeadline(t *testing.T) {
	t.Run("upstream trickles bytes past the deadline", func(t *testing.T) {
		env := newEnv(t, func(c *Config) { c.Timeout = 1500 * time.Millisecond })
		env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"login":"`))
			for i := 0; i < 100; i++ {
				select {
				case <-r.Context().Done():
					return true
				case <-time.After(100 * time.Millisecond):
				}
				w.Write([]byte("a"))
				w.(http.Flusher).Flush()
			}
			return true
		})
		start := time.Now()
		_, herr := env.run("github", "get_viewer", `{}`)
		if herr == nil || herr.Code != CodeTimeout {
			t.Fatalf("got %v", herr)
		}
		if d := time.Since(start); d > 4*time.Second {
			t.Fatalf("the op outlived its deadline: %v", d)
		}
	})
	t.Run("upstream never answers", func(t *testing.T) {
		env := newEnv(t, func(c *Config) { c.Timeout = 1 * time.Second })
		env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
			<-r.Context().Done()
			return true
		})
		start := time.Now()
		_, herr := env.run("github", "get_viewer", `{}`)
		if herr == nil || herr.Code != CodeTimeout {
			t.Fatalf("got %v", herr)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("the op outlived its deadline: %v", d)
		}
	})
	t.Run("a caller's cancel ends the op", func(t *testing.T) {
		env := newEnv(t, nil)
		env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
			<-r.Context().Done()
			return true
		})
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, herr := env.runWith(ctx, "github", "get_viewer", `{}`, Credential{Secret: Secret(fakeapi.Token("github"))})
		if herr == nil || (herr.Code != CodeTimeout && herr.Code != CodeCanceled) {
			t.Fatalf("got %v", herr)
		}
	})
}
