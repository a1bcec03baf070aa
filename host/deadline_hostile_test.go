package host

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/testing/wasmtest"
)

// yieldGuest is a guest with the two WASI imports the red-team modules
// need (0: clock_time_get, 1: sched_yield), an empty _initialize (2), run
// (3) and the extra functions given (4, 5, ...), over a memory of pages
// pages. Type 0 is () -> (), 1 () -> i32, 2 clock_time_get's, 3 (i32) -> (),
// 4 (i32) -> i32.
func yieldGuest(pages uint32, run []byte, extra ...wasmtest.Func) []byte {
	m := &wasmtest.Module{
		Types: [][2][]byte{
			{nil, nil},
			{nil, {wasmtest.I32}},
			{{wasmtest.I32, wasmtest.I64, wasmtest.I32}, {wasmtest.I32}},
			{{wasmtest.I32}, nil},
			{{wasmtest.I32}, {wasmtest.I32}},
		},
		Imports: []wasmtest.Import{
			{Mod: "wasi_snapshot_preview1", Name: "clock_time_get", Type: 2},
			{Mod: "wasi_snapshot_preview1", Name: "sched_yield", Type: 1},
		},
		Funcs:   append([]wasmtest.Func{{Type: 0}, {Type: 1, Code: run}}, extra...),
		MemMin:  pages,
		MemMax:  -1,
		Exports: []wasmtest.Export{{Name: "_initialize", Kind: 0, Idx: 2}, {Name: "run", Kind: 0, Idx: 3}, {Name: "memory", Kind: 2, Idx: 0}},
		Start:   -1,
	}
	return m.Bytes()
}

// memFill is memory.fill(0, 0, n).
func memFill(n int32) []byte {
	c := []byte{0x41, 0x00, 0x41, 0x00, 0x41}
	c = append(c, wasmtest.SLEB(int64(n))...)
	return append(c, 0xfc, 0x0b, 0x00)
}

// runPastDeadline runs guest's op under timeout in a fresh instance while
// another goroutine keeps collecting garbage; it returns how long the op
// took, its error, and the longest the process was frozen meanwhile (a goroutine forcing collections).
func runPastDeadline(t *testing.T, guest []byte, timeout time.Duration) (time.Duration, *Error, time.Duration) {
	t.Helper()
	env := newEnv(t, func(c *Config) {
		c.Guest = guest
		c.Timeout = timeout
		c.Isolation = IsolationFresh
		c.CacheDir = ""
	})
	stop := make(chan struct{})
	var worstGC atomic.Int64
	done := make(chan struct{})
	go func() {
		// The longest gap between two iterations of a loop that forces a
		// collection every few milliseconds: how long the process was
		// frozen (a pending stop-the-world stops this goroutine too).
		defer close(done)
		last := time.Now()
		for {
			select {
			case <-stop:
				return
			default:
			}
			runtime.GC()
			// Not ordering goroutines: the pause between collections is
			// part of the measurement.
			time.Sleep(5 * time.Millisecond)
			now := time.Now()
			if d := int64(now.Sub(last)); d > worstGC.Load() {
				worstGC.Store(d)
			}
			last = now
		}
	}()
	start := time.Now()
	_, err := env.run("github", "list_issues", honestArgs["github.list_issues"])
	d := time.Since(start)
	close(stop)
	<-done
	return d, err, time.Duration(worstGC.Load())
}

// TestDeadlineEndsBulkMemory: the countdown counts function
// entries and loop heads only, but memory.fill and memory.copy do work
// proportional to their length operand, in machine code (wazevo calls
// runtime.memmove directly, without returning to Go). A loop-free run of
// memory.fill(0, 0, 32 MiB) x 800 never reaches sched_yield: the op runs
// seconds past its deadline, and every stop-the-world pause of the whole
// process (each GC) waits for it.
func TestDeadlineEndsBulkMemory(t *testing.T) {
	const timeout = 200 * time.Millisecond
	var run []byte
	for i := 0; i < 800; i++ {
		run = append(run, memFill(32<<20)...)
	}
	run = append(run, 0x41, 0x00)
	d, err, gc := runPastDeadline(t, yieldGuest(512, run), timeout)
	t.Logf("op: %v after %v (deadline %v); longest stall meanwhile %v", err, d, timeout, gc)
	if err == nil || err.Code != api.CodeTimeout {
		t.Errorf("op: %v, want code %s", err, api.CodeTimeout)
	}
	if d > timeout+500*time.Millisecond {
		t.Errorf("the op ran %v, past its %v deadline: bulk memory work is not counted", d, timeout)
	}
	if gc > 300*time.Millisecond {
		t.Errorf("the process froze for %v: the guest held a stop-the-world pause", gc)
	}
}

