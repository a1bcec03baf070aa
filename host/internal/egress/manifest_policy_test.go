package egress

import (
	"encoding/json"
	"net/textproto"
	"os"
	"testing"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/registry"
)

// TestLoaderAndPolicyAgreeOnHeaders: a manifest `pinned registry check`
// accepts is one the host will run, as far as headers go. For every header
// name (the host-owned ones in several spellings, their near misses, and
// ordinary ones) the loader's verdict on a manifest declaring it and the
// egress policy's verdict on a request carrying it agree: accepted by
// both, or refused by both (once, Expect, Forwarded and X-Forwarded-* passed
// the loader and failed every op with header_forbidden).
func TestLoaderAndPolicyAgreeOnHeaders(t *testing.T) {
	base, err := os.ReadFile("../../../registry/testdata/acme.json")
	if err != nil {
		t.Fatal(err)
	}
	names := []string{
		"Authorization", "authorization", "Cookie", "Host", "Accept-Encoding", "Content-Type", "Content-Length",
		"Transfer-Encoding", "Connection", "TE", "Trailer", "Upgrade", "Keep-Alive",
		"Expect", "expect", "Forwarded", "X-Forwarded-For", "x-forwarded-host", "X-Forwarded-Proto",
		"Proxy-Authorization", "proxy-connection", "Proxy-Foo",
		// near misses and ordinary headers: both must accept them
		"Accept", "User-Agent", "X-Api-Key", "X-Forwarded", "Forwarded-For", "Expectation", "Proxy",
		"X-GitHub-Api-Version", "Linear-Client", "Hosting", "Cookies",
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(base, &doc); err != nil {
				t.Fatal(err)
			}
			doc["headers"] = map[string]string{name: "v1"}
			data, _ := json.Marshal(doc)
			m, perr := registry.Parse("acme.json", data)
			loaderAccepts := perr == nil

			hostAccepts := !registry.HostOwnedHeader(name)
			if loaderAccepts {
				op, ok := m.Op("get_viewer")
				if !ok {
					t.Fatal("acme has no get_viewer")
				}
				p, err := NewPolicy(m, op)
				if err != nil {
					t.Fatalf("the loader accepted a manifest the host cannot build a policy for: %v", err)
				}
				deny := p.checkHeaders([][2]string{{textproto.CanonicalMIMEHeaderKey(name), "v1"}})
				hostAccepts = deny == ""
				if !hostAccepts {
					t.Fatalf("registry check accepts header %q; the host refuses every op with %s", name, deny)
				}
			}
			if loaderAccepts != hostAccepts {
				t.Fatalf("header %q: loader accepts %v, host accepts %v", name, loaderAccepts, hostAccepts)
			}
			// The host refuses a host-owned header on the wire whatever a
			// manifest declared.
			if registry.HostOwnedHeader(name) {
				m0, err := registry.Parse("acme.json", base)
				if err != nil {
					t.Fatal(err)
				}
				op, _ := m0.Op("get_viewer")
				p, err := NewPolicy(m0, op)
				if err != nil {
					t.Fatal(err)
				}
				if deny := p.checkHeaders([][2]string{{textproto.CanonicalMIMEHeaderKey(name), "v1"}}); deny != api.DenyHeaderForbidden {
					t.Fatalf("a request carrying %q: %q, want %s", name, deny, api.DenyHeaderForbidden)
				}
			}
		})
	}
}
