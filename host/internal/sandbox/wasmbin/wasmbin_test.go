package wasmbin

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/testing/wasmtest"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
)

// mod assembles a module from sections given as (id, body) pairs.
func mod(sections ...any) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	for i := 0; i < len(sections); i += 2 {
		out = appendSection(out, byte(sections[i].(int)), sections[i+1].([]byte))
	}
	return out
}

var (
	// type 0: () -> i32
	typeSec = wasmtest.Vec([]byte{0x60, 0x00, 0x01, 0x7f})
	// function 0: the import wasi_snapshot_preview1.sched_yield
	importSec = wasmtest.Vec(append(appendName(appendName(nil, YieldModule), YieldName), 0x00, 0x00))
	funcSec   = wasmtest.Vec([]byte{0x00})
	// one mutable i32 global, initially 5000
	globalSec = wasmtest.Vec([]byte{0x7f, 0x01, 0x41, 0x88, 0x27, 0x0b})
	memSec    = wasmtest.Vec([]byte{0x00, 0x01})
	// run is function 1
	exportRun = wasmtest.Vec(append(appendName(nil, "run"), 0x00, 0x01))
	// run: loop: global.get 0; i32.const 1; i32.sub; global.set 0;
	// global.get 0; br_if 0; end; global.get 0
	loopBody = wasmtest.Body(0x03, 0x40, 0x23, 0x00, 0x41, 0x01, 0x6b, 0x24, 0x00, 0x23, 0x00, 0x0d, 0x00, 0x0b, 0x23, 0x00, 0x0b)
	// spin: loop: br 0; end; i32.const 0
	spinBody = wasmtest.Body(0x03, 0x40, 0x0c, 0x00, 0x0b, 0x41, 0x00, 0x0b)
)

// compileAndRun runs the module's "run" under a sched_yield that counts
// its calls and, once ctx is done, exits the way the host's does.
func compileAndRun(t *testing.T, ctx context.Context, wasm []byte) (res uint32, yields int, err error) {
	t.Helper()
	rt := wazero.NewRuntime(context.Background())
	defer rt.Close(context.Background())
	_, err = rt.NewHostModuleBuilder(YieldModule).NewFunctionBuilder().
		WithFunc(func(ctx context.Context) int32 {
			yields++
			if ctx.Err() != nil {
				panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
			}
			return 0
		}).Export(YieldName).Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, err := rt.Instantiate(ctx, wasm)
	if err != nil {
		return 0, 0, err
	}
	out, err := m.ExportedFunction("run").Call(ctx)
	if err != nil {
		return 0, yields, err
	}
	return uint32(out[0]), yields, nil
}

func TestInstrument(t *testing.T) {
	orig := mod(secType, typeSec, secImport, importSec, secFunction, funcSec, secMemory, memSec, secGlobal, globalSec, secExport, exportRun, secCode, wasmtest.Vec(loopBody))
	m, err := Parse(orig)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.MutableGlobals) != 1 || m.MutableGlobals[0] != 0 {
		t.Fatalf("mutable globals %v", m.MutableGlobals)
	}
	ins, err := m.Instrument()
	if err != nil {
		t.Fatal(err)
	}
	if m.NotResettable != "" {
		t.Fatalf("not resettable: %s", m.NotResettable)
	}
	want := []string{GlobalExportPrefix + "0", GlobalExportPrefix + "1", GlobalExportPrefix + "2"} // the guest's, the budget, the bulk length
	if strings.Join(ins.Globals, ",") != strings.Join(want, ",") {
		t.Fatalf("globals %v, want %v", ins.Globals, want)
	}
	// The original never yields...
	got, yields, err := compileAndRun(t, context.Background(), orig)
	if err != nil || got != 0 || yields != 0 {
		t.Fatalf("original run = %d, %d yields, %v; want 0, 0", got, yields, err)
	}
	// ...the instrumented module computes the same, and yields once per
	// BudgetInterval checks: one function entry and 5000 loop heads.
	got, yields, err = compileAndRun(t, context.Background(), ins.Wasm)
	if want := (1 + 5000) / BudgetInterval; err != nil || got != 0 || yields != want {
		t.Fatalf("instrumented run = %d, %d yields, %v; want 0, %d yields", got, yields, err, want)
	}
}

// TestInstrumentEndsLoop: an endless loop, instrumented, reaches the
// yield import, which ends it once the context is done.
func TestInstrumentEndsLoop(t *testing.T) {
	m, err := Parse(mod(secType, typeSec, secImport, importSec, secFunction, funcSec, secExport, exportRun, secCode, wasmtest.Vec(spinBody)))
	if err != nil {
		t.Fatal(err)
	}
	ins, err := m.Instrument()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, yields, err := compileAndRun(t, ctx, ins.Wasm)
	var exit *sys.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != sys.ExitCodeDeadlineExceeded {
		t.Fatalf("err %v, want the deadline exit", err)
	}
	if yields < 2 {
		t.Fatalf("%d yields", yields)
	}
}

// TestInstrumentNeedsYield: a module without the yield import (or with
// one of another type) is not instrumentable.
func TestInstrumentNeedsYield(t *testing.T) {
	voidType := wasmtest.Vec([]byte{0x60, 0x00, 0x01, 0x7f}, []byte{0x60, 0x00, 0x00})
	wrongType := wasmtest.Vec(append(appendName(appendName(nil, YieldModule), YieldName), 0x00, 0x01))
	for _, tt := range []struct {
		name string
		wasm []byte
	}{
		{"no import", mod(secType, typeSec, secFunction, funcSec, secExport, wasmtest.Vec(append(appendName(nil, "run"), 0x00, 0x00)), secCode, wasmtest.Vec(spinBody))},
		{"wrong type", mod(secType, voidType, secImport, wrongType, secFunction, funcSec, secExport, exportRun, secCode, wasmtest.Vec(spinBody))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(tt.wasm)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Instrument(); !errors.Is(err, ErrNotInstrumentable) {
				t.Fatalf("err %v, want ErrNotInstrumentable", err)
			}
		})
	}
}

