package host

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// TestBudgetGlobalUnreachable: a module naming the global index the
// budget takes (one past its own) must stay invalid after Instrument,
// wherever it names it: code, a global initializer, a data or element
// segment offset, an element expression, an export.
func TestBudgetGlobalUnreachable(t *testing.T) {
	base := func() *wmod {
		return &wmod{
			types:   [][2][]byte{{nil, nil}, {nil, {wI32}}, {{wI32, wI64, wI32}, {wI32}}},
			imports: []wimport{{"wasi_snapshot_preview1", "clock_time_get", 2}, {"wasi_snapshot_preview1", "sched_yield", 1}},
			funcs:   []wfunc{{typ: 0}, {typ: 1, code: []byte{0x41, 0x00}}},
			memMin:  1, memMax: -1,
			globals: [][]byte{{wI32, 0x01, 0x41, 0x05, 0x0b}}, // global 0; the budget will be 1
			exports: []wexport{{"_initialize", 0, 2}, {"run", 0, 3}, {"memory", 2, 0}},
			start:   -1,
		}
	}
	cases := map[string]func(m *wmod){
		"code global.get":    func(m *wmod) { m.funcs[1].code = []byte{0x23, 0x01} },
		"code global.set":    func(m *wmod) { m.funcs[1].code = []byte{0x41, 0x00, 0x24, 0x01, 0x41, 0x00} },
		"global initializer": func(m *wmod) { m.globals = append(m.globals, []byte{wI32, 0x00, 0x23, 0x02, 0x0b}) },
		"data offset":        func(m *wmod) { m.data = [][]byte{{0x00, 0x23, 0x01, 0x0b, 0x01, 0xaa}} },
		"elem offset": func(m *wmod) {
			m.tables = [][]byte{{0x70, 0x00, 0x10}}
			m.elems = [][]byte{{0x00, 0x23, 0x01, 0x0b, 0x01, 0x02}}
		},
		"elem expression": func(m *wmod) {
			m.tables = [][]byte{{0x70, 0x00, 0x10}}
			m.globals = append(m.globals, []byte{0x70, 0x00, 0xd0, 0x70, 0x0b})
			m.elems = [][]byte{{0x04, 0x41, 0x00, 0x0b, 0x01, 0x23, 0x02, 0x0b}}
		},
		"export": func(m *wmod) { m.exports = append(m.exports, wexport{"b", 3, 1}) },
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			m := base()
			edit(m)
			plan, err := planGuest(m.bytes())
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
