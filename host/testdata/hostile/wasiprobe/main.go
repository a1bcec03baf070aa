//go:build wasip1

// Command wasiprobe is a hostile guest that probes what WASI gives it: the
// environment, arguments, descriptors other than stdout/stderr, and the
// clocks' precision. (Files and sockets need imports the host does not
// provide at all; see the imports guest.) It prints one
// line of "key=value" findings on stdout and then makes a valid request.
package main

import (
	"unsafe"

	"github.com/elevenmessenger/pinned/host/testdata/hostile/hpin"
)

//go:wasmimport wasi_snapshot_preview1 environ_sizes_get
func environSizesGet(n, size uint32) int32

//go:wasmimport wasi_snapshot_preview1 args_sizes_get
func argsSizesGet(argc, size uint32) int32

//go:wasmimport wasi_snapshot_preview1 clock_time_get
func clockTimeGet(id uint32, precision uint64, result uint32) int32

func p32(v *uint32) uint32 { return uint32(uintptr(unsafe.Pointer(v))) }
func p64(v *uint64) uint32 { return uint32(uintptr(unsafe.Pointer(v))) }

func main() {}

//go:wasmexport run
func run() int32 {
	var n, size uint32 = 99, 99
	environSizesGet(p32(&n), p32(&size))
	out := "env=" + hpin.Itoa(int64(n)) + "/" + hpin.Itoa(int64(size))
	n, size = 99, 99
	argsSizesGet(p32(&n), p32(&size))
	out += " args=" + hpin.Itoa(int64(n)) + "/" + hpin.Itoa(int64(size))
	bad := 0
	for fd := int32(0); fd < 64; fd++ {
		if fd != 1 && fd != 2 && hpin.FdWrite(fd, []byte("x")) == 8 {
			bad++
		}
	}
	out += " ebadf_writes=" + hpin.Itoa(int64(bad))
	var t uint64
	clockTimeGet(1, 1, p64(&t))
	out += " mono_nonzero=" + hpin.Itoa(int64(t/1_000_000_000))
	unaligned := 0
	for i := 0; i < 200; i++ {
		clockTimeGet(1, 1, p64(&t))
		if t%1_000_000 != 0 {
			unaligned++
		}
		clockTimeGet(0, 1, p64(&t))
		if t%1_000_000 != 0 {
			unaligned++
		}
	}
	out += " clock_sub_ms=" + hpin.Itoa(int64(unaligned))
	out += " cputime_clock=" + hpin.Itoa(int64(clockTimeGet(2, 1, p64(&t))))
	hpin.Print(out + "\n")
	return hpin.Request(hpin.Honest())
}
