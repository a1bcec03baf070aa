package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/elevenmessenger/pinned/internal/testing/wasmtest"
)

// markGuest is a pooled guest (one page of memory, one mutable i32
// global) whose run is body followed by "return 0".
func markGuest(body ...byte) []byte {
	m := &wasmtest.Module{
		Types:   [][2][]byte{{nil, nil}, {nil, {wasmtest.I32}}},
		Imports: []wasmtest.Import{{Mod: WASIModuleName, Name: "sched_yield", Type: 1}}, // instrumentable: pooled
		Funcs: []wasmtest.Func{
			{Type: 0}, // 1: _initialize
			{Type: 1, Code: append(body, 0x41, 0x00)}, // 2: run
		},
		MemMin:  1,
		MemMax:  -1,
		Globals: [][]byte{{wasmtest.I32, 0x01, 0x41, 0x00, 0x0b}},
		Exports: []wasmtest.Export{{Name: "_initialize", Kind: 0, Idx: 1}, {Name: "run", Kind: 0, Idx: 2}, {Name: "memory", Kind: 2, Idx: 0}},
		Start:   -1,
	}
	return m.Bytes()
}

// counterGuest is a pooled guest whose run adds 1 to a mutable global and
// stores the global at address 0: every run leaves a mark in a global and
// in memory.
func counterGuest() []byte {
	return markGuest(
		0x23, 0x00, 0x41, 0x01, 0x6a, 0x24, 0x00, // g0 = g0 + 1
		0x41, 0x00, 0x23, 0x00, 0x36, 0x02, 0x00, // mem[0] = g0
	)
}

// pageWalkerGuest's run adds 1 to a mutable global g and writes g into
// the 4 KiB page numbered g: run back to back from one state, each run
// writes the next page; run from the same state, each writes the same.
func pageWalkerGuest() []byte {
	return markGuest(
		0x23, 0x00, 0x41, 0x01, 0x6a, 0x24, 0x00, // g0 = g0 + 1
		0x23, 0x00, 0x41, 0x80, 0x20, 0x6c, // g0 * 4096
		0x23, 0x00, 0x36, 0x02, 0x00, // mem[g0*4096] = g0
	)
}

// TestProbeClassesEachOpFromTemplate: the write class holds what each
// warm-up op writes when it runs from the template, as every pooled op
// does, not the pages a run of the ops back to back reaches. The
// template runs the 5 warm-up ops back to back (its global ends at 5, its
// pages 1 to 5 written); every op from it writes page 6 alone.
func TestProbeClassesEachOpFromTemplate(t *testing.T) {
	if !cowSupported {
		t.Skip("page classes need Linux (copy-on-write memory)")
	}
	r := walkerRuntime(t, "")
	if write := writeClassPages(r.pool.Load().class); !slices.Equal(write, []int{6}) {
		t.Fatalf("write-class pages %v, want [6] (each warm-up op from the template)", write)
	}
	_, tglobals, err := r.Template()
	if err != nil {
		t.Fatal(err)
	}
	if tglobals[0] != 5 {
		t.Fatalf("control: the template's global is %d, want 5 (the warm-up ops ran on it)", tglobals[0])
	}
}

// walkerRuntime is a pool of pageWalkerGuest after 5 warm-up ops, its
// page classes kept in cacheDir.
func walkerRuntime(t *testing.T, cacheDir string) *Runtime {
	t.Helper()
	return walkerRuntimeKeyed(t, cacheDir, "")
}

