//go:build wasip1

// Command wasm is the guest: the executor compiled with GOOS=wasip1
// GOARCH=wasm as a WASI reactor (-buildmode=c-shared). The host calls
// _initialize once per instance, then run once per op.
//
// run reads the op input (pin_v1.input_len, pin_v1.input_read), renders the
// request with package executor, and hands it to the host
// (pin_v1.request), or reports the argument that broke its declaration
// (pin_v1.reject). It never sees the credential or the response: the host
// injects the one and projects the other (docs/ABI.md).
package main

import (
	"unsafe"

	"github.com/elevenmessenger/pinned/guest/executor"
	"github.com/elevenmessenger/pinned/internal/abi"
)

//go:wasmimport pin_v1 input_len
func inputLen() int32

//go:wasmimport pin_v1 input_read
func inputRead(buf unsafe.Pointer, n int32) int32

//go:wasmimport pin_v1 request
func request(buf unsafe.Pointer, n int32) int32

//go:wasmimport pin_v1 reject
func reject(reason int32, name unsafe.Pointer, n int32) int32

// inbuf and renderer are reused from op to op (within one instance) to
// spare allocations; they hold only the current op's input and request
// (under the reset strategy, the template's, grown by the warm-up ops).
var (
	inbuf    []byte
	renderer executor.Renderer
)

// errInput is run's result when the host's input cannot be used.
const errInput = -100

//go:wasmexport run
func run() int32 {
	n := inputLen()
	if n <= 0 {
		return abi.EINVAL
	}
	if int(n) > cap(inbuf) {
		inbuf = make([]byte, n)
	}
	buf := inbuf[:n]
	if r := inputRead(unsafe.Pointer(&buf[0]), n); r < 0 {
		return r
	}
	req, rej, err := renderer.Render(buf)
	switch {
	case err != nil:
		return errInput
	case rej != nil:
		name := []byte(rej.Arg)
		var p unsafe.Pointer
		if len(name) > 0 {
			p = unsafe.Pointer(&name[0])
		}
		return reject(rej.Reason, p, int32(len(name)))
	}
	return request(unsafe.Pointer(&req[0]), int32(len(req)))
}

func main() {}
