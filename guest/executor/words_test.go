package executor

import (
	"bytes"
	"strings"
	"testing"
)

// TestScanSpec: the index of the first '\n' at every position, and in
// no place at all, as bytes.IndexByte finds it; the hash covers only the
// bytes before it.
func TestScanSpec(t *testing.T) {
	for n := 0; n < 80; n++ {
		for at := -1; at < n; at++ {
			b := bytes.Repeat([]byte{'a'}, n)
			for i := range b {
				b[i] = byte('a' + i%26)
			}
			if at >= 0 {
				b[at] = '\n'
			}
			got, h := scanSpec(b)
			if want := bytes.IndexByte(b, '\n'); got != want {
				t.Fatalf("len %d, '\\n' at %d: scanSpec = %d, want %d", n, at, got, want)
			}
			if at >= 0 {
				// What follows the newline does not change the hash.
				c := append(bytes.Clone(b[:at+1]), "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz\n"...)
				if _, h2 := scanSpec(c); h2 != h {
					t.Fatalf("len %d, '\\n' at %d: the hash depends on the bytes after the newline", n, at)
				}
			}
		}
	}
	// A byte of 0x0a + 0x80 (0x8a) or one next to 0x0b is not a newline
	// (the bit trick's false positives would be a wrong index).
	b := []byte("\x8a\x0b\x09\x8a\x0b\x09\x8a\x0bxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n")
	if got, _ := scanSpec(b); got != len(b)-1 {
		t.Fatalf("scanSpec = %d, want %d", got, len(b)-1)
	}
}

// TestEqualBytes: equalBytes is bytes.Equal for every length and every
// position of one differing byte.
func TestEqualBytes(t *testing.T) {
	for n := 0; n < 80; n++ {
		a := []byte(strings.Repeat("x", n))
		if !equalBytes(a, bytes.Clone(a)) {
			t.Fatalf("len %d: equal bytes reported different", n)
		}
		if equalBytes(a, append(bytes.Clone(a), 'x')) {
			t.Fatalf("len %d: different lengths reported equal", n)
		}
		for i := 0; i < n; i++ {
			b := bytes.Clone(a)
			b[i] ^= 0x80
			if equalBytes(a, b) {
				t.Fatalf("len %d: byte %d differs but reported equal", n, i)
			}
		}
	}
}

// TestEqualBytesMaskedDifference (found by the red team): a difference
// in one word of a 32-byte block whose bits a later word of the block
// also sets (ASCII text, mostly) must still count. Go gives | and ^ one
// precedence, so an unparenthesised a0^b0|a1^b1 is ((a0^b0)|a1)^b1,
// which such a later word cancels; two specs with one hash would then
// share a parse ("/repos/issues" rendered as "/rapos/issues").
func TestEqualBytesMaskedDifference(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    string
	}{
		{"word0_bits_in_word1", "\x00\x00\x00\x00\x00\x00\x00\x00" + strings.Repeat("\xff", 24)},
		{"spec", `{"op":{"path":"/repos/issues","method":"GET"},"host":"api.example.com"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := []byte(tc.a)
			for i := 0; i < len(a); i++ {
				for bit := 0; bit < 8; bit++ {
					b := bytes.Clone(a)
					b[i] ^= 1 << bit
					if equalBytes(a, b) {
						t.Fatalf("%q and %q differ (byte %d, bit %d) but reported equal", a, b, i, bit)
					}
				}
			}
		})
	}
	t.Run("spec_cache", func(t *testing.T) {
		a := []byte(`{"op":{"path":"/repos/issues","method":"GET"},"host":"api.example.com"}`)
		b := []byte(`{"op":{"path":"/rapos/issues","method":"GET"},"host":"api.example.com"}`)
		const h = 3 // one hash for both (a crafted spec collides at will): the bytes decide
		spa, err := specFor(a, h)
		if err != nil {
			t.Fatal(err)
		}
		spb, err := specFor(b, h)
		if err != nil {
			t.Fatal(err)
		}
		if spa == spb {
			t.Fatal("two specs that differ in the path share one parse")
		}
	})
}

// FuzzSpecLookup: scanSpec and equalBytes agree with bytes.IndexByte and
// bytes.Equal on any input (a against b, and against itself with one
// byte changed), and equal specs hash alike.
func FuzzSpecLookup(f *testing.F) {
	f.Add([]byte(`{"host":"api.example.com","op":{"method":"GET","path":"/x"}}`+"\n{}"), []byte("x"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		na, ha := scanSpec(a)
		if want := bytes.IndexByte(a, '\n'); na != want {
			t.Fatalf("scanSpec(%q) = %d, want %d", a, na, want)
		}
		if equalBytes(a, b) != bytes.Equal(a, b) {
			t.Fatalf("equalBytes(%q, %q) = %v", a, b, !bytes.Equal(a, b))
		}
		// Random pairs seldom have one length: also a with one byte
		// changed, where b says which and how.
		if len(a) > 0 && len(b) >= 2 {
			c := bytes.Clone(a)
			c[int(b[0])%len(a)] ^= b[1] | 1
			if equalBytes(a, c) {
				t.Fatalf("equalBytes(%q, %q) = true", a, c)
			}
		}
		if _, hb := scanSpec(bytes.Clone(a)); hb != ha {
			t.Fatal("the same bytes hashed differently")
		}
	})
}

// TestSpecCacheExact: two specs that differ in one byte get their own
// parse, and the same bytes again get the cached one.
func TestSpecCacheExact(t *testing.T) {
	a := []byte(`{"host":"api.example.com","op":{"method":"GET","path":"/aaaa"}}`)
	b := []byte(`{"host":"api.example.com","op":{"method":"GET","path":"/aaab"}}`)
	spa, err := specFor(a, 1) // one hash for both: the bytes decide
	if err != nil {
		t.Fatal(err)
	}
	spb, err := specFor(b, 1)
	if err != nil {
		t.Fatal(err)
	}
	if spa == spb {
		t.Fatal("two specs share one parse")
	}
	again, err := specFor(bytes.Clone(a), 1)
	if err != nil || again != spa {
		t.Fatalf("the same spec was parsed again (%v)", err)
	}
	req, _, err := Render(append(append(bytes.Clone(b), '\n'), "{}"...))
	if err != nil || !bytes.Contains(req, []byte("/aaab")) {
		t.Fatalf("render of b: %s, %v", req, err)
	}
}
