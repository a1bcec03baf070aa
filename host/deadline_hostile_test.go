package host

import (
	"math"
	"runtime"
	"runtime/metrics"
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

// The hostile guests below would run on for tens of seconds without the
// countdown; with it they stop at the deadline. The bounds leave a busy
// machine seconds of slack and still catch a guest the countdown misses.
const (
	// deadlineSlack is how long past its deadline an op may end.
	deadlineSlack = 3 * time.Second
	// stallBound is the longest a stop-the-world may wait for the guest.
	stallBound = 2 * time.Second
)

// runPastDeadline runs guest's op under timeout in a fresh instance while
// another goroutine keeps collecting garbage. It returns how long the op
// took, its error, and the longest a collection waited to stop the world
// meanwhile (the runtime's own measure, so a busy machine's scheduling
// delays of this test's goroutines do not count).
func runPastDeadline(t *testing.T, guest []byte, timeout time.Duration) (time.Duration, *Error, time.Duration) {
	t.Helper()
	env := newEnv(t, func(c *Config) {
		c.Guest = guest
		c.Timeout = timeout
		c.Isolation = IsolationFresh
		c.CacheDir = ""
	})
	stop := make(chan struct{})
	done := make(chan struct{})
	before := stwStopping()
	go func() {
		// Collections every few milliseconds while the guest runs: each
		// must stop the world, which waits for the guest's goroutine.
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			runtime.GC()
			// Not ordering goroutines: this only spaces the collections.
			time.Sleep(5 * time.Millisecond)
		}
	}()
	start := time.Now()
	_, err := env.run("github", "list_issues", honestArgs["github.list_issues"])
	d := time.Since(start)
	close(stop)
	<-done
	return d, err, longestNew(before, stwStopping())
}

// stwStopping reads the runtime's histogram of how long each GC
// stop-the-world took to stop every goroutine.
func stwStopping() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: "/sched/pauses/stopping/gc:seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64Histogram()
}

// longestNew is the lower edge of the highest bucket that gained a count
// between two reads of the histogram: the longest new wait, rounded down.
func longestNew(before, after *metrics.Float64Histogram) time.Duration {
	for i := len(after.Counts) - 1; i >= 0; i-- {
		if after.Counts[i] > before.Counts[i] {
			lo := after.Buckets[i]
			if math.IsInf(lo, -1) || lo < 0 {
				return 0
			}
			return time.Duration(lo * float64(time.Second))
		}
	}
	return 0
}

// TestDeadlineEndsBulkMemory: the countdown counts function
// entries and loop heads only, but memory.fill and memory.copy do work
// proportional to their length operand, in machine code (wazevo calls
// runtime.memmove directly, without returning to Go). A loop-free run
// that calls, 10 times, a function of memory.fill(0, 0, 32 MiB) x 800
// (250 GiB in all, 10 steps of the countdown) never reaches sched_yield:
// the op runs tens of seconds past its deadline, and every stop-the-world
// pause of the whole process (each GC) waits for it.
func TestDeadlineEndsBulkMemory(t *testing.T) {
	const timeout = 200 * time.Millisecond
	var fill, run []byte
	for i := 0; i < 800; i++ {
		fill = append(fill, memFill(32<<20)...)
	}
	for i := 0; i < 10; i++ {
		run = append(run, 0x10, 0x04) // call 4: fill
	}
	run = append(run, 0x41, 0x00)
	d, err, gc := runPastDeadline(t, yieldGuest(512, run, wasmtest.Func{Type: 0, Code: fill}), timeout)
	t.Logf("op: %v after %v (deadline %v); longest stall meanwhile %v", err, d, timeout, gc)
	if err == nil || err.Code != api.CodeTimeout {
		t.Errorf("op: %v, want code %s", err, api.CodeTimeout)
	}
	if d > timeout+deadlineSlack {
		t.Errorf("the op ran %v, past its %v deadline: bulk memory work is not counted", d, timeout)
	}
	if gc > stallBound {
		t.Errorf("a collection waited %v to stop the world: the guest held it up", gc)
	}
}

// TestDeadlineEndsBulkMemoryLoop: the same with a loop (each
// iteration costs one step of the 1024 between two sched_yield calls, but
// does 16 fills of 32 MiB: 512 GiB between two calls).
func TestDeadlineEndsBulkMemoryLoop(t *testing.T) {
	const timeout = 200 * time.Millisecond
	run := []byte{0x03, 0x40} // loop
	for i := 0; i < 16; i++ {
		run = append(run, memFill(32<<20)...)
	}
	run = append(run, 0x0c, 0x00, 0x0b, 0x41, 0x00) // br 0; end; i32.const 0
	d, err, gc := runPastDeadline(t, yieldGuest(512, run), timeout)
	t.Logf("op: %v after %v (deadline %v); longest stall meanwhile %v", err, d, timeout, gc)
	if err == nil || err.Code != api.CodeTimeout {
		t.Errorf("op: %v, want code %s", err, api.CodeTimeout)
	}
	if d > timeout+deadlineSlack {
		t.Errorf("the op ran %v, past its %v deadline: a loop step may do 512 MiB of work", d, timeout)
	}
	if gc > stallBound {
		t.Errorf("a collection waited %v to stop the world: the guest held it up", gc)
	}
}

// TestDeadlineEndsStraightLineCode: one step of the countdown (a
// function entry) may run a loop-free body of any length. Here the body
// is a chain of 40,000 dependent loads at scattered addresses (each a
// cache and TLB miss), ~240 KB of code; run calls it in a loop, so 1024
// such bodies (seconds of work) run between two sched_yield calls.
func TestDeadlineEndsStraightLineCode(t *testing.T) {
	const timeout = 200 * time.Millisecond
	f := []byte{0x41, 0x00} // i32.const 0
	x := uint32(12345)
	for i := 0; i < 40000; i++ {
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
	if d > timeout+deadlineSlack {
		t.Errorf("the op ran %v, past its %v deadline: a step may run any amount of straight-line code", d, timeout)
	}
	if gc > stallBound {
		t.Errorf("a collection waited %v to stop the world: the guest held it up", gc)
	}
}

// TestDeadlineEndsHostCalls: host functions do work the
// countdown does not see (it counts the guest's own function entries and
// loop heads), and only sched_yield checks the op's context. A function
// of 240 straight-line random_get(64 KiB) calls, called in a loop, does
// 1024 x 240 x 64 KiB (15 GiB) of host work between two sched_yield calls.
func TestDeadlineEndsHostCalls(t *testing.T) {
	const timeout = 200 * time.Millisecond
	var f []byte
	for i := 0; i < 240; i++ {
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
	if d > timeout+deadlineSlack {
		t.Errorf("the op ran %v, past its %v deadline: host calls are not counted and do not check the deadline", d, timeout)
	}
}
