package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/elevenmessenger/pinned/host/internal/sandbox/wasmbin"
	"github.com/elevenmessenger/pinned/internal/abi"
)

// template is the state every pooled instance is reset to: linear memory
// (as a sealed image), the values of every mutable global, and the guest's
// monotonic clock when it was taken.
type template struct {
	image   *memImage
	globals []uint64
	pages   uint32
	clock   time.Duration
}

// instance is one reusable module instance.
type instance struct {
	mod     api.Module
	mem     *cowMemory
	globals []api.MutableGlobal
	fn      api.Function // the run export, kept while its call stack is as new
	fnStack int          // the length of fn's call stack when it was new
}

// run returns the instance's run export. A wazero function owns its call
// stack, a Go slice that doubles as wasm calls nest (up to ~100 MiB,
// outside the memory limit). The stack's length is state an op can time
// (a stack the last op grew makes the next op's deep calls cheaper), so
// the function is kept between ops only while its stack is still as long
// as when it was new (keepRun): every op starts on a stack of the same
// length, as on a fresh instance.
func (i *instance) run() api.Function {
	if i.fn == nil {
		i.fn = i.mod.ExportedFunction(abi.ExportRun)
		i.fnStack = callStackBytes(i.fn)
	}
	return i.fn
}

// keepRun drops the kept function unless its call stack is known to be
// as long as when it was new (and at most maxKeptStack bytes).
func (i *instance) keepRun() {
	if i.fn != nil {
		if n := callStackBytes(i.fn); n < 0 || n != i.fnStack || n > maxKeptStack {
			i.fn = nil
		}
	}
}

// maxKeptStack is the largest call stack a pooled instance keeps between
// ops: 256 KiB, several times what the executor's ops need.
const maxKeptStack = 256 << 10

// callStackBytes is the length of a wazero function's call stack, read
// from the optimizing compiler's call engine (its unexported "stack"
// []byte); -1 when f has no such field (another wazero version or
// engine), and then nothing is kept (TestCallStackMeasured).
func callStackBytes(f api.Function) int {
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return -1
	}
	v = v.Elem()
	if v.Kind() != reflect.Struct {
		return -1
	}
	s := v.FieldByName("stack")
	if !s.IsValid() || s.Kind() != reflect.Slice || s.Type().Elem().Kind() != reflect.Uint8 {
		return -1
	}
	return s.Len()
}

// pool hands out instances reset to the template. At most max exist at
// once; sandbox time per op is microseconds, so a small pool serves many
// concurrent ops (egress happens after the instance is back).
type pool struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule // the guest with its globals exported (owned by the Runtime)
	names    []string              // export names of the mutable globals
	maxBytes uint64
	tmpl     *template
	free     chan *instance // instances in the template state
	dirty    chan *instance // released instances waiting for their reset
	done     chan struct{}  // closed with the pool
	sem      chan struct{}  // one token per instance in use or being reset
	closed   atomic.Bool
	// filling is the background fill; close waits for it, so no instance
	// is being created from a template (or a runtime) that close releases.
	filling sync.WaitGroup
	// resets and discards count what put did, for tests and metrics.
	resets, discards atomic.Int64
	// restoredPages counts the 4 KiB pages resets copied back or dropped.
	restoredPages atomic.Int64
	// trackedResets counts the resets done with write tracking.
	trackedResets atomic.Int64
	// scan says how resets find the written pages, as the first pooled
	// instance was primed (ResetScan).
	scan string
	// class is the canonical page state reset returns every instance to,
	// learned from the registry's own ops (see cowMemory.reset).
	class []byte
	// classesFrom says where class came from: "probe" or "cache".
	classesFrom string
	// templateFrom says where tmpl came from: "warm-up" (built at this
	// start) or "cache" (readTemplate).
	templateFrom string
}

