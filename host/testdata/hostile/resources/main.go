//go:build wasip1

// Command resources is a hostile guest that attacks the host's resource
// bounds and the pin_v1/WASI argument checks, chosen by the "attack" arg.
// Probes print "codes=<c1>,<c2>,..." on stdout: the codes the host
// returned, in the order the attack lists them.
package main

import (
	"unsafe"

	"github.com/elevenmessenger/pinned/host/testdata/hostile/hpin"
)

//go:wasmimport wasi_snapshot_preview1 clock_time_get
func clockTimeGet(id uint32, precision uint64, result uint32) int32

//go:wasmimport wasi_snapshot_preview1 random_get
func randomGet(buf, n uint32) int32

//go:wasmimport wasi_snapshot_preview1 args_sizes_get
func argsSizesGet(argc, size uint32) int32

//go:wasmimport wasi_snapshot_preview1 environ_sizes_get
func environSizesGet(n, size uint32) int32

//go:wasmimport wasi_snapshot_preview1 poll_oneoff
func pollOneoff(in, out, n, nevents uint32) int32

//go:wasmimport wasi_snapshot_preview1 fd_write
func fdWrite(fd int32, iovs, n, nwritten uint32) int32

// valid is the honest request for the op's args (the one the host binds
// the op to), rendered by the shipped executor.
func valid() string { return hpin.Honest() }

// oob is an address far past any memory the guest has.
const oob = 0xFFFFFF00

var sink int64

func main() {}

func report(codes ...int32) {
	s := "codes="
	for i, c := range codes {
		if i > 0 {
			s += ","
		}
		s += hpin.Itoa(int64(c))
	}
	hpin.Print(s + "\n")
}

//go:wasmexport run
func run() int32 {
	name, _ := hpin.Attack()
	switch name {
	case "loop":
		for {
			sink++
		}
	case "memory":
		var keep [][]byte
		for {
			keep = append(keep, make([]byte, 1<<20))
			sink += int64(len(keep))
		}
	case "host_calls":
		var last int32
		limited := int32(0)
		for i := 0; i < 1000; i++ {
			if last = hpin.InputLen(); last < 0 {
				limited++
			}
		}
		code := hpin.Request(valid())
		report(last, code)
		return code
	case "log_flood":
		chunk := make([]byte, 64<<10)
		for i := range chunk {
			chunk[i] = 'x'
		}
		for i := 0; i < 160; i++ { // 10 MiB
			hpin.FdWrite(1, chunk)
			hpin.FdWrite(2, chunk)
		}
		return hpin.Request(valid())
	case "trap":
		var p *int64
		sink = *p
	case "panic":
		panic("hostile guest panics")
	case "after_result":
		c1 := hpin.Request(valid())
		c2 := hpin.InputLen()
		c3 := hpin.Request(valid())
		c4 := hpin.RejectRaw(3, 0, 0)
		report(c1, c2, c3, c4)
		return 0
	case "pin_oob":
		n := hpin.InputLen()
		buf := make([]byte, 8)
		report(
			hpin.InputRead(oob, uint32(n)),             // EFAULT
			hpin.InputRead(hpin.Ptr(buf), uint32(n)-1), // ERANGE
			hpin.RequestRaw(oob, 64),                   // EFAULT
			hpin.RequestRaw(hpin.Ptr(buf), 0xFFFFFFFF), // ETOOBIG: length past the cap (outcome now fixed)
			hpin.RejectRaw(3, oob, 5),                  // ESTATE: outcome already fixed
		)
		return 0
	case "reject_oob":
		name := []byte("owner")
		report(
			hpin.RejectRaw(3, oob, 5),                          // EFAULT
			hpin.RejectRaw(99, hpin.Ptr(name), 5),              // EINVAL: unknown reason
			hpin.RejectRaw(3, hpin.Ptr(name), 1000),            // EINVAL: name too long
			hpin.RejectRaw(3, hpin.Ptr([]byte("nonesuch")), 8), // EINVAL: not a declared arg
			hpin.RejectRaw(1, hpin.Ptr(name), 5),               // EINVAL: syntax takes no name
		)
		return 0
	case "wasi_oob":
		var iov [2]uint32
		iov[0], iov[1] = oob, 16
		var nw uint32
		var sub [48]byte
		report(
			clockTimeGet(1, 0, oob),
			randomGet(oob, 16),
			randomGet(0, 1<<20), // EINVAL: over the per-call cap
			argsSizesGet(oob, oob),
			environSizesGet(oob, oob),
			pollOneoff(oob, oob, 1, oob),
			pollOneoff(uint32(uintptr(unsafe.Pointer(&sub[0]))), 0, 1000, 0), // EINVAL: too many
			fdWrite(1, oob, 1, uint32(uintptr(unsafe.Pointer(&nw)))),
			fdWrite(1, uint32(uintptr(unsafe.Pointer(&iov[0]))), 1, uint32(uintptr(unsafe.Pointer(&nw)))),
			fdWrite(1, 0, 5000, 0), // EINVAL: too many iovecs
		)
		return 0
	}
	hpin.Print("unknown attack " + name + "\n")
	return -1
}