// TestDeadlineEndsBulkMemoryLoop: the same with a loop (each
// iteration costs one step of the 1024 between two sched_yield calls, but
// does 16 MiB of work).
func TestDeadlineEndsBulkMemoryLoop(t *testing.T) {
	const timeout = 200 * time.Millisecond
	run := []byte{0x03, 0x40} // loop
	run = append(run, memFill(16<<20)...)
	run = append(run, 0x0c, 0x00, 0x0b, 0x41, 0x00) // br 0; end; i32.const 0
	d, err, gc := runPastDeadline(t, yieldGuest(512, run), timeout)
	t.Logf("op: %v after %v (deadline %v); longest stall meanwhile %v", err, d, timeout, gc)
	if err == nil || err.Code != api.CodeTimeout {
		t.Errorf("op: %v, want code %s", err, api.CodeTimeout)
	}
	if d > timeout+500*time.Millisecond {
		t.Errorf("the op ran %v, past its %v deadline: a loop step may do 16 MiB of work", d, timeout)
	}
	if gc > 300*time.Millisecond {
		t.Errorf("the process froze for %v: the guest held a stop-the-world pause", gc)
	}
}

// TestDeadlineEndsStraightLineCode: one step of the countdown (a
// function entry) may run a loop-free body of any length. Here the body
// is a chain of 20,000 dependent loads at scattered addresses (each a
// cache and TLB miss), ~120 KB of code; run calls it in a loop, so 1024
// such bodies run between two sched_yield calls.
func TestDeadlineEndsStraightLineCode(t *testing.T) {
	const timeout = 200 * time.Millisecond
	f := []byte{0x41, 0x00} // i32.const 0
	x := uint32(12345)
	for i := 0; i < 20000; i++ {
		x = x*1103515245 + 12345
		off := (x >> 2) % ((32 << 20) / 4) * 4
		if off > 32<<20-4 {
			off = 0
		}
		f = append(f, 0x28, 0x02)
		f = append(f, wasmtest.ULEB(uint64(off))...)
	}
	f = append(f, 0x1a) // drop
	run := memFill(32 << 20)
	run = append(run, 0x03, 0x40, 0x10, 0x04, 0x0c, 0x00, 0x0b, 0x41, 0x00) // loop call 4; br 0 end
	d, err, gc := runPastDeadline(t, yieldGuest(512, run, wasmtest.Func{Type: 0, Code: f}), timeout)
	t.Logf("op: %v after %v (deadline %v); longest stall meanwhile %v", err, d, timeout, gc)
	if err == nil || err.Code != api.CodeTimeout {
		t.Errorf("op: %v, want code %s", err, api.CodeTimeout)
	}
	if d > timeout+500*time.Millisecond {
		t.Errorf("the op ran %v, past its %v deadline: a step may run any amount of straight-line code", d, timeout)
	}
	if gc > 300*time.Millisecond {
		t.Errorf("the process froze for %v: the guest held a stop-the-world pause", gc)
	}
}

// TestDeadlineEndsHostCalls: host functions do work the
// countdown does not see (it counts the guest's own function entries and
// loop heads), and only sched_yield checks the op's context. A function
// of 60 straight-line random_get(64 KiB) calls, called in a loop, does
// 1024 x 60 x 64 KiB of host work between two sched_yield calls.
func TestDeadlineEndsHostCalls(t *testing.T) {
	const timeout = 200 * time.Millisecond
	var f []byte
	for i := 0; i < 60; i++ {
		f = append(f, 0x41, 0x00, 0x41, 0x80, 0x80, 0x04, 0x10, 0x01, 0x1a) // random_get(0, 65536); drop
	}
	m := &wasmtest.Module{
		Types: [][2][]byte{{nil, nil}, {nil, {wasmtest.I32}}, {{wasmtest.I32, wasmtest.I32}, {wasmtest.I32}}},
		Imports: []wasmtest.Import{
			{Mod: "wasi_snapshot_preview1", Name: "sched_yield", Type: 1},
			{Mod: "wasi_snapshot_preview1", Name: "random_get", Type: 2},
		},
		Funcs: []wasmtest.Func{
			{Type: 0}, // 2: _initialize
			{Type: 1, Code: []byte{0x03, 0x40, 0x10, 0x04, 0x0c, 0x00, 0x0b, 0x41, 0x00}}, // 3: run: loop call 4; br 0
			{Type: 0, Code: f}, // 4
		},
		MemMin: 2, MemMax: -1,
		Exports: []wasmtest.Export{{Name: "_initialize", Kind: 0, Idx: 2}, {Name: "run", Kind: 0, Idx: 3}, {Name: "memory", Kind: 2, Idx: 0}},
		Start:   -1,
	}
	d, err, _ := runPastDeadline(t, m.Bytes(), timeout)
	t.Logf("op: %v after %v (deadline %v)", err, d, timeout)
	if err == nil || err.Code != api.CodeTimeout {
		t.Errorf("op: %v, want code %s", err, api.CodeTimeout)
	}
	if d > timeout+500*time.Millisecond {
		t.Errorf("the op ran %v, past its %v deadline: host calls are not counted and do not check the deadline", d, timeout)
	}
}
