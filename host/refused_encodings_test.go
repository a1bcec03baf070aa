package host

import (
	"context"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/testing/wasmtest"
)

// TestHostileEncodingsRefused: hostile encodings and features the host must not
// load (each case is one module; New must fail).
func TestHostileEncodingsRefused(t *testing.T) {
	one := func(run []byte, extra ...wasmtest.Func) []byte { return yieldGuest(1, run, extra...) }
	cases := map[string][]byte{
		// global.get of the budget index (1 here: no own globals... the
		// module has none, so budget is global 0) with a redundant LEB byte.
		"budget via padded LEB":     one([]byte{0x23, 0x80, 0x00, 0x1a, 0x41, 0x00}),
		"budget.set via padded LEB": one([]byte{0x41, 0x00, 0x24, 0x80, 0x80, 0x00, 0x41, 0x00}),
		"tail call (return_call)":   one([]byte{0x12, 0x04}, wasmtest.Func{Type: 1, Code: []byte{0x41, 0x00}}),
		"exceptions (try_table)":    one([]byte{0x1f, 0x40, 0x00, 0x0b, 0x41, 0x00}),
		"SIMD v128.const":           one(append(append([]byte{0xfd, 0x0c}, make([]byte, 16)...), 0x1a, 0x41, 0x00)),
		"threads atomic.fence":      one([]byte{0xfe, 0x03, 0x00, 0x41, 0x00}),
		"second code section": func() []byte {
			b := one([]byte{0x41, 0x00})
			return append(b, wasmtest.Section(10, wasmtest.Vec([]byte{0x02, 0x00, 0x0b}))...)
		}(),
		"export named pinned.budget": func() []byte {
			m := &wasmtest.Module{
				Types:   [][2][]byte{{nil, nil}, {nil, {wasmtest.I32}}},
				Imports: []wasmtest.Import{{Mod: "wasi_snapshot_preview1", Name: "sched_yield", Type: 1}},
				Funcs:   []wasmtest.Func{{Type: 0}, {Type: 1, Code: []byte{0x41, 0x00}}},
				MemMin:  1, MemMax: -1,
				Exports: []wasmtest.Export{{Name: "_initialize", Kind: 0, Idx: 1}, {Name: "run", Kind: 0, Idx: 2}, {Name: "memory", Kind: 2, Idx: 0}, {Name: "pinned.budget", Kind: 0, Idx: 2}},
				Start:   -1,
			}
			return m.Bytes()
		}(),
		"export named pinned.global.0": func() []byte {
			m := &wasmtest.Module{
				Types:   [][2][]byte{{nil, nil}, {nil, {wasmtest.I32}}},
				Imports: []wasmtest.Import{{Mod: "wasi_snapshot_preview1", Name: "sched_yield", Type: 1}},
				Funcs:   []wasmtest.Func{{Type: 0}, {Type: 1, Code: []byte{0x41, 0x00}}},
				MemMin:  1, MemMax: -1,
				Globals: [][]byte{{wasmtest.I32, 0x01, 0x41, 0x05, 0x0b}},
				Exports: []wasmtest.Export{{Name: "_initialize", Kind: 0, Idx: 1}, {Name: "run", Kind: 0, Idx: 2}, {Name: "memory", Kind: 2, Idx: 0}, {Name: "pinned.global.0", Kind: 0, Idx: 2}},
				Start:   -1,
			}
			return m.Bytes()
		}(),
		"two bounded tables over 2^20 with table.grow": func() []byte {
			m := &wasmtest.Module{
				Types:   [][2][]byte{{nil, nil}, {nil, {wasmtest.I32}}},
				Imports: []wasmtest.Import{{Mod: "wasi_snapshot_preview1", Name: "sched_yield", Type: 1}},
				Funcs:   []wasmtest.Func{{Type: 0}, {Type: 1, Code: []byte{0xd0, 0x70, 0x41, 0x01, 0xfc, 0x0f, 0x01, 0x1a, 0x41, 0x00}}},
				Tables: [][]byte{
					append([]byte{0x70, 0x01, 0x00}, wasmtest.ULEB(1<<20)...),
					append([]byte{0x70, 0x01, 0x00}, wasmtest.ULEB(1<<20)...),
				},
				MemMin: 1, MemMax: -1,
				Exports: []wasmtest.Export{{Name: "_initialize", Kind: 0, Idx: 1}, {Name: "run", Kind: 0, Idx: 2}, {Name: "memory", Kind: 2, Idx: 0}},
				Start:   -1,
			}
			return m.Bytes()
		}(),
	}
	for name, guest := range cases {
		t.Run(name, func(t *testing.T) {
			eng, err := New(context.Background(), Config{Guest: guest, Isolation: IsolationFresh})
			if err == nil {
				eng.Close(context.Background())
				t.Fatalf("loaded")
			}
			t.Logf("refused: %v", err)
		})
	}
}

// TestPaddedBulkOpcodeCharged: memory.fill with its 0xFC
// sub-opcode written with a redundant LEB128 byte (0xfc 0x8b 0x00), in a
// loop, 16 of 32 MiB an iteration: the instrumenter must still see it as
// bulk and charge its length.
func TestPaddedBulkOpcodeCharged(t *testing.T) {
	const timeout = 200 * time.Millisecond
	run := []byte{0x03, 0x40} // loop
	for i := 0; i < 16; i++ {
		run = append(run, 0x41, 0x00, 0x41, 0x00, 0x41)
		run = append(run, wasmtest.SLEB(32<<20)...)
		run = append(run, 0xfc, 0x8b, 0x00, 0x00) // memory.fill, padded sub-opcode
	}
	run = append(run, 0x0c, 0x00, 0x0b, 0x41, 0x00)
	d, err, gc := runPastDeadline(t, yieldGuest(512, run), timeout)
	t.Logf("op: %v after %v (deadline %v); longest stall %v", err, d, timeout, gc)
	if err == nil || err.Code != api.CodeTimeout || d > timeout+deadlineSlack {
		t.Errorf("op: %v after %v, want a timeout near %v", err, d, timeout)
	}
}