// guestPlan is the guest as the host runs it: instrumented with the
// countdown that calls sched_yield and its mutable globals exported
// (wasmbin.Instrument).
type guestPlan struct {
	wasm []byte
	// globals are the export names of the mutable globals (reset restores
	// them).
	globals []string
	// notResettable says why IsolationReset cannot be used; empty when it
	// can.
	notResettable string
}

// planCacheVersion names the instrumentation scheme in cached plans; bump
// it whenever Instrument's output (or the cache's format) changes.
const planCacheVersion = "6"

// castagnoli is the CRC-32C table (hardware-assisted on amd64 and arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// planGuestCached is planGuest with its result kept in cacheDir (beside
// wazero's compiled code, and trusted as much), keyed by sum, the guest's
// SHA-256: instrumenting the executor takes tens of milliseconds a start.
// The cached module is checked against the CRC-32C recorded beside it,
// which catches a damaged file; it is not a defence against whoever can
// write the directory, who could as well rewrite wazero's machine code
// there (docs/OPERATING.md: the cache directory is the process's own).
func planGuestCached(wasm []byte, sum [sha256.Size]byte, cacheDir string) (*guestPlan, error) {
	if cacheDir == "" {
		return planGuest(wasm)
	}
	base := filepath.Join(cacheDir, "pinned-plan-v"+planCacheVersion+"-"+hex.EncodeToString(sum[:]))
	type meta struct {
		Globals       []string `json:"globals"`
		NotResettable string   `json:"not_resettable"`
		CRC32C        uint32   `json:"crc32c"` // of the .wasm
		Size          int      `json:"size"`   // of the .wasm, bytes
	}
	if mb, err := readCacheFile(base + ".json"); err == nil {
		var m meta
		if json.Unmarshal(mb, &m) == nil {
			if w, err := readCacheFile(base + ".wasm"); err == nil && len(w) == m.Size && crc32.Checksum(w, castagnoli) == m.CRC32C {
				p := &guestPlan{wasm: w, globals: m.Globals, notResettable: m.NotResettable}
				if !cowSupported {
					p.notResettable = errNoCowReason().Error()
				}
				return p, nil
			}
		}
	}
	p, err := planGuest(wasm)
	if err != nil {
		return nil, err
	}
	mb, _ := json.Marshal(meta{Globals: p.globals, NotResettable: p.notResettable, CRC32C: crc32.Checksum(p.wasm, castagnoli), Size: len(p.wasm)})
	if os.MkdirAll(cacheDir, 0o700) == nil {
		writeAtomic(base+".wasm", p.wasm)
		writeAtomic(base+".json", mb)
	}
	return p, nil
}

// writeAtomic writes b to a file through a temporary name and a rename
// (writeAtomicWith).
func writeAtomic(path string, b []byte) {
	writeAtomicWith(path, func(f *os.File) error {
		_, err := f.Write(b)
		return err
	})
}

// writeAtomicWith writes a file with write through a temporary name and
// a rename, so a reader never sees half of it, and reports whether the
// file is in place. Errors are otherwise ignored: the cache is an
// optimisation.
func writeAtomicWith(path string, write func(*os.File) error) bool {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return false
	}
	werr := write(tmp)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), path) != nil {
		os.Remove(tmp.Name())
		return false
	}
	return true
}

// planGuest reads and instruments a guest.
func planGuest(wasm []byte) (*guestPlan, error) {
	m, err := wasmbin.Parse(wasm)
	if err != nil {
		return nil, err
	}
	if m.HasStart {
		// wazero runs a start function inside InstantiateModule, before any
		// deadline can be armed; a reactor never has one.
		return nil, errors.New("the guest has a start function; a guest is a WASI reactor initialized by _initialize")
	}
	ins, err := m.Instrument()
	if err != nil {
		// Fail closed: without the countdown nothing bounds the guest's
		// time (wazero's close-on-done checks loop heads only, so a
		// loop-free tree of calls outruns it; see docs/RATIONALE.md).
		return nil, fmt.Errorf("the deadline check cannot be added: %w", err)
	}
	p := &guestPlan{wasm: ins.Wasm, globals: ins.Globals, notResettable: m.NotResettable}
	switch {
	case !cowSupported:
		p.notResettable = errNoCowReason().Error()
	case m.ImportedGlobals+m.ImportedTables+m.ImportedMemories > 0:
		p.notResettable = "the guest imports a global, table or memory"
	}
	return p, nil
}

