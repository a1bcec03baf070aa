package egress

import (
	"net/netip"
	"testing"
)

// TestPublicAddrRefusesNAT64LocalUse (found by the red team; it guards the fix): PublicAddr unwraps 64:ff9b:1::/48
// (RFC 8215, the local-use NAT64 prefix) as if every address in it used
// the /96 layout, reading the IPv4 address from the last four bytes. RFC
// 8215 prefixes are subdivided into NAT64 prefixes of length /48 to /96,
// where RFC 6052 puts the IPv4 address elsewhere (for /48: bytes 6, 7, 9,
// 10; for /64: bytes 9 to 12). A DNS answer inside 64:ff9b:1::/48 whose
// last four bytes are public, but whose /48 or /64 embedding is
// 127.0.0.1 or 169.254.169.254, is dialed; a translator using that prefix
// length delivers it to the non-public address. The prefix is not
// globally reachable (IANA special-purpose registry), so the safe answer
// is to refuse all of it.
func TestPublicAddrRefusesNAT64LocalUse(t *testing.T) {
	for _, tc := range []struct{ addr, embeds string }{
		{"64:ff9b:1:7f00:0:100:808:808", "127.0.0.1 in the /48 layout"},
		{"64:ff9b:1:a9fe:a9:fe00:808:808", "169.254.169.254 in the /48 layout"},
		{"64:ff9b:1:0:7f:0:108:808", "127.0.0.1 in the /64 layout"},
		{"64:ff9b:1:0:a:0:108:808", "10.0.0.1 in the /64 layout"},
	} {
		if PublicAddr(netip.MustParseAddr(tc.addr)) {
			t.Errorf("PublicAddr(%s) = true; it embeds %s", tc.addr, tc.embeds)
		}
	}
}
