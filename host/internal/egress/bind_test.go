package egress

import (
	"net/textproto"
	"testing"

	"github.com/elevenmessenger/pinned/registry"
)

// TestBindingCanonicalHeaders: a declared header matches in any case of
// its name (HTTP field names are case-insensitive), once.
func TestBindingCanonicalHeaders(t *testing.T) {
	m, _ := registry.Default().Service("github")
	op, _ := m.Op("get_viewer")
	prefix, _ := InputPrefix(m, op)
	b, err := NewBinding(m, op, prefix)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := b.Bind([]byte(`{}`))
	req := func(hs ...[2]string) *Request {
		return &Request{method: "GET", url: "https://api.github.com/user", headers: hs}
	}
	acc := [2]string{"accept", "application/vnd.github+json"}
	ver := [2]string{textproto.CanonicalMIMEHeaderKey("x-github-api-version"), "2022-11-28"}
	for _, tt := range []struct {
		name string
		r    *Request
		ok   bool
	}{
		{"both, any case", req(acc, ver), true},
		{"both, other order", req(ver, acc), true},
		{"one twice", req(acc, acc), false},
		{"one missing", req(acc), false},
		{"none", req(), false},
		{"value differs in case", req([2]string{"Accept", "Application/vnd.github+json"}, ver), false},
	} {
		if got := b.Check(want, tt.r, "api.github.com"); got != tt.ok {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.ok)
		}
	}
}