// newPool builds the template (instantiate, _initialize, one warm-up op
// per registry op, snapshot) from the planned guest and fills the pool.
func newPool(ctx context.Context, r *Runtime, key string, warm []Call) (_ *pool, err error) {
	size := r.size
	p := &pool{
		rt:       r.rt,
		compiled: r.compiled,
		names:    r.plan.globals,
		maxBytes: r.maxBytes,
		free:     make(chan *instance, size),
		dirty:    make(chan *instance, size),
		done:     make(chan struct{}),
		// The fresh instances' slots: while the pool is built in the
		// background (StartBackground) runs take fresh instances, and
		// those still running when it takes over count against the
		// same Config.PoolSize.
		sem: r.fresh,
	}
	defer func() {
		if err != nil && p.tmpl != nil {
			p.tmpl.image.close() // the pool's reference: no pool holds it
		}
	}()
	// A template kept by an earlier start of this build, for this guest,
	// memory limit, registry and warm-up, or one built now and kept.
	tmplFile := templatePath(r.cacheDir, r.guestSum, r.maxBytes, key, warm)
	if t, err := readTemplate(tmplFile, len(p.names), uint32(r.maxBytes/65536)); err == nil {
		p.tmpl, p.templateFrom = t, "cache"
	} else {
		if err := p.buildTemplate(ctx, warm); err != nil {
			return nil, err
		}
		p.templateFrom = "warm-up"
		writeTemplate(tmplFile, p.tmpl)
	}
	// The canonical page state: run the warm-up ops on a fresh copy of the
	// template, each from the template's pages (probeClasses), and see
	// which pages they wrote and read. That instance has run every warm-up
	// op a second time (a guest keeping state per run may have grown its
	// memory past the template's), so it is closed, never pooled: every
	// pooled instance, the first included, is made by create, the same
	// way (TestPoolFirstInstanceIsTemplate). The first is made while the
	// probe runs (it needs the template, not the classes) and primed once
	// the classes are known; the rest are made in the background, so the
	// engine is ready as soon as the template is (get creates instances
	// on demand). A warm start reads the classes from the cache
	// directory and runs no probe.
	type made struct {
		inst *instance
		err  error
	}
	first := make(chan made, 1)
	go func() {
		inst, err := p.createUnprimed()
		first <- made{inst, err}
	}()
	classFile := classesPath(r.cacheDir, r.guestSum, p.tmpl, warm)
	class, err := readClasses(classFile, p.tmpl.image.size/pageSize)
	p.classesFrom = "cache"
	if err != nil { // no cache, or none for this guest, template and registry
		p.classesFrom = "probe"
		var probe *instance
		if probe, err = p.create(); err == nil {
			class, err = p.probeClasses(ctx, warm, probe)
			probe.mod.Close(context.Background())
			if err == nil && class != nil {
				writeClasses(classFile, class)
			}
		}
	}
	p.class = class
	m := <-first
	if err == nil {
		err = m.err
	}
	if err != nil {
		if m.inst != nil {
			m.inst.mod.Close(context.Background())
		}
		return nil, err
	}
	inst := m.inst
	if err := inst.mem.prime(p.class); err != nil {
		inst.mod.Close(context.Background())
		return nil, err
	}
	p.scan = "pagemap"
	if inst.mem.tracked() {
		p.scan = "write tracking"
	} else if err := inst.mem.wpErr(); err != nil {
		p.scan = "pagemap (" + err.Error() + ")"
	}
	p.free <- inst
	for range startResetWorkers(size) {
		go p.resetLoop()
	}
	p.filling.Add(1)
	go func() {
		defer p.filling.Done()
		p.fill(size - 1)
	}()
	return p, nil
}

