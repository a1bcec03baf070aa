package sandbox

import (
	"context"
	"testing"

	"github.com/elevenmessenger/pinned/internal/testing/wasmtest"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// runBoth compiles wasm as given and as planGuest instruments it
// (CoreFeaturesV2, a sched_yield returning 0), and returns run's result
// in each.
func runBoth(t *testing.T, wasm []byte) (orig, inst uint64) {
	t.Helper()
	plan, err := planGuest(wasm)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	run := func(b []byte) uint64 {
		ctx := context.Background()
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(api.CoreFeaturesV2))
		defer rt.Close(ctx)
		if err := instantiateWASI(ctx, rt); err != nil {
			t.Fatal(err)
		}
		m, err := rt.InstantiateWithConfig(ctx, b, wazero.NewModuleConfig().WithStartFunctions())
		if err != nil {
			t.Fatalf("instantiate: %v", err)
		}
		out, err := m.ExportedFunction("run").Call(ctx)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		return out[0]
	}
	return run(wasm), run(plan.wasm)
}

// TestInstrumentKeepsSemantics: loops and blocks with parameters
// and multiple results, typed select, br_table out of a loop with
// values, all under the inserted countdown (which runs at the loop head
// with the loop's parameters on the stack).
func TestInstrumentKeepsSemantics(t *testing.T) {
	// type 5: (i32) -> i32, type 6: (i32 i32) -> (i32 i32), type 7: () -> (i32 i32)
	mk := func(run []byte, locals []byte) []byte {
		m := &wasmtest.Module{
			Types: [][2][]byte{
				{nil, nil}, {nil, {wasmtest.I32}}, {{wasmtest.I32, wasmtest.I64, wasmtest.I32}, {wasmtest.I32}}, {{wasmtest.I32}, nil}, {{wasmtest.I32}, {wasmtest.I32}},
				{{wasmtest.I32}, {wasmtest.I32}}, {{wasmtest.I32, wasmtest.I32}, {wasmtest.I32, wasmtest.I32}}, {nil, {wasmtest.I32, wasmtest.I32}},
			},
			Imports: []wasmtest.Import{{Mod: "wasi_snapshot_preview1", Name: "clock_time_get", Type: 2}, {Mod: "wasi_snapshot_preview1", Name: "sched_yield", Type: 1}},
			Funcs:   []wasmtest.Func{{Type: 0}, {Type: 1, Code: run, Locals: locals}},
			MemMin:  1, MemMax: -1,
			Exports: []wasmtest.Export{{Name: "_initialize", Kind: 0, Idx: 2}, {Name: "run", Kind: 0, Idx: 3}, {Name: "memory", Kind: 2, Idx: 0}},
			Start:   -1,
		}
		return m.Bytes()
	}
	cases := map[string][]byte{
		// 5000 iterations of loop (param i32) (result i32), counting down
		"loop with a param": {0x41, 0x88, 0x27, 0x03, 0x05, 0x41, 0x01, 0x6b, 0x22, 0x00, 0x20, 0x00, 0x0d, 0x00, 0x0b},
		// loop (i32 i32) -> (i32 i32): (a, b) -> (a-1, b+2) until a == 0; result b
		"loop with two params and results": {0x41, 0xd0, 0x0f, 0x41, 0x00, 0x03, 0x06,
			0x21, 0x01, 0x41, 0x01, 0x6b, 0x22, 0x00, 0x20, 0x01, 0x41, 0x02, 0x6a, 0x20, 0x00, 0x0d, 0x00, 0x0b,
			0x21, 0x01, 0x1a, 0x20, 0x01},
		// block (i32 i32) -> (i32 i32) around typed select
		"block with params, typed select": {0x41, 0x07, 0x41, 0x09, 0x02, 0x06, 0x41, 0x00, 0x1c, 0x01, 0x7f, 0x41, 0x05, 0x0b, 0x6a},
		// loop returning through br_table out of a nested loop with a value
		"br_table out of nested loops": {0x02, 0x7f, 0x41, 0x02, 0x03, 0x05, 0x03, 0x05, 0x41, 0x01, 0x6b, 0x22, 0x00, 0x20, 0x00,
			0x0e, 0x02, 0x03, 0x01, 0x01, 0x0b, 0x0b, 0x0b},
	}
	// memory.fill then memory.copy, then load: 0x07070707
	cases["bulk memory"] = []byte{0x41, 0x00, 0x41, 0x07, 0x41, 0xe4, 0x00, 0xfc, 0x0b, 0x00,
		0x41, 0xc8, 0x01, 0x41, 0x00, 0x41, 0xe4, 0x00, 0xfc, 0x0a, 0x00, 0x00, 0x41, 0xfa, 0x01, 0x28, 0x02, 0x00}
	// a bulk instruction in unreachable code (polymorphic stack)
	cases["bulk in unreachable code"] = []byte{0x02, 0x40, 0x0c, 0x00, 0xfc, 0x0b, 0x00, 0x0b, 0x41, 0x2a}
	// 3000 straight-line adds
	straight := []byte{0x41, 0x00}
	for i := 0; i < 3000; i++ {
		straight = append(straight, 0x41, 0x01, 0x6a)
	}
	cases["straight-line code"] = straight
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			o, i := runBoth(t, mk(run, []byte{0x01, 0x02, 0x7f}))
			t.Logf("original %d, instrumented %d", o, i)
			if o != i {
				t.Fatalf("instrumented run returned %d, the original %d", i, o)
			}
		})
	}
}
