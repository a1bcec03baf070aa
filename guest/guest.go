// Package guest embeds the executor compiled to WebAssembly
// (executor.wasm, built from guest/wasm and guest/executor by `make guest`).
//
// The module is reproducible: building the same source with the same Go
// toolchain yields the same bytes, and TestWasmUpToDate fails when the
// committed module is stale against its source.
package guest

import _ "embed"

//go:embed executor.wasm
var wasm []byte

// Wasm returns a copy of the embedded executor module (a WASI reactor
// exporting _initialize, run and memory; imports listed in docs/ABI.md).
func Wasm() []byte { return append([]byte(nil), wasm...) }

// GoVersion is the Go toolchain the committed module was built with;
// rebuilding with another may change its bytes.
const GoVersion = "go1.26.8"