// pageSize is the page a reset works in: 4 KiB, the kernel's.
const pageSize = 4096

// Page classes of the canonical state a reset returns to (pageClasses).
const (
	pageCold  = 0 // not mapped
	pageRead  = 1 // mapped from the image, never written (a file page)
	pageWrite = 2 // a private copy, present, equal to the image
)

// classesVersion names the format and meaning of a page-classes file in
// the cache directory; bump it whenever probeClasses or the classes
// change.
const classesVersion = "1"

// classesPath is where the page classes of this guest, template size and
// warm-up ops are kept in cacheDir ("" without a cache directory). The
// classes depend only on those: every warm-up op runs from the template,
// and a guest's memory writes are fixed by its code and input.
func classesPath(cacheDir string, guestSum [sha256.Size]byte, t *template, warm []Call) string {
	if cacheDir == "" {
		return ""
	}
	h := sha256.New()
	h.Write([]byte("pinned page classes v" + classesVersion + "\x00"))
	h.Write(guestSum[:])
	var n [8]byte
	binary.LittleEndian.PutUint32(n[:4], t.pages)
	binary.LittleEndian.PutUint32(n[4:], uint32(len(warm)))
	h.Write(n[:])
	hashInputs(h, warm)
	return filepath.Join(cacheDir, "pinned-classes-v"+classesVersion+"-"+hex.EncodeToString(h.Sum(nil)))
}

// hashInputs writes each warm-up input to h (hashField), so no two
// lists of inputs write the same bytes.
func hashInputs(h hash.Hash, warm []Call) {
	for _, w := range warm {
		hashField(h, w.Input)
	}
}

// hashField writes b to h, its length first (uint64, little-endian).
func hashField(h hash.Hash, b []byte) {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

// readClasses reads the page classes kept at path: one byte per 4 KiB
// page of the image (pages of them), each pageCold, pageRead or
// pageWrite, then their CRC-32C (4 bytes, little-endian). A file of
// another length, with another byte or a wrong CRC is an error, and the
// pool probes again. Like the rest of the cache directory the file is
// trusted as much as the process (docs/OPERATING.md); even so, classes
// only choose the canonical state a reset returns to, and a reset returns
// every instance to the template whatever they say
// (TestResetAnyClassesFromCache).
func readClasses(path string, pages int) ([]byte, error) {
	if path == "" {
		return nil, errors.New("no cache directory")
	}
	b, err := readCacheFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) != pages+4 {
		return nil, fmt.Errorf("page classes of %d bytes, want %d", len(b), pages+4)
	}
	class := b[:pages]
	if crc32.Checksum(class, castagnoli) != binary.LittleEndian.Uint32(b[pages:]) {
		return nil, errors.New("page classes damaged (CRC-32C)")
	}
	for _, k := range class {
		if k > pageWrite {
			return nil, fmt.Errorf("page class %d", k)
		}
	}
	return class, nil
}

// writeClasses keeps class at path (readClasses' format); errors are
// ignored, the cache is an optimisation.
func writeClasses(path string, class []byte) {
	if path == "" {
		return
	}
	b := binary.LittleEndian.AppendUint32(append([]byte(nil), class...), crc32.Checksum(class, castagnoli))
	writeAtomic(path, b)
}

// probeClasses runs each warm-up op on probe from the template's state
// and returns the page classes of all of them together: a page any op
// wrote is write-class, one any op only read read-class, the rest cold.
// After each op the pages it wrote are dropped (dropWritten) and the
// globals set to the template's, so every op writes what it writes when
// a pooled instance runs it, from the template. Run back to back, the ops
// would each start where the last left the guest's heap, and the write
// class would hold every page that heap reached: 74 pages for the
// registry's 153 ops against 30, with empty warm-up args (the pages each
// reset copies). The class is a choice of canonical state, not a trust:
// any class resets to the template (docs/RATIONALE.md). No pagemap: nil
// (reset then drops everything). An error is a warm-up op's.
func (p *pool) probeClasses(ctx context.Context, warm []Call, probe *instance) ([]byte, error) {
	class, err := probe.mem.pageClasses()
	if err != nil {
		return nil, nil
	}
	for _, w := range warm {
		if err := p.warm(ctx, []Call{w}, probe); err != nil {
			return nil, err
		}
		cl, err := probe.mem.pageClasses()
		if err != nil {
			return nil, nil
		}
		for i, k := range cl {
			class[i] = max(class[i], k)
		}
		if err := probe.mem.dropWritten(cl); err != nil {
			return nil, err
		}
		for i, g := range probe.globals {
			g.Set(p.tmpl.globals[i])
		}
	}
	return class, nil
}

