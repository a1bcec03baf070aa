// Package guest embeds the executor compiled to WebAssembly
// (executor.wasm, built from guest/wasm and guest/executor by `make guest`).
//
// The module is reproducible: building the same source with the same Go
// toolchain yields the same bytes, and TestWasmUpToDate fails when the
// committed module is stale against its source (and `make check` rebuilds
// it byte for byte). The package imports nothing of ours: the module is
// data, its source is guest/wasm (the wasip1 main) and guest/executor.
package guest

import (
	_ "embed"
	"encoding/hex"
	"unsafe"
)

// wasm is a string so that the linker keeps the module in the program's
// read-only data (Module).
//
//go:embed executor.wasm
var wasm string

// Wasm returns a copy of the embedded executor module (a WASI reactor
// exporting _initialize, run and memory; imports listed in docs/ABI.md).
func Wasm() []byte { return []byte(wasm) }

// Module returns the embedded executor module itself, without a copy,
// for a reader that never writes to it: the host's sandbox, whose start
// then skips copying 2 MB it reads only when its plan cache misses. The
// bytes lie in the program's read-only data, so a write to them faults
// and stops the program instead of changing the module
// (TestModuleReadOnly).
func Module() []byte { return unsafe.Slice(unsafe.StringData(wasm), len(wasm)) }

//go:embed executor.wasm.sha256
var sumHex string

// SHA256 returns the SHA-256 of the embedded module, recorded at build
// time in executor.wasm.sha256 (TestWasmUpToDate checks it), so a start
// need not hash 2.6 MB to find its cached plan.
func SHA256() (sum [32]byte) {
	b, err := hex.DecodeString(sumHex[:min(len(sumHex), 64)])
	if err != nil || len(b) != len(sum) {
		panic("guest: executor.wasm.sha256 is not a SHA-256 in hex; run `make guest`")
	}
	copy(sum[:], b)
	return sum
}

// GoVersion is the Go toolchain the committed module was built with;
// rebuilding with another may change its bytes.
const GoVersion = "go1.26.11"
