package sandbox

import (
	"context"
	"testing"

	"github.com/elevenmessenger/pinned/internal/testing/wasmtest"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// TestBudgetGlobalUnreachable: a module naming the global index the
// budget takes (one past its own) must stay invalid after Instrument,
// wherever it names it: code, a global initializer, a data or element
// segment offset, an element expression, an export.
func TestBudgetGlobalUnreachable(t *testing.T) {
	base := func() *wasmtest.Module {
		return &wasmtest.Module{
			Types:   [][2][]byte{{nil, nil}, {nil, {wasmtest.I32}}, {{wasmtest.I32, wasmtest.I64, wasmtest.I32}, {wasmtest.I32}}},
			Imports: []wasmtest.Import{{Mod: "wasi_snapshot_preview1", Name: "clock_time_get", Type: 2}, {Mod: "wasi_snapshot_preview1", Name: "sched_yield", Type: 1}},
			Funcs:   []wasmtest.Func{{Type: 0}, {Type: 1, Code: []byte{0x41, 0x00}}},
			MemMin:  1, MemMax: -1,
			Globals: [][]byte{{wasmtest.I32, 0x01, 0x41, 0x05, 0x0b}}, // global 0; the budget will be 1
			Exports: []wasmtest.Export{{Name: "_initialize", Kind: 0, Idx: 2}, {Name: "run", Kind: 0, Idx: 3}, {Name: "memory", Kind: 2, Idx: 0}},
			Start:   -1,
		}
	}
	cases := map[string]func(m *wasmtest.Module){
		"code global.get":    func(m *wasmtest.Module) { m.Funcs[1].Code = []byte{0x23, 0x01} },
		"code global.set":    func(m *wasmtest.Module) { m.Funcs[1].Code = []byte{0x41, 0x00, 0x24, 0x01, 0x41, 0x00} },
		"global initializer": func(m *wasmtest.Module) { m.Globals = append(m.Globals, []byte{wasmtest.I32, 0x00, 0x23, 0x02, 0x0b}) },
		"data offset":        func(m *wasmtest.Module) { m.Data = [][]byte{{0x00, 0x23, 0x01, 0x0b, 0x01, 0xaa}} },
		"elem offset": func(m *wasmtest.Module) {
			m.Tables = [][]byte{{0x70, 0x00, 0x10}}
			m.Elems = [][]byte{{0x00, 0x23, 0x01, 0x0b, 0x01, 0x02}}
		},
		"elem expression": func(m *wasmtest.Module) {
			m.Tables = [][]byte{{0x70, 0x00, 0x10}}
			m.Globals = append(m.Globals, []byte{0x70, 0x00, 0xd0, 0x70, 0x0b})
			m.Elems = [][]byte{{0x04, 0x41, 0x00, 0x0b, 0x01, 0x23, 0x02, 0x0b}}
		},
		"export": func(m *wasmtest.Module) { m.Exports = append(m.Exports, wasmtest.Export{Name: "b", Kind: 3, Idx: 1}) },
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			m := base()
			edit(m)
			plan, err := planGuest(m.Bytes())
			if err != nil {
				t.Logf("refused by planGuest: %v", err)
				return
			}
			ctx := context.Background()
			rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(api.CoreFeaturesV2))
			defer rt.Close(ctx)
			if _, err := rt.CompileModule(ctx, plan.wasm); err != nil {
				t.Logf("refused by wazero: %v", err)
				return
			}
			t.Errorf("the instrumented module is valid: it names the budget global")
		})
	}
}
