package host

import (
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/testing/wasmtest"
)

// treeRecursion is a module whose run, once the realtime clock passes
// armAt, calls rec(depth): rec(n) calls rec(n-1) twice. There is no loop
// anywhere, so a deadline check at loop heads only (wazero's own, or the
// host's first instrumentation) never runs; the call depth never exceeds depth, so the stack never
// overflows; 2^(depth+1) calls take as long as the guest likes.
func treeRecursion(armAt time.Time, depth int32) []byte {
	rec := []byte{0x20, 0x00, 0x45, 0x04, 0x40, 0x0f, 0x0b, // if n == 0 return
		0x20, 0x00, 0x41, 0x01, 0x6b, 0x10, 0x04, // rec(n-1)
		0x20, 0x00, 0x41, 0x01, 0x6b, 0x10, 0x04} // rec(n-1)
	then := append([]byte{0x41}, wasmtest.SLEB(int64(depth))...)
	then = append(then, 0x10, 0x04, 0x41, 0x00)
	m := &wasmtest.Module{
		Types: [][2][]byte{
			{nil, nil},
			{nil, {wasmtest.I32}},
			{{wasmtest.I32, wasmtest.I64, wasmtest.I32}, {wasmtest.I32}},
			{{wasmtest.I32}, nil},
		},
		Imports: []wasmtest.Import{
			{Mod: "wasi_snapshot_preview1", Name: "clock_time_get", Type: 2},
			{Mod: "wasi_snapshot_preview1", Name: "sched_yield", Type: 1}, // instrumentable
		},
		Funcs: []wasmtest.Func{
			{Type: 0}, // 2: _initialize
			{Type: 1, Code: armed(armAt, then, []byte{0x41, 0x00})}, // 3: run
			{Type: 3, Code: rec}, // 4: rec
		},
		MemMin: 1, MemMax: -1,
		Exports: []wasmtest.Export{{Name: "_initialize", Kind: 0, Idx: 2}, {Name: "run", Kind: 0, Idx: 3}, {Name: "memory", Kind: 2, Idx: 0}},
		Start:   -1,
	}
	return m.Bytes()
}

// TestDeadlineEndsTreeRecursion (found by the red team): the
// deadline check was inserted at loop heads only, and tree recursion is
// shallow, loop-free and exponential (here 2^34 calls, tens of seconds): the op ran for as
// long as the guest wanted. The countdown now also runs at every function
// entry, and the op ends at its deadline. (wazero's close-on-done checks
// loop heads only, which is one reason a guest that cannot be
// instrumented is refused.)
func TestDeadlineEndsTreeRecursion(t *testing.T) {
	const timeout = 500 * time.Millisecond
	for _, iso := range []string{IsolationReset, IsolationFresh} {
		t.Run(iso, func(t *testing.T) {
			// After New: the template warm-up must not be armed, and New
			// may take seconds on a busy machine.
			armAt := time.Now().Add(6 * time.Second)
			env := newEnv(t, func(c *Config) {
				c.Guest = treeRecursion(armAt, 33)
				c.Timeout = timeout
				c.Isolation = iso
				c.CacheDir = ""
			})
			t.Logf("strategy %s", env.eng.Strategy())
			// Not ordering goroutines: the guest arms itself by the wall
			// clock, so the op must start after armAt.
			time.Sleep(time.Until(armAt) + 50*time.Millisecond)
			start := time.Now()
			_, err := env.run("github", "list_issues", honestArgs["github.list_issues"])
			d := time.Since(start)
			t.Logf("op: %v after %v (deadline %v)", err, d, timeout)
			if err == nil || err.Code != api.CodeTimeout {
				t.Errorf("op: %v, want code %s", err, api.CodeTimeout)
			}
			if d > timeout+deadlineSlack {
				t.Errorf("the op ran %v, past its %v deadline: loop-free recursion is never interrupted", d, timeout)
			}
		})
	}
}