// walkerRuntimeKeyed is walkerRuntime started with a template key: with
// a cache directory, the template is kept there and read back.
func walkerRuntimeKeyed(t *testing.T, cacheDir, key string) *Runtime {
	t.Helper()
	ctx := context.Background()
	wasm := pageWalkerGuest()
	r, err := New(ctx, Config{Guest: wasm, GuestSum: sha256.Sum256(wasm), MemoryLimitPages: 16, Reset: true, PoolSize: 1, CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	warm := make([]Call, 5)
	for i := range warm {
		warm[i] = Call{Input: []byte("{}")}
	}
	if err := r.Start(ctx, key, func() ([]Call, error) { return warm, nil }); err != nil {
		t.Fatal(err)
	}
	if !r.Pooled() {
		t.Fatalf("not pooled: %s", r.WhyFresh())
	}
	return r
}

func writeClassPages(class []byte) (out []int) {
	for i, k := range class {
		if k == pageWrite {
			out = append(out, i)
		}
	}
	return out
}

// TestPageClassesCached: the probe's page classes are kept in the cache
// directory and read back by the next start; a file that is damaged, of
// another length or holding another byte is probed again and rewritten.
func TestPageClassesCached(t *testing.T) {
	if !cowSupported {
		t.Skip("page classes need Linux (copy-on-write memory)")
	}
	dir := t.TempDir()
	r := walkerRuntime(t, dir)
	if got := writeClassPages(r.pool.Load().class); !slices.Equal(got, []int{6}) {
		t.Fatalf("probed write class %v, want [6]", got)
	}
	if got := r.PageClasses(); !strings.HasPrefix(got, "1 write, ") || !strings.HasSuffix(got, "pages, from the probe") {
		t.Fatalf("PageClasses() = %q, want 1 write page, from the probe", got)
	}
	if got := walkerRuntime(t, dir).PageClasses(); !strings.HasPrefix(got, "1 write, ") || !strings.HasSuffix(got, "pages, from the cache") {
		t.Fatalf("the next start: PageClasses() = %q, want 1 write page, from the cache", got)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "pinned-classes-v*"))
	if len(files) != 1 {
		t.Fatalf("class files %v, want one", files)
	}
	good, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	// Read back: a valid file of other classes is what the next start uses.
	other := make([]byte, len(r.pool.Load().class))
	other[2], other[9] = pageWrite, pageRead
	writeClasses(files[0], other)
	if got := walkerRuntime(t, dir).pool.Load().class; !bytes.Equal(got, other) {
		t.Fatalf("the next start did not read the kept classes: write class %v", writeClassPages(got))
	}
	for _, tc := range []struct {
		name string
		file []byte
	}{
		{"damaged", append(append([]byte(nil), good[:len(good)-1]...), good[len(good)-1]^1)},
		{"short", good[:len(good)-5]},
		{"empty", nil},
		{"class byte 3", func() []byte {
			c := append([]byte(nil), good[:len(good)-4]...)
			c[0] = 3
			return binary.LittleEndian.AppendUint32(c, crc32.Checksum(c, castagnoli))
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(files[0], tc.file, 0o600); err != nil {
				t.Fatal(err)
			}
			if got := writeClassPages(walkerRuntime(t, dir).pool.Load().class); !slices.Equal(got, []int{6}) {
				t.Fatalf("write class %v, want the probe's [6]", got)
			}
			if b, _ := os.ReadFile(files[0]); !bytes.Equal(b, good) {
				t.Fatal("the probed classes were not kept again")
			}
		})
	}
}

// TestResetAnyClassesFromCache is the hostile cache file: classes that
// name the wrong pages (the page every op writes cold, others write- and
// read-class) only change what a reset costs. Every op still starts from
// the template, and every released instance is the template again.
func TestResetAnyClassesFromCache(t *testing.T) {
	if !cowSupported {
		t.Skip("page classes need Linux (copy-on-write memory)")
	}
	dir, file, n := probedClassesFile(t)
	for _, tc := range []struct {
		name  string
		class func(i int) byte
	}{
		{"all cold", func(int) byte { return pageCold }},
		{"all write", func(int) byte { return pageWrite }},
		{"every other page write, page 6 read", everyOtherWritePage6Read},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := walkerRuntimeWithClasses(t, dir, file, n, tc.class)
			runWalkerOps(t, r, 4, tc.name+" classes", nil)
		})
	}
}

