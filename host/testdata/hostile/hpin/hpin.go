//go:build wasip1

// Package hpin gives the hostile test guests raw access to the pin_v1
// imports: pointers and lengths are the guest's to choose, so a guest can
// pass out-of-bounds values on purpose.
package hpin

import (
	"unsafe"

	"github.com/elevenmessenger/pinned/internal/jsonv"
)

//go:wasmimport pin_v1 input_len
func InputLen() int32

//go:wasmimport pin_v1 input_read
func InputRead(buf, n uint32) int32

//go:wasmimport pin_v1 request
func RequestRaw(buf, n uint32) int32

//go:wasmimport pin_v1 reject
func RejectRaw(reason int32, name, n uint32) int32

// Ptr is the guest address of b's first byte (0 for an empty slice).
func Ptr(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

// Request submits s as the request encoding and returns the host's code.
func Request(s string) int32 {
	b := []byte(s)
	return RequestRaw(Ptr(b), uint32(len(b)))
}

// Attack reads the op input (the op spec, a newline, the caller's args)
// and returns the caller's "attack" arg and the decoded args object.
func Attack() (string, *jsonv.Value) {
	n := InputLen()
	if n <= 0 {
		return "", nil
	}
	buf := make([]byte, n)
	if InputRead(Ptr(buf), uint32(n)) != n {
		return "", nil
	}
	nl := 0
	for nl < len(buf) && buf[nl] != '\n' {
		nl++
	}
	if nl == len(buf) {
		return "", nil
	}
	args, err := jsonv.Parse(buf[nl+1:])
	if err != nil {
		return "", nil
	}
	if a := args.Get("attack"); a != nil {
		return a.S, &args
	}
	return "", &args
}

// Itoa formats n without strconv, to keep the guests small.
func Itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

//go:wasmimport wasi_snapshot_preview1 fd_write
func fdWrite(fd int32, iovs uint32, n uint32, nwritten uint32) int32

// FdWrite writes b to fd through WASI fd_write and returns the errno.
func FdWrite(fd int32, b []byte) int32 {
	iov := make([]uint32, 2)
	iov[0], iov[1] = Ptr(b), uint32(len(b))
	var nw [1]uint32
	return fdWrite(fd, uint32(uintptr(unsafe.Pointer(&iov[0]))), 1, uint32(uintptr(unsafe.Pointer(&nw[0]))))
}

// Print writes s to stdout (the op's bounded log).
func Print(s string) { FdWrite(1, []byte(s)) }

// MemoryPages returns the size of linear memory in 64 KiB pages
// (memory.size).
func MemoryPages() int32

// GrowMemory grows linear memory by pages (memory.grow) and returns the
// old size in pages, or -1.
func GrowMemory(pages int32) int32
