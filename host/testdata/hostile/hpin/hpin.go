//go:build wasip1

// Package hpin gives the hostile test guests raw access to the pin_v1
// imports: pointers and lengths are the guest's to choose, so a guest can
// pass out-of-bounds values on purpose.
package hpin

import (
	"unsafe"

	"github.com/elevenmessenger/pinned/guest/executor"
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

// Input reads the op input and splits it: the op spec line, the caller's
// args (which the host has validated and bound the op to), and the test
// harness's instruction line, if any. The host's tests append that line
// (a JSON object such as {"attack":"..."}) after the args through a
// test-only hook, because the args themselves must be valid for the op;
// their args never hold a raw newline, so the last newline starts it.
func Input() (spec, args, harness []byte) {
	n := InputLen()
	if n <= 0 {
		return nil, nil, nil
	}
	buf := make([]byte, n)
	if InputRead(Ptr(buf), uint32(n)) != n {
		return nil, nil, nil
	}
	nl := 0
	for nl < len(buf) && buf[nl] != '\n' {
		nl++
	}
	if nl == len(buf) {
		return buf, nil, nil
	}
	spec, rest := buf[:nl], buf[nl+1:]
	last := -1
	for i := range rest {
		if rest[i] == '\n' {
			last = i
		}
	}
	if last < 0 {
		return spec, rest, nil
	}
	return spec, rest[:last], rest[last+1:]
}

// Attack returns the harness's "attack" member and the decoded harness
// object (nil when there is none).
//
// With no harness line (the host's warm-up ops, which build the template
// every pooled instance starts from) it renders the honest request once
// and drops it, so the executor's caches (parsed specs, compiled
// patterns) are in the template, as the shipped guest's are, and an op's
// Honest does not grow memory.
func Attack() (string, *jsonv.Value) {
	_, _, h := Input()
	if h == nil {
		Honest()
		return "", nil
	}
	v, err := jsonv.Parse(h)
	if err != nil {
		return "", nil
	}
	if a := v.Get("attack"); a != nil {
		return a.S, &v
	}
	return "", &v
}

// Honest renders the request the shipped executor renders from the op
// spec and the args (what the host binds the op to), or "" when the
// executor rejects the args.
func Honest() string {
	spec, args, _ := Input()
	in := append(append(append([]byte(nil), spec...), '\n'), args...)
	req, rej, err := executor.Render(in)
	if err != nil || rej != nil {
		return ""
	}
	return string(req)
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