// fill adds up to n instances to the free list, stopping early when the
// pool closes or an instance cannot be created (get will try again).
func (p *pool) fill(n int) {
	for i := 0; i < n && !p.closed.Load(); i++ {
		inst, err := p.create()
		if err != nil {
			return
		}
		select {
		case p.free <- inst:
		default:
			inst.mod.Close(context.Background())
			return
		}
		if p.closed.Load() {
			p.drain()
			return
		}
	}
}

func errNoCowReason() error { return errors.New("copy-on-write memory needs Linux") }

// templateTimeout bounds building the template (a guest whose
// initialization loops must not hang the engine's start).
const templateTimeout = 30 * time.Second

// buildTemplate runs _initialize and one warm-up op per registry op on a
// scratch instance, then snapshots its memory and globals. The warm-up
// inputs are the registry's own op specs and args built from them: the
// template holds nothing any caller sent.
func (p *pool) buildTemplate(ctx context.Context, warm []Call) error {
	inst, err := p.instantiate()
	if err != nil {
		return err
	}
	defer inst.mod.Close(context.Background())
	// Written from empty, read whole, then unmapped: huge pages spare it
	// most of its page faults (adviseHugePages).
	inst.mem.adviseHugePages()
	ctx, cancel := context.WithTimeout(ctx, templateTimeout)
	defer cancel()
	st := &state{start: time.Now(), clockBase: clockOrigin, maxCall: 1 << 30, log: logBuffer{max: 4096}}
	gctx := context.WithValue(ctx, stateKey{}, st)
	if _, err := inst.mod.ExportedFunction(abi.ExportInitialize).Call(gctx); err != nil {
		return fmt.Errorf("host: guest _initialize: %w (guest output: %q)", err, st.log.buf)
	}
	if err := warmOps(gctx, warm, inst, st); err != nil {
		return err
	}
	mem := inst.mod.Memory()
	buf, ok := mem.Read(0, mem.Size())
	if !ok {
		return errors.New("host: read guest memory for the template")
	}
	img, err := newMemImage(buf)
	if err != nil {
		return err
	}
	t := &template{image: img, pages: mem.Size() / 65536, clock: st.monotonic()}
	for _, g := range inst.globals {
		t.globals = append(t.globals, g.Get())
	}
	p.tmpl = t
	return nil
}

// instantiate creates an instance of the rewritten module over a fresh
// copy-on-write memory reservation; no start function runs.
func (p *pool) instantiate() (*instance, error) {
	var mem *cowMemory
	var allocErr error
	alloc := experimental.MemoryAllocatorFunc(func(cap, max uint64) experimental.LinearMemory {
		if max > p.maxBytes {
			max = p.maxBytes
		}
		mem, allocErr = newCowMemory(max)
		if allocErr != nil {
			return nil
		}
		return mem
	})
	ctx := experimental.WithMemoryAllocator(context.Background(), alloc)
	mod, err := p.rt.InstantiateModule(ctx, p.compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		if allocErr != nil {
			err = allocErr
		}
		if mem != nil {
			mem.Free() // wazero does not close a module that failed to instantiate
		}
		return nil, fmt.Errorf("host: instantiate guest: %w", err)
	}
	inst := &instance{mod: mod, mem: mem}
	for _, name := range p.names {
		g, ok := mod.ExportedGlobal(name).(api.MutableGlobal)
		if !ok {
			mod.Close(context.Background())
			return nil, fmt.Errorf("host: global export %s missing", name)
		}
		inst.globals = append(inst.globals, g)
	}
	return inst, nil
}