// runWalkerOps runs n pageWalkerGuest ops on leased instances of r. Each
// must start from the template (its global one past the template's),
// pass check (when given) and leave a reset instance that is the
// template again.
func runWalkerOps(t *testing.T, r *Runtime, n int, under string, check func(i int, l *Lease)) {
	t.Helper()
	_, tglobals, err := r.Template()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range n {
		l, err := r.Lease(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Run(ctx, Call{Input: []byte("{}"), MaxCalls: 16, MaxLogBytes: 64}); err != nil {
			t.Fatal(err)
		}
		if g := l.Globals()[0]; g != tglobals[0]+1 {
			t.Fatalf("op %d: global %d, want %d: the op did not start from the template", i, g, tglobals[0]+1)
		}
		if check != nil {
			check(i, l)
		}
		l.Return()
		assertTemplate(t, r, fmt.Sprintf("op %d under %s", i, under))
	}
}

// probedClassesFile starts a walkerRuntime on a new cache directory and
// returns the directory, the classes file the probe kept there, and the
// number of pages it classifies.
func probedClassesFile(t *testing.T) (dir, file string, pages int) {
	t.Helper()
	dir = t.TempDir()
	r := walkerRuntime(t, dir)
	files, _ := filepath.Glob(filepath.Join(dir, "pinned-classes-v*"))
	if len(files) != 1 {
		t.Fatalf("class files %v, want one", files)
	}
	return dir, files[0], len(r.pool.Load().class)
}

// everyOtherWritePage6Read is a class for the tests of wrong cached
// classes: odd pages write-class, even ones cold, and page 6, the one
// every pageWalkerGuest op writes, read-class.
func everyOtherWritePage6Read(i int) byte {
	if i == 6 {
		return pageRead
	}
	return byte(i%2) * pageWrite
}

// walkerRuntimeWithClasses writes the n page classes class(i) into the
// classes file of cacheDir and starts a walkerRuntime on them.
func walkerRuntimeWithClasses(t *testing.T, cacheDir, file string, n int, class func(i int) byte) *Runtime {
	t.Helper()
	c := make([]byte, n)
	for i := range c {
		c[i] = class(i)
	}
	writeClasses(file, c)
	r := walkerRuntime(t, cacheDir)
	if !bytes.Equal(r.pool.Load().class, c) {
		t.Fatal("control: the pool did not take the file's classes")
	}
	return r
}

func newPooledRuntime(t *testing.T) *Runtime {
	t.Helper()
	if !cowSupported {
		t.Skip("the reset pool needs Linux (copy-on-write memory); off Linux every run is a fresh instance")
	}
	ctx := context.Background()
	wasm := counterGuest()
	r, err := New(ctx, Config{Guest: wasm, GuestSum: sha256.Sum256(wasm), MemoryLimitPages: 16, Reset: true, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	if err := r.Start(ctx, "", func() ([]Call, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if !r.Pooled() {
		t.Fatalf("not pooled: %s", r.WhyFresh())
	}
	return r
}

// assertTemplate fails unless the next leased instance is the template
// byte for byte, every global included.
func assertTemplate(t *testing.T, r *Runtime, after string) {
	t.Helper()
	l, err := r.Lease(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Return()
	tmem, tglobals, err := r.Template()
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Globals(); !slices.Equal(got, tglobals) {
		t.Fatalf("after %s: globals %v, template %v", after, got, tglobals)
	}
	if !bytes.Equal(l.Memory(), tmem) {
		t.Fatalf("after %s: memory differs from the template", after)
	}
}

// TestLeaseCannotBypassReset is the hostile caller of the pool's
// inspection hook (Runtime.Lease): a lease that ran the guest, wrote into
// the copy Memory returned, was returned twice or ran after its return
// never puts a changed instance, or one instance twice, in front of the
// next op.
func TestLeaseCannotBypassReset(t *testing.T) {
	ctx := context.Background()
	t.Run("a lease that ran is reset on Return", func(t *testing.T) {
		r := newPooledRuntime(t)
		l, err := r.Lease(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := l.Run(ctx, Call{Input: []byte("{}"), MaxCalls: 16, MaxLogBytes: 64}); err != nil {
				t.Fatal(err)
			}
		}
		_, tglobals, _ := r.Template()
		if g := l.Globals(); g[0] != tglobals[0]+2 {
			t.Fatalf("control: two runs on one lease left global %d (template %d): the test cannot see a mark", g[0], tglobals[0])
		}
		if m := l.Memory(); m[0] != byte(tglobals[0]+2) {
			t.Fatalf("control: memory[0] = %d after two runs", m[0])
		}
		resets := r.Stats().Resets
		l.Return()
		assertTemplate(t, r, "a lease that ran")
		if got := r.Stats().Resets; got != resets+1 {
			t.Fatalf("resets %d, want %d", got, resets+1)
		}
	})
	t.Run("Memory is a copy", func(t *testing.T) {
		r := newPooledRuntime(t)
		l, err := r.Lease(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m := l.Memory()
		m[0], m[65535] = 0xaa, 0xbb
		if again := l.Memory(); again[0] == 0xaa || again[65535] == 0xbb {
			t.Fatal("writing Memory's result changed the instance")
		}
		l.Return()
		assertTemplate(t, r, "a write into Memory's copy")
	})
	t.Run("Return twice gives the instance back once", func(t *testing.T) {
		r := newPooledRuntime(t)
		a, err := r.Lease(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a.Return()
		a.Return()
		if a.Memory() != nil || a.Globals() != nil {
			t.Error("a returned lease still reads the instance")
		}
		if _, err := a.Run(ctx, Call{Input: []byte("{}"), MaxCalls: 16, MaxLogBytes: 64}); err == nil {
			t.Error("Run after Return ran")
		}
		b, err := r.Lease(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The pool has one instance and one slot: b holds both.
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if c, err := r.Lease(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a second lease while the only instance is leased: %v, %v (the double Return freed a slot or queued the instance twice)", c, err)
		}
		if s := r.Stats(); s.InUse != 1 || s.Idle != 0 {
			t.Fatalf("stats %+v: want 1 in use, 0 idle", s)
		}
		b.Return()
		assertTemplate(t, r, "a double Return")
	})
	t.Run("a lease returned unused onto a full free list", func(t *testing.T) {
		r := newPooledRuntime(t)
		l, err := r.Lease(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The free list full while an instance is leased: the background
		// fill adds its instance after get, finding the list empty, made
		// one.
		extra, err := r.pool.Load().create()
		if err != nil {
			t.Fatal(err)
		}
		r.pool.Load().free <- extra
		returned := make(chan struct{})
		go func() { l.Return(); close(returned) }()
		select {
		case <-returned:
		case <-time.After(5 * time.Second):
			t.Fatal("Return blocked on the full free list, holding its slot")
		}
		if s := r.Stats(); s.InUse != 0 || s.Idle != 1 {
			t.Fatalf("stats %+v: want no slot held, 1 idle", s)
		}
		assertTemplate(t, r, "a Return onto a full free list")
	})
}

// TestCallStackMeasured: a pooled instance keeps its run function between
// ops only while callStackBytes can read the function's call stack; with
// another wazero the read fails closed (-1, nothing kept). This pins the
// read to the wazero in go.mod: a function's stack starts at 10 KiB.
func TestCallStackMeasured(t *testing.T) {
	rt := wazero.NewRuntime(context.Background())
	defer rt.Close(context.Background())
	// (module (func (export "f")))
	mod, err := rt.Instantiate(context.Background(), []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 4, 1, 0x60, 0, 0, 3, 2, 1, 0, 7, 5, 1, 1, 'f', 0, 0, 10, 4, 1, 2, 0, 0x0b})
	if err != nil {
		t.Fatal(err)
	}
	f := mod.ExportedFunction("f")
	if _, err := f.Call(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := callStackBytes(f); n < 10<<10 || n > maxKeptStack {
		t.Fatalf("callStackBytes = %d, want wazero's initial stack (10 KiB)", n)
	}
	if n := callStackBytes(nil); n != -1 {
		t.Fatalf("callStackBytes(nil) = %d, want -1", n)
	}
}

// TestGetResetsWhenEverySlotWaits: when every slot of the pool is held by
// an instance waiting for its reset, an op resets one itself and takes its
// slot instead of sleeping until a reset goroutine frees one. With no
// reset goroutine at all (so only that path resets), a pool of one runs
// op after op, each on an instance in the template state: the run's mark
// (a global and a memory word, +1 per run) is always the template's + 1.
func TestGetResetsWhenEverySlotWaits(t *testing.T) {
	defer func(f func(int) int) { startResetWorkers = f }(startResetWorkers)
	startResetWorkers = func(int) int { return 0 }
	r := newPooledRuntime(t)
	_, tglobals, err := r.Template()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 20 {
		resets := r.Stats().Resets
		// Within a second, or never: with no reset goroutine, a get that
		// waited for a free slot would wait for ever.
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		l, err := r.Lease(lctx)
		cancel()
		if err != nil {
			t.Fatalf("op %d: %v (the released instance was not reset by the op)", i, err)
		}
		if i > 0 {
			if got := r.Stats().Resets; got != resets+1 {
				t.Fatalf("op %d: resets %d, want %d", i, got, resets+1)
			}
		}
		if _, err := l.Run(ctx, Call{Input: []byte("{}"), MaxCalls: 16, MaxLogBytes: 64}); err != nil {
			t.Fatal(err)
		}
		if g, m := l.Globals()[0], l.Memory()[0]; g != tglobals[0]+1 || m != byte(tglobals[0]+1) {
			t.Fatalf("op %d: global %d, memory[0] %d after one run; the template's global is %d: state carried over", i, g, m, tglobals[0])
		}
		l.Return()
	}
	if s := r.Stats(); s.Resets < 19 || s.Discards != 0 {
		t.Fatalf("stats %+v: want 19 resets and no discard", s)
	}
}

// TestResetWorkers: one reset goroutine per two cores, at most one per two
// instances, at least one.
func TestResetWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct {
		name              string
		procs, size, want int
	}{
		{"one core", 1, 4, 1},
		{"two cores", 2, 4, 1},
		{"sixteen cores", 16, 32, 8},
		{"small pool", 16, 3, 1},
		{"pool of one", 8, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.GOMAXPROCS(tc.procs)
			if got := resetWorkers(tc.size); got != tc.want {
				t.Fatalf("resetWorkers(%d) with %d cores = %d, want %d", tc.size, tc.procs, got, tc.want)
			}
		})
	}
}

// TestKeptRunStackAsNew: the length of a kept run function's call stack
// is state the next op can time (growing it costs an allocation and a
// copy), so a pooled instance keeps its function only while an op left
// the stack as long as a new function's. Whatever depth an op's calls
// reached, the next op starts on a stack of that one length.
func TestKeptRunStackAsNew(t *testing.T) {
	rt := wazero.NewRuntime(context.Background())
	defer rt.Close(context.Background())
	// (module (func (export "run") (param i32)
	//   (if (local.get 0) (then (call 0 (i32.sub (local.get 0) (i32.const 1)))))))
	mod, err := rt.Instantiate(context.Background(), []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 5, 1, 0x60, 1, 0x7f, 0,
		3, 2, 1, 0,
		7, 7, 1, 3, 'r', 'u', 'n', 0, 0,
		10, 16, 1, 14, 0, 0x20, 0, 0x04, 0x40, 0x20, 0, 0x41, 1, 0x6b, 0x10, 0, 0x0b, 0x0b})
	if err != nil {
		t.Fatal(err)
	}
	fresh := callStackBytes(mod.ExportedFunction("run"))
	if fresh < 0 {
		t.Fatal("call stack not measured")
	}
	inst := &instance{mod: mod}
	for _, tc := range []struct {
		name  string
		depth uint64
		kept  bool
	}{
		{"no calls", 0, true},
		{"shallow", 10, true},
		{"grows once", 2000, false},
		{"shallow after deep", 10, true},
		{"deep", 5000, false},
		{"past the cap", 50000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := inst.run().Call(context.Background(), tc.depth); err != nil {
				t.Fatal(err)
			}
			inst.keepRun()
			if (inst.fn != nil) != tc.kept {
				t.Fatalf("kept = %v after calls %d deep, want %v", inst.fn != nil, tc.depth, tc.kept)
			}
			if n := callStackBytes(inst.run()); n != fresh {
				t.Fatalf("the next op's call stack is %d bytes, a new function's %d", n, fresh)
			}
		})
	}
}
