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

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/secret"
)

// Network-side attacks: the guest is the real executor, the attacker is
// the upstream, DNS or the environment.

// TestDNSAnswersNonPublic: the pinned host resolves to a non-public
// address (DNS rebinding, a poisoned resolver): the dial is refused and a
// listener on that address sees no connection.
func TestDNSAnswersNonPublic(t *testing.T) {
	_, accepted := countingListener(t)
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
			if herr == nil || herr.Code != api.CodeEgressDenied || herr.Deny != api.DenyDial {
				t.Fatalf("got %v, want egress_denied/%s", herr, api.DenyDial)
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
			if herr == nil || herr.Code != api.CodeUpstreamError || herr.Status != code || herr.Deny != api.DenyRedirect {
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
	ln, accepted := countingListener(t)
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
		if herr == nil || herr.Code != api.CodeUpstreamTooLarge {
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
		if herr == nil || herr.Code != api.CodeUpstreamTooLarge {
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
		if herr == nil || herr.Code != api.CodeUpstreamInvalid {
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
		if herr == nil || herr.Code != api.CodeResultTooLarge || res != nil {
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
		if herr == nil || herr.Code != api.CodeUpstreamInvalid {
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
			for i := 0; i < 600; i++ { // a minute, unless the deadline ends it
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
		if herr == nil || herr.Code != api.CodeTimeout {
			t.Fatalf("got %v", herr)
		}
		if d := time.Since(start); d > 15*time.Second {
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
		if herr == nil || herr.Code != api.CodeTimeout {
			t.Fatalf("got %v", herr)
		}
		if d := time.Since(start); d > 15*time.Second {
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
		_, herr := env.runWith(ctx, "github", "get_viewer", `{}`, Credential{Secret: secret.Secret(fakeapi.Token("github"))})
		if herr == nil || (herr.Code != api.CodeTimeout && herr.Code != api.CodeCanceled) {
			t.Fatalf("got %v", herr)
		}
	})
}

// countingListener is a loopback listener that counts the connections it
// accepts (and closes them); it is closed when the test ends.
func countingListener(t *testing.T) (net.Listener, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := new(atomic.Int32)
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
	return ln, accepted
}
