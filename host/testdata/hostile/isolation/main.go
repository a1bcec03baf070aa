//go:build wasip1

// Command isolation is a hostile guest that tries to carry state from one
// op to the next. "write" leaves a marker in a package variable (linear
// memory's data) and on the heap; "grow" grows memory and leaves it in the
// new page; "scribble" flips a byte in every page; "read" and "pages" scan
// all of linear memory (memory.size) for the marker; "write_then_read"
// does both in one op (the positive control: it must find it). The finding is reported on stdout
// ("marker=found" / "marker=absent"), which the tests read from the op's
// log; the request is the honest one for the args (request binding leaves
// a guest no other channel into the request).
package main

import (
	"unsafe"

	"github.com/elevenmessenger/pinned/host/testdata/hostile/hpin"
)

// needle is the marker XOR 0x55, so the plain marker never sits in the
// module's own data: only a write puts it in memory.
// ("PINNED-ISOLATION-MARKER-7f3a9c" XOR 0x55; the plain text is nowhere in the module.)
var needle = []byte{0x05, 0x1c, 0x1b, 0x1b, 0x10, 0x11, 0x78, 0x1c, 0x06, 0x1a, 0x19, 0x14, 0x01, 0x1c, 0x1a, 0x1b, 0x78, 0x18, 0x14, 0x07, 0x1e, 0x10, 0x07, 0x78, 0x62, 0x33, 0x66, 0x34, 0x6c, 0x36}

var dataMarker [64]byte
var heapMarker []byte
var counter int64

func main() {}

func write() {
	for i, c := range needle {
		dataMarker[i] = c ^ 0x55
	}
	heapMarker = make([]byte, 4096)
	for i, c := range needle {
		heapMarker[100+i] = c ^ 0x55
	}
	counter++
}

func read() bool { return scan(needle) > 0 || counter > 1 }

// tokenNeedle is the provider fake's GitHub token XOR 0x55: "scan_token"
// looks for the credential of its own op in every byte it can reach.
// (Stored XORed, so the plain token is nowhere in the module.)
var tokenNeedle = []byte{0x32, 0x3d, 0x25, 0x0a, 0x33, 0x34, 0x3e, 0x30, 0x0a, 0x25, 0x3c, 0x3b, 0x3b, 0x30, 0x31, 0x0a, 0x32, 0x3c, 0x21, 0x3d, 0x20, 0x37, 0x0a, 0x21, 0x3a, 0x3e, 0x30, 0x3b, 0x0a, 0x65, 0x65, 0x65, 0x65, 0x65, 0x65, 0x65, 0x65, 0x65, 0x65, 0x65, 0x65}

// scan counts the places the XORed needle occurs in all of linear memory.
func scan(n []byte) int {
	end := uintptr(hpin.MemoryPages()) * 65536
	found := 0
	for a := uintptr(1); a+uintptr(len(n)) < end; a++ {
		if *(*byte)(unsafe.Pointer(a)) != n[0]^0x55 {
			continue
		}
		match := true
		for i := 1; i < len(n); i++ {
			if *(*byte)(unsafe.Pointer(a + uintptr(i))) != n[i]^0x55 {
				match = false
				break
			}
		}
		if match {
			found++
		}
	}
	return found
}

func request(found bool) int32 {
	owner := "absent"
	if found {
		owner = "found"
	}
	hpin.Print("marker=" + owner + " counter=" + hpin.Itoa(counter) + "\n")
	return hpin.Request(hpin.Honest())
}

//go:wasmexport run
func run() int32 {
	name, _ := hpin.Attack()
	switch name {
	case "write":
		write()
		return request(false)
	case "read":
		return request(read())
	case "write_then_read":
		write()
		return request(read())
	case "grow":
		// Grow memory by one page and leave the marker there; memory.size
		// and that page must look fresh to the next op.
		old := hpin.GrowMemory(1)
		if old > 0 {
			base := uintptr(old) * 65536
			for i, c := range needle {
				*(*byte)(unsafe.Pointer(base + uintptr(i))) = c ^ 0x55
			}
		}
		hpin.Print("grew_from=" + hpin.Itoa(int64(old)) + "\n")
		return request(false)
	case "pages":
		hpin.Print("pages=" + hpin.Itoa(int64(hpin.MemoryPages())) + "\n")
		return request(read())
	case "scribble":
		// Flip a byte in every page of linear memory except the few pages
		// of its own stack, without growing memory, then return at once
		// without a request (the rest of the runtime's memory is now
		// garbage). The run returns normally, so the host resets and keeps
		// the instance: the reset must undo every page.
		var local int
		sp := uintptr(unsafe.Pointer(&local)) &^ 4095
		end := uintptr(hpin.MemoryPages()) * 65536
		for a := uintptr(4096); a < end; a += 4096 {
			if a+3*4096 >= sp && a <= sp+3*4096 {
				continue
			}
			*(*byte)(unsafe.Pointer(a + 128)) ^= 0xA5
		}
		return -1
	case "scan_token":
		// The host injects the credential after the guest is gone: it is
		// never in guest memory. (The positive control passes the token
		// in the args, which do enter memory.)
		return request(scan(tokenNeedle) > 0)
	}
	return -1
}