// create makes a new instance equal to the template: its memory grown to
// the template's size and replaced by a private mapping of the image, its
// globals set to the template's values, its pages in the canonical state.
func (p *pool) create() (*instance, error) {
	inst, err := p.createUnprimed()
	if err != nil {
		return nil, err
	}
	if err := inst.mem.prime(p.class); err != nil {
		inst.mod.Close(context.Background())
		return nil, err
	}
	return inst, nil
}

// createUnprimed is create without the last step, prime (newPool makes
// the first pooled instance before the page classes are known).
func (p *pool) createUnprimed() (*instance, error) {
	inst, err := p.instantiate()
	if err != nil {
		return nil, err
	}
	mem := inst.mod.Memory()
	if cur := mem.Size() / 65536; cur < p.tmpl.pages {
		if _, ok := mem.Grow(p.tmpl.pages - cur); !ok {
			inst.mod.Close(context.Background())
			return nil, errors.New("host: grow a new instance to the template's size")
		}
	}
	if mem.Size()/65536 != p.tmpl.pages {
		inst.mod.Close(context.Background())
		return nil, errors.New("host: a new instance is larger than the template")
	}
	if err := inst.mem.adopt(p.tmpl.image); err != nil {
		inst.mod.Close(context.Background())
		return nil, err
	}
	for i, g := range inst.globals {
		g.Set(p.tmpl.globals[i])
	}
	return inst, nil
}

// warm runs one op per registry op, with its warm-up args, on inst.
func (p *pool) warm(ctx context.Context, warm []Call, inst *instance) error {
	ctx, cancel := context.WithTimeout(ctx, templateTimeout)
	defer cancel()
	st := &state{start: time.Now(), clockBase: p.tmpl.clock, maxCall: 1 << 30}
	return warmOps(context.WithValue(ctx, stateKey{}, st), warm, inst, st)
}

// warmOps runs every registry op once on inst, with its warm-up args,
// under st (gctx carries st): the inputs come from the registry alone, so
// nothing any caller sent reaches the instance. One function serves every
// warm-up op: its call stack grows once, not once per op, and goes with
// the instance (the template's scratch and the probe are closed after).
func warmOps(gctx context.Context, warm []Call, inst *instance, st *state) error {
	run := inst.run()
	for _, w := range warm {
		st.input, st.op, st.admit, st.res = w.Input, w.Op, w.Admit, Result{}
		st.running = true
		_, err := run.Call(gctx)
		st.running = false
		if err != nil {
			return fmt.Errorf("host: guest warm-up: %w", err)
		}
	}
	return nil
}

