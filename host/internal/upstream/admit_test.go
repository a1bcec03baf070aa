package upstream

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/host/internal/egress"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/secret"
)

// recorder is a transport that answers 200 {} and records what reached it.
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (rt *recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	rt.reqs = append(rt.reqs, r)
	rt.mu.Unlock()
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader([]byte(`{}`))), Request: r}, nil
}

func (rt *recorder) sent() []*http.Request {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.reqs
}

// admitFixture returns github.get_repo prepared as the host prepares it.
func admitFixture(t *testing.T, service, opName string) (*registry.Manifest, *registry.Op, *egress.Policy, *egress.Binding) {
	t.Helper()
	m, ok := registry.Default().Service(service)
	if !ok {
		t.Fatal(service)
	}
	op, ok := m.Op(opName)
	if !ok {
		t.Fatal(opName)
	}
	eg, err := egress.Prepare(m, op)
	if err != nil {
		t.Fatal(err)
	}
	return m, op, eg.Policy, eg.Binding
}

// TestSendOnlyAdmitted: the exchange sends, with the credential, only a
// request the egress checks admitted (egress.Admit: the policy and the
// binding) for the op's own pinned host. Before the fix Send took any
// *egress.Request: one decoded with egress.DecodeRequest and never
// checked — another host, another path, another method — went out with
// the credential injected, so any package of the module that imports
// host/internal/upstream had a path to the provider around the egress policy.
func TestSendOnlyAdmitted(t *testing.T) {
	const cred = secret.Secret("ghp_admitTestCredential0123456789")
	m, op, pol, b := admitFixture(t, "github", "get_repo")
	want, rej := b.Bind([]byte(`{"owner":"octo","repo":"hello"}`))
	if rej != nil {
		t.Fatalf("bind: %+v", rej)
	}
	gh := `["Accept","application/vnd.github+json"],["X-GitHub-Api-Version","2022-11-28"]`
	honest := `{"method":"GET","url":"https://api.github.com/repos/octo/hello","headers":[` + gh + `]}`
	decode := func(s string) *egress.Request {
		t.Helper()
		r, deny := egress.DecodeRequest([]byte(s))
		if deny != "" {
			t.Fatalf("decode %s: %s", s, deny)
		}
		return r
	}

	for _, tt := range []struct {
		name string
		req  *egress.Request
	}{
		{"the honest request, never admitted", decode(honest)},
		{"another host", decode(`{"method":"GET","url":"https://attacker.example/x","headers":[]}`)},
		{"another path and method", decode(`{"method":"DELETE","url":"https://api.github.com/repos/octo/hello","headers":[` + gh + `]}`)},
		{"refused by the binding", func() *egress.Request {
			r := decode(`{"method":"GET","url":"https://api.github.com/repos/octo/other","headers":[` + gh + `]}`)
			if d := egress.Admit(pol, b, want, r); d != api.DenyNotBound {
				t.Fatalf("Admit = %q, want %s", d, api.DenyNotBound)
			}
			return r
		}()},
		{"admitted for another service's op", func() *egress.Request {
			_, _, spol, sb := admitFixture(t, "stripe", "get_balance")
			swant, rej := sb.Bind([]byte(`{}`))
			if rej != nil {
				t.Fatal(rej)
			}
			r := decode(`{"method":"GET","url":"https://api.stripe.com/v1/balance","headers":[]}`)
			if d := egress.Admit(spol, sb, swant, r); d != "" {
				t.Fatalf("Admit stripe = %q", d)
			}
			return r
		}()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rt := &recorder{}
			c := NewClient(Config{Transport: rt, UserAgent: "t", MaxResponseBytes: 1 << 20, MaxResultBytes: 1 << 20})
			ans, _, f := c.Send(context.Background(), NewOp(m, op, pol.ContentType()), tt.req, "pat", "", cred)
			if n := len(rt.sent()); n != 0 {
				t.Fatalf("%d requests sent (first to %s), want none", n, rt.sent()[0].URL)
			}
			if ans != nil || f == nil || f.Code != api.CodeEgressDenied || f.Deny != api.DenyNotBound {
				t.Fatalf("got %+v %+v, want a api.CodeEgressDenied failure (not_bound)", ans, f)
			}
		})
	}

	t.Run("control: the admitted request goes out once, with the credential", func(t *testing.T) {
		r := decode(honest)
		if d := egress.Admit(pol, b, want, r); d != "" {
			t.Fatalf("Admit = %q", d)
		}
		rt := &recorder{}
		c := NewClient(Config{Transport: rt, UserAgent: "t", MaxResponseBytes: 1 << 20, MaxResultBytes: 1 << 20})
		if _, _, f := c.Send(context.Background(), NewOp(m, op, pol.ContentType()), r, "pat", "", cred); f != nil {
			t.Fatalf("failure %+v", f)
		}
		sent := rt.sent()
		if len(sent) != 1 || sent[0].URL.String() != "https://api.github.com/repos/octo/hello" || sent[0].Header.Get("Authorization") != "Bearer "+string(cred) {
			t.Fatalf("sent %+v", sent)
		}
	})
}
