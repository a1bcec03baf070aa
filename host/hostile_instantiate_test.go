package host

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/internal/testing/wasmtest"
)

// vmSizeMiB is the process's virtual size (VmSize of /proc/self/status).
func vmSizeMiB(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmSize:" {
			n, _ := strconv.Atoi(f[1])
			return n >> 10
		}
	}
	t.Skip("no VmSize")
	return 0
}

// TestFailedInstantiationFreesMemory (found by the red team, then
// through a trapping start function, now refused): when instantiation
// fails after the pool allocated the instance's memory reservation (an
// mmap of MemoryLimitPages*64 KiB), wazero returns without closing the
// module, so the host must free it itself — else every failing op leaked
// 32 MiB of address space until the process died. Here instantiation
// fails on a data segment past the end of memory.
func TestFailedInstantiationFreesMemory(t *testing.T) {
	m := &wasmtest.Module{
		Types:   [][2][]byte{{nil, nil}, {nil, {wasmtest.I32}}},
		Imports: []wasmtest.Import{{Mod: "wasi_snapshot_preview1", Name: "sched_yield", Type: 1}}, // instrumentable: pooled
		Funcs: []wasmtest.Func{
			{Type: 0},                           // 1: _initialize
			{Type: 1, Code: []byte{0x41, 0x00}}, // 2: run
		},
		MemMin: 1, MemMax: -1, Start: -1,
		Exports: []wasmtest.Export{{Name: "_initialize", Kind: 0, Idx: 1}, {Name: "run", Kind: 0, Idx: 2}, {Name: "memory", Kind: 2, Idx: 0}},
		Data:    [][]byte{wasmtest.Data(70000, []byte("past the end"))},
	}
	wasm := m.Bytes()
	if _, err := New(context.Background(), Config{Guest: wasm}); err == nil || !strings.Contains(err.Error(), "instantiate") {
		t.Fatalf("New: %v, want an instantiation failure", err)
	}
	before := vmSizeMiB(t)
	const n = 100
	for i := 0; i < n; i++ {
		New(context.Background(), Config{Guest: wasm})
	}
	after := vmSizeMiB(t)
	t.Logf("virtual size: %d MiB before, %d MiB after %d failed instantiations", before, after, n)
	if after-before > n*4 { // a leak is 32 MiB each
		t.Fatalf("%d failed instantiations grew the address space by %d MiB", n, after-before)
	}
}
