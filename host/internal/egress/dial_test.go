package egress

import (
	"net/netip"
	"testing"
)

// The dial policy on its own: which addresses are public, and the
// connect-time check.

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
	d := NewDialer(DefaultResolver, netip.AddrPort{})
	for _, a := range []string{"127.0.0.1:443", "[::1]:443", "10.0.0.1:443", "[::ffff:127.0.0.1]:443", "[64:ff9b::7f00:1]:443", "169.254.169.254:443"} {
		if err := d.control("tcp", a, nil); err == nil {
			t.Errorf("control allowed %s", a)
		}
	}
	if err := d.control("tcp", "140.82.112.6:443", nil); err != nil {
		t.Errorf("control refused a public address: %v", err)
	}
	ov := NewDialer(DefaultResolver, netip.MustParseAddrPort("127.0.0.1:8443"))
	if err := ov.control("tcp", "127.0.0.1:8443", nil); err != nil {
		t.Errorf("override address refused: %v", err)
	}
	if err := ov.control("tcp", "127.0.0.1:8444", nil); err == nil {
		t.Error("an override exempts only its exact address")
	}
}
