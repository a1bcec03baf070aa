package executor

import "unsafe"

// The spec cache's scan and comparison read the op input 8 bytes at a
// time. Go compiles byte loops on wasm to one load per byte, and its
// runtime's own string comparison there is such a loop; wasm, amd64 and
// arm64 (the guest and the host's platforms) all load unaligned words.

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
	ones      = 0x0101010101010101
	highs     = 0x8080808080808080
	newlines  = '\n' * ones
)

// word is the 8 bytes of b at i, in the machine's byte order; i+8 <=
// len(b) (checked).
func word(b []byte, i int) uint64 {
	_ = b[i+7]
	return *(*uint64)(unsafe.Pointer(&b[i]))
}

// scanSpec returns the index of the first '\n' in input (-1 if none) and
// a hash (FNV-1a over words, then bytes) of the bytes before it: the op
// spec. The hash only picks a spec cache bucket; entries are compared
// whole.
func scanSpec(input []byte) (int, uint64) {
	h := uint64(fnvOffset)
	i := 0
	// 32 bytes a step: each loop head costs the guest a countdown
	// (the host's per-op deadline instrumentation) and a bounds check.
	for ; i+32 <= len(input); i += 32 {
		_ = input[i+31]
		w0, w1, w2, w3 := word(input, i), word(input, i+8), word(input, i+16), word(input, i+24)
		if hasNewline(w0)|hasNewline(w1)|hasNewline(w2)|hasNewline(w3) != 0 {
			break
		}
		h = (((h^w0)*fnvPrime^w1)*fnvPrime^w2)*fnvPrime ^ w3
		h *= fnvPrime
	}
	for ; i+8 <= len(input); i += 8 {
		w := word(input, i)
		if hasNewline(w) != 0 {
			break
		}
		h = (h ^ w) * fnvPrime
	}
	for ; i < len(input); i++ {
		if input[i] == '\n' {
			return i, h
		}
		h = (h ^ uint64(input[i])) * fnvPrime
	}
	return -1, h
}

// hasNewline is non-zero if and only if a byte of w is '\n' (the
// "determine if a word has a zero byte" bit trick, on w XOR newlines).
func hasNewline(w uint64) uint64 {
	x := w ^ newlines
	return (x - ones) &^ x & highs
}

// equalBytes reports whether a and b hold the same bytes, as bytes.Equal.
func equalBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	i := 0
	for ; i+32 <= len(a); i += 32 {
		_, _ = a[i+31], b[i+31]
		// Parenthesised: Go gives | and ^ one precedence, left to right.
		if (word(a, i)^word(b, i))|(word(a, i+8)^word(b, i+8))|(word(a, i+16)^word(b, i+16))|(word(a, i+24)^word(b, i+24)) != 0 {
			return false
		}
	}
	for ; i+8 <= len(a); i += 8 {
		if word(a, i) != word(b, i) {
			return false
		}
	}
	for ; i < len(a); i++ {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
