package host

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/testing/wasmtest"
)

// startSleeper is a module whose wasm start function sleeps sleepFor (by
// WASI poll_oneoff) whenever the realtime clock is at or past armAt; its
// run traps. Before armAt it is harmless, so New builds the pool.
func startSleeper(armAt time.Time, sleepFor time.Duration) []byte {
	c := []byte{}
	// clock_time_get(realtime, 0, &mem[0])
	c = append(c, 0x41, 0x00, 0x42, 0x00, 0x41, 0x00, 0x10, 0x00, 0x1a)
	// if i64.load(mem[0]) >= armAt
	c = append(c, 0x41, 0x00, 0x29, 0x03, 0x00, 0x42)
	c = append(c, wasmtest.SLEB(armAt.UnixNano())...)
	c = append(c, 0x5a, 0x04, 0x40)
	//   mem[64+24] = sleepFor (relative clock subscription at 64)
	c = append(c, 0x41)
	c = append(c, wasmtest.SLEB(88)...)
	c = append(c, 0x42)
	c = append(c, wasmtest.SLEB(int64(sleepFor))...)
	c = append(c, 0x37, 0x03, 0x00)
	//   poll_oneoff(64, 128, 1, 200)
	c = append(c, 0x41)
	c = append(c, wasmtest.SLEB(64)...)
	c = append(c, 0x41)
	c = append(c, wasmtest.SLEB(128)...)
	c = append(c, 0x41, 0x01, 0x41)
	c = append(c, wasmtest.SLEB(200)...)
	c = append(c, 0x10, 0x01, 0x1a)
	c = append(c, 0x0b) // end if
	m := &wasmtest.Module{
		Types: [][2][]byte{
			{nil, nil},
			{nil, {wasmtest.I32}},
			{{wasmtest.I32, wasmtest.I64, wasmtest.I32}, {wasmtest.I32}},
			{{wasmtest.I32, wasmtest.I32, wasmtest.I32, wasmtest.I32}, {wasmtest.I32}},
		},
		Imports: []wasmtest.Import{
			{Mod: "wasi_snapshot_preview1", Name: "clock_time_get", Type: 2},
			{Mod: "wasi_snapshot_preview1", Name: "poll_oneoff", Type: 3},
		},
		Funcs: []wasmtest.Func{
			{Type: 0, Code: c}, // 2: start
			{Type: 0},          // 3: _initialize
			{Type: 1, Code: armed(armAt, []byte{0x00}, []byte{0x41, 0x00})}, // 4: run: traps once armed
		},
		MemMin: 1, MemMax: -1,
		Exports: []wasmtest.Export{{Name: "_initialize", Kind: 0, Idx: 3}, {Name: "run", Kind: 0, Idx: 4}, {Name: "memory", Kind: 2, Idx: 0}},
		Start:   2,
	}
	return m.Bytes()
}

// armed is "if realtime >= armAt then <then> else <els> end" with an i32 result.
func armed(armAt time.Time, then, els []byte) []byte {
	c := []byte{0x41, 0x00, 0x42, 0x00, 0x41, 0x00, 0x10, 0x00, 0x1a, 0x41, 0x00, 0x29, 0x03, 0x00, 0x42}
	c = append(c, wasmtest.SLEB(armAt.UnixNano())...)
	c = append(c, 0x5a, 0x04, wasmtest.I32)
	c = append(c, then...)
	c = append(c, 0x05)
	c = append(c, els...)
	return append(c, 0x0b)
}