func TestInstrumentRefuses(t *testing.T) {
	tests := []struct {
		name          string
		code          []byte
		extra         []any
		err           error  // from Instrument
		notResettable string // substring
	}{
		{name: "global out of range", code: wasmtest.Body(0x23, 0x05, 0x0b), err: errors.New("names global 5")},
		{name: "table.set", code: wasmtest.Body(0x41, 0x00, 0xd0, 0x70, 0x26, 0x00, 0x41, 0x00, 0x0b), notResettable: "table.set"},
		{name: "data.drop", code: wasmtest.Body(0xfc, 0x09, 0x00, 0x41, 0x00, 0x0b), notResettable: "data.drop"},
		{name: "table.grow", code: wasmtest.Body(0xd0, 0x70, 0x41, 0x01, 0xfc, 0x0f, 0x00, 0x0b), notResettable: "table.grow"},
		{name: "SIMD is not instrumentable", code: wasmtest.Body(0xfd, 0x0c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x1a, 0x41, 0x00, 0x0b), err: ErrNotInstrumentable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wasm := mod(secType, typeSec, secImport, importSec, secFunction, funcSec, secTable, wasmtest.Vec([]byte{0x70, 0x01, 0x01, 0x10}),
				secMemory, memSec, secGlobal, globalSec, secExport, exportRun, secCode, wasmtest.Vec(tt.code))
			m, err := Parse(wasm)
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.Instrument()
			switch {
			case tt.err == ErrNotInstrumentable:
				if !errors.Is(err, ErrNotInstrumentable) {
					t.Fatalf("err %v, want ErrNotInstrumentable", err)
				}
			case tt.err != nil:
				if err == nil || !strings.Contains(err.Error(), tt.err.Error()) {
					t.Fatalf("err %v, want %v", err, tt.err)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(m.NotResettable, tt.notResettable) {
					t.Fatalf("NotResettable %q, want %q", m.NotResettable, tt.notResettable)
				}
			}
		})
	}
	t.Run("table.grow without a maximum", func(t *testing.T) {
		wasm := mod(secType, typeSec, secImport, importSec, secFunction, funcSec, secTable, wasmtest.Vec([]byte{0x70, 0x00, 0x01}),
			secMemory, memSec, secExport, exportRun, secCode, wasmtest.Vec(wasmtest.Body(0xd0, 0x70, 0x41, 0x01, 0xfc, 0x0f, 0x00, 0x0b)))
		m, err := Parse(wasm)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Instrument(); err == nil || !strings.Contains(err.Error(), "grows a table") {
			t.Fatalf("err %v, want a refusal", err)
		}
	})
	t.Run("passive data segment", func(t *testing.T) {
		wasm := mod(secType, typeSec, secImport, importSec, secFunction, funcSec, secMemory, memSec, secExport, exportRun,
			secDataCnt, appendU32(nil, 1), secCode, wasmtest.Vec(wasmtest.Body(0x41, 0x00, 0x0b)), secData, wasmtest.Vec([]byte{0x01, 0x01, 'x'}))
		m, err := Parse(wasm)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(m.NotResettable, "passive") {
			t.Fatalf("NotResettable %q", m.NotResettable)
		}
	})
}

// TestInstrumentShippedGuest: the executor instruments, stays resettable
// and still compiles.
func TestInstrumentShippedGuest(t *testing.T) {
	wasm, err := os.ReadFile("../../../../guest/executor.wasm")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(wasm)
	if err != nil {
		t.Fatal(err)
	}
	ins, err := m.Instrument()
	if err != nil || m.NotResettable != "" {
		t.Fatalf("%v %q", err, m.NotResettable)
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	if _, err := rt.CompileModule(ctx, ins.Wasm); err != nil {
		t.Fatal(err)
	}
}

// FuzzInstrument: Parse and Instrument never panic, and whenever wazero
// accepts a module, it accepts the instrumented one too.
func FuzzInstrument(f *testing.F) {
	f.Add(mod(secType, typeSec, secImport, importSec, secFunction, funcSec, secMemory, memSec, secGlobal, globalSec, secExport, exportRun, secCode, wasmtest.Vec(loopBody)))
	f.Add(mod(secType, typeSec, secImport, importSec, secFunction, funcSec, secExport, exportRun, secCode, wasmtest.Vec(wasmtest.Body(0x03, 0x40, 0x03, 0x40, 0x0b, 0x0b, 0x41, 0x00, 0x0b))))
	// memory.fill in reachable and unreachable code (the bulk charge)
	f.Add(mod(secType, typeSec, secImport, importSec, secFunction, funcSec, secMemory, memSec, secExport, exportRun, secCode, wasmtest.Vec(wasmtest.Body(0x41, 0x00, 0x41, 0x01, 0x41, 0x02, 0xfc, 0x0b, 0x00, 0x02, 0x40, 0x0c, 0x00, 0xfc, 0x0b, 0x00, 0x0b, 0x41, 0x00, 0x0b))))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		m, err := Parse(wasm)
		if err != nil {
			return
		}
		ins, err := m.Instrument()
		if err != nil {
			return
		}
		ctx := context.Background()
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
		defer rt.Close(ctx)
		if _, err := rt.CompileModule(ctx, wasm); err != nil {
			return
		}
		if _, err := rt.CompileModule(ctx, ins.Wasm); err != nil {
			t.Fatalf("the original compiles but the instrumented module does not: %v", err)
		}
	})
}
