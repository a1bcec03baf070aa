package registry

import (
	"strings"
	"testing"
)

// TestHostOwnedHeader: every case of a host-owned name, the proxy and
// forwarding prefixes, names past the no-allocation path's 64 bytes,
// and non-ASCII names that Unicode lowers onto a host-owned one.
func TestHostOwnedHeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"Authorization", true},
		{"AUTHORIZATION", true},
		{"authorization", true},
		{"Keep-Alive", true},
		{"Proxy-Authorization", true},
		{"proxy-anything", true},
		{"X-Forwarded-For", true},
		{"X-Forwarded-" + strings.Repeat("A", 80), true},
		{"Accept", false},
		{"X-GitHub-Api-Version", false},
		{"Proxy", false},
		{"X-Forwarded", false},
		{strings.Repeat("B", 80), false},
		{"\u212Aeep-Alive", true},   // KELVIN SIGN lowers to "k"
		{"Connection\u212A", false}, // not a host-owned name in any case
		{"TE", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HostOwnedHeader(tc.name); got != tc.want {
				t.Fatalf("HostOwnedHeader(%q) = %v, want %v", tc.name, got, tc.want)
			}
		})
	}
	if n := testing.AllocsPerRun(100, func() { HostOwnedHeader("X-GitHub-Api-Version") }); n != 0 {
		t.Fatalf("HostOwnedHeader allocates %v times for an ASCII name", n)
	}
}