// get returns an instance in the template state. At most the pool's size
// are in use at once (running an op or waiting for their reset). When
// every slot is held and an instance waits for its reset, get resets it
// (resetHere); when every instance runs an op, get waits (sandbox time is
// microseconds) until one is released or ctx ends.
func (p *pool) get(ctx context.Context) (*instance, error) {
	select {
	case p.sem <- struct{}{}:
	default:
		// Every slot is taken. Rather than sleep until a reset goroutine
		// frees one, reset a released instance here: its slot becomes
		// this op's (the bound holds), and the op pays one reset instead
		// of a reset plus a wake-up.
		if inst := p.resetHere(); inst != nil {
			return inst, nil
		}
		select {
		case p.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	for {
		var inst *instance
		select {
		case inst = <-p.free:
		default:
			var err error
			if inst, err = p.create(); err != nil {
				<-p.sem
				return nil, err
			}
		}
		if inst.mem.setBusy(true) {
			return inst, nil
		}
		// Freed behind our back (the runtime is closing): drop it.
		inst.mod.Close(context.Background())
		if p.closed.Load() {
			<-p.sem
			return nil, errors.New("host: engine closed")
		}
	}
}

// put releases an instance after an op. reuse is true only when the op's
// run returned normally; the instance is then reset to the template and
// kept, by a reset goroutine so the op does not wait for it (the
// instance's slot is released only once the reset is done, and only a
// reset instance ever reaches the free list). An instance that trapped,
// exited, timed out, grew its memory or cannot be reset is closed
// instead.
func (p *pool) put(inst *instance, reuse bool) {
	if !inst.mem.setBusy(false) {
		p.discards.Add(1)
		<-p.sem
		return // freed while the op ran (the runtime closed): already unmapped
	}
	if !reuse || p.closed.Load() || inst.mod.Memory().Size()/65536 != p.tmpl.pages {
		p.discards.Add(1)
		inst.mod.Close(context.Background())
		<-p.sem
		return
	}
	inst.keepRun()
	select {
	case p.dirty <- inst:
	default:
		p.recycle(inst) // the reset goroutines are behind: reset here
	}
}

// resetWorkers is how many goroutines reset released instances: one per
// two cores, at most one per two instances. A single one caps the pool at
// one reset's time per op, whatever the cores (each op's instance waits
// its turn), while on two cores a second would only take the CPU the ops
// and their answers need.
func resetWorkers(size int) int {
	return max(1, min(size/2, runtime.GOMAXPROCS(0)/2))
}

// startResetWorkers is how many reset goroutines a new pool starts:
// resetWorkers, or none in a test of the paths that reset on an op's own
// goroutine (put when the goroutines are behind, get when every slot
// waits for a reset).
var startResetWorkers = resetWorkers

// resetLoop resets released instances until the pool closes.
func (p *pool) resetLoop() {
	for {
		select {
		case inst := <-p.dirty:
			p.recycle(inst)
		case <-p.done:
			for {
				select {
				case inst := <-p.dirty:
					p.recycle(inst) // closes it: the pool is closed
				default:
					return
				}
			}
		}
	}
}

// recycle resets an instance to the template, returns it to the free
// list and releases its slot.
func (p *pool) recycle(inst *instance) {
	defer func() { <-p.sem }()
	if !p.restore(inst) {
		return
	}
	select {
	case p.free <- inst:
	default:
		inst.mod.Close(context.Background())
	}
}

// resetHere takes a released instance waiting for its reset, resets it on
// the calling goroutine and returns it busy, its slot now the caller's.
// It returns nil, holding no slot, when none is waiting or the reset
// failed (the instance is then closed and its slot released).
func (p *pool) resetHere() *instance {
	select {
	case inst := <-p.dirty:
		if !p.restore(inst) {
			<-p.sem
			return nil
		}
		if inst.mem.setBusy(true) {
			return inst
		}
		inst.mod.Close(context.Background()) // freed behind our back (the runtime is closing)
		<-p.sem
	default:
	}
	return nil
}

// restore resets inst to the template: its memory and its globals. It
// reports whether inst may be used again; when not, inst is closed.
func (p *pool) restore(inst *instance) bool {
	if p.closed.Load() {
		inst.mod.Close(context.Background())
		return false
	}
	n, err := inst.mem.reset(p.class)
	if err != nil {
		p.discards.Add(1)
		inst.mod.Close(context.Background())
		return false
	}
	p.resets.Add(1)
	p.restoredPages.Add(int64(n))
	if inst.mem.tracked() {
		p.trackedResets.Add(1)
	}
	for i, g := range inst.globals {
		g.Set(p.tmpl.globals[i])
	}
	return true
}

func (p *pool) close() {
	if p.closed.Swap(true) {
		return
	}
	close(p.done)
	p.filling.Wait()
	p.drain()
	if p.tmpl != nil {
		p.tmpl.image.close() // the pool's reference; instances hold theirs
	}
}

// drain closes every free instance.
func (p *pool) drain() {
	for {
		select {
		case inst := <-p.free:
			inst.mod.Close(context.Background())
		default:
			return
		}
	}
}
