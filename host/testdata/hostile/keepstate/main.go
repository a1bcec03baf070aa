//go:build wasip1

// Command keepstate is a hostile guest that keeps state from run to run
// in a package-level slice: every run (the host's warm-up ops included)
// keeps 64 KiB more. On entry, before it allocates anything, it reports
// the size of linear memory, how many runs' leftovers it holds and an
// FNV-1a hash of every byte of memory ("pages=<n> kept=<n> sum=<hex>").
// Every op of a pooled instance must start from the template, so every
// op reports the same line (TestPoolFirstInstanceIsTemplate); an instance
// that ran the warm-up twice reports more.
package main

import (
	"unsafe"

	"github.com/elevenmessenger/pinned/host/testdata/hostile/hpin"
)

var keep [][]byte

func main() {}

func hex(v uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[v&15]
		v >>= 4
	}
	return string(b[:])
}

//go:wasmexport run
func run() int32 {
	pages := hpin.MemoryPages()
	kept := len(keep)
	end := uintptr(pages) * 65536
	h := uint64(14695981039346656037)
	for a := uintptr(1); a < end; a++ {
		h ^= uint64(*(*byte)(unsafe.Pointer(a)))
		h *= 1099511628211
	}
	line := "pages=" + hpin.Itoa(int64(pages)) + " kept=" + hpin.Itoa(int64(kept)) + " sum=" + hex(h) + "\n"
	b := make([]byte, 64<<10)
	for i := range b {
		b[i] = byte(i)
	}
	keep = append(keep, b)
	hpin.Print(line)
	return hpin.Request(hpin.Honest())
}