// startSpinner is a module whose start function, once the realtime clock
// passes armAt, spins in a loop (reading the clock) until armAt+spinFor;
// its run traps once armed.
func startSpinner(armAt time.Time, spinFor time.Duration) []byte {
	c := []byte{0x03, 0x40} // loop
	// clock_time_get(realtime, 0, &mem[0])
	c = append(c, 0x41, 0x00, 0x42, 0x00, 0x41, 0x00, 0x10, 0x00, 0x1a)
	// br_if 0 (mem[0] >= armAt && mem[0] < armAt+spinFor)
	c = append(c, 0x41, 0x00, 0x29, 0x03, 0x00, 0x42)
	c = append(c, wasmtest.SLEB(armAt.UnixNano())...)
	c = append(c, 0x5a) // i64.ge_u
	c = append(c, 0x41, 0x00, 0x29, 0x03, 0x00, 0x42)
	c = append(c, wasmtest.SLEB(armAt.Add(spinFor).UnixNano())...)
	c = append(c, 0x54) // i64.lt_u
	c = append(c, 0x71) // i32.and
	c = append(c, 0x0d, 0x00, 0x0b)
	m := &wasmtest.Module{
		Types: [][2][]byte{
			{nil, nil},
			{nil, {wasmtest.I32}},
			{{wasmtest.I32, wasmtest.I64, wasmtest.I32}, {wasmtest.I32}},
		},
		Imports: []wasmtest.Import{{Mod: "wasi_snapshot_preview1", Name: "clock_time_get", Type: 2}},
		Funcs: []wasmtest.Func{
			{Type: 0, Code: c}, // 1: start
			{Type: 0},          // 2: _initialize
			{Type: 1, Code: armed(armAt, []byte{0x00}, []byte{0x41, 0x00})}, // 3: run
		},
		MemMin: 1, MemMax: -1,
		Exports: []wasmtest.Export{{Name: "_initialize", Kind: 0, Idx: 2}, {Name: "run", Kind: 0, Idx: 3}, {Name: "memory", Kind: 2, Idx: 0}},
		Start:   1,
	}
	return m.Bytes()
}

// TestStartFunctionRefused (found by the red team): wazero runs a
// module's start function inside InstantiateModule, before the host can
// arm the op's deadline — the red team's modules slept in poll_oneoff and
// spun in a loop there, 6 s past a 500 ms deadline, in both strategies. A
// guest is a WASI reactor initialized by _initialize; a module with a start
// section is now refused at load, before anything runs.
func TestStartFunctionRefused(t *testing.T) {
	armAt := time.Now().Add(time.Hour)
	for name, wasm := range map[string][]byte{
		"start function that sleeps": startSleeper(armAt, 6*time.Second),
		"start function that spins":  startSpinner(armAt, 5*time.Second),
	} {
		for _, iso := range []string{IsolationReset, IsolationFresh} {
			t.Run(name+"/"+iso, func(t *testing.T) {
				_, err := New(context.Background(), Config{Guest: wasm, Isolation: iso})
				if err == nil || !strings.Contains(err.Error(), "start function") {
					t.Fatalf("New: %v, want a refusal naming the start function", err)
				}
			})
		}
	}
}

// TestGuestWithoutYieldRefused: a guest that does not import
// wasi_snapshot_preview1.sched_yield cannot carry the deadline countdown,
// so the host refuses it rather than run it unbounded (wazero's
// close-on-done would miss a loop-free tree of calls).
func TestGuestWithoutYieldRefused(t *testing.T) {
	m := &wasmtest.Module{
		Types: [][2][]byte{{nil, nil}, {nil, {wasmtest.I32}}},
		Funcs: []wasmtest.Func{
			{Type: 0},                           // 0: _initialize
			{Type: 1, Code: []byte{0x41, 0x00}}, // 1: run
		},
		MemMin: 1, MemMax: -1, Start: -1,
		Exports: []wasmtest.Export{{Name: "_initialize", Kind: 0, Idx: 0}, {Name: "run", Kind: 0, Idx: 1}, {Name: "memory", Kind: 2, Idx: 0}},
	}
	for _, iso := range []string{IsolationReset, IsolationFresh} {
		t.Run(iso, func(t *testing.T) {
			e, err := New(context.Background(), Config{Guest: m.Bytes(), Isolation: iso})
			if err == nil {
				e.Close(context.Background())
				t.Fatal("New accepted a guest without sched_yield")
			}
			if !strings.Contains(err.Error(), "sched_yield") {
				t.Fatalf("err %v, want it to name sched_yield", err)
			}
		})
	}
}
