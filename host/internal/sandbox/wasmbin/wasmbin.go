// Package wasmbin reads and rewrites just enough of the WebAssembly binary
// format (core spec 2.0, section 5) for the host: it instruments a module
// with a countdown at every function entry and loop head that calls the
// host every BudgetInterval of them (where the host enforces the per-op
// deadline), exports its mutable globals so the host can save and restore them, and
// decides whether its code can change any state other than linear memory
// and globals (tables, passive segments), in which case resetting memory
// and globals would not make an instance fresh and the host must not reuse
// it.
//
// It fails closed: an opcode it does not know (SIMD, threads, exceptions,
// GC, …) or a missing sched_yield import makes a module not
// instrumentable, and the host refuses to load it.
package wasmbin

import (
	"errors"
	"fmt"
)

// Section ids (core spec 5.5.2).
const (
	secCustom   = 0
	secType     = 1
	secImport   = 2
	secFunction = 3
	secTable    = 4
	secMemory   = 5
	secGlobal   = 6
	secExport   = 7
	secStart    = 8
	secElement  = 9
	secCode     = 10
	secData     = 11
	secDataCnt  = 12
)

// GlobalExportPrefix prefixes the names of the exports AddGlobalExports
// adds; the suffix is the global's index in decimal.
const GlobalExportPrefix = "pinned.global."

// Module is a parsed module: its sections in order, and what the reset
// strategy needs to know.
type Module struct {
	sections []section
	// MutableGlobals are the indices (in the global index space) of the
	// module's own mutable globals.
	MutableGlobals []uint32
	// ImportedGlobals, ImportedTables and ImportedMemories count imports
	// of those kinds.
	ImportedGlobals, ImportedTables, ImportedMemories int
	// NotResettable says why resetting memory and globals would not make
	// an instance equal to a fresh one; empty when it would. It is complete
	// only after ScanCode.
	NotResettable string

	// DefinedGlobals counts the module's own globals.
	DefinedGlobals int

	// HasStart reports a start section: code wazero runs while
	// instantiating, before the host can arm anything.
	HasStart bool

	// tableMin sums the initial sizes of the module's own tables,
	// tableMax their maximums; tableUnbounded is set when one has none.
	tableMin, tableMax uint64
	tableUnbounded     bool

	// yield is the function index of the import YieldModule.YieldName
	// with type () -> i32; -1 when the module has none.
	yield int64
	// funcImports counts imported functions; types[i] says whether type
	// i is () -> i32 (nil when the type section holds a form Parse does
	// not read, which makes the module not instrumentable).
	funcImports int
	types       []bool
	typesKnown  bool
}

type section struct {
	id   byte
	body []byte
}

var errTruncated = errors.New("wasmbin: truncated module")

type reader struct {
	b []byte
	i int
}

func (r *reader) byte() (byte, error) {
	if r.i >= len(r.b) {
		return 0, errTruncated
	}
	c := r.b[r.i]
	r.i++
	return c, nil
}

func (r *reader) bytes(n int) ([]byte, error) {
	if n < 0 || r.i+n > len(r.b) {
		return nil, errTruncated
	}
	b := r.b[r.i : r.i+n]
	r.i += n
	return b, nil
}

// u32 reads an unsigned LEB128 of at most 5 bytes.
func (r *reader) u32() (uint32, error) {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
	}
	return 0, errors.New("wasmbin: LEB128 too long")
}

// sleb skips a signed LEB128 of at most max bytes.
func (r *reader) sleb(max int) error {
	for n := 0; n < max; n++ {
		c, err := r.byte()
		if err != nil {
			return err
		}
		if c&0x80 == 0 {
			return nil
		}
	}
	return errors.New("wasmbin: LEB128 too long")
}

func (r *reader) name() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	b, err := r.bytes(int(n))
	return string(b), err
}

// Parse reads a module's sections, globals, imports and segments. The
// instruction scan of the code section, the slow part, is ScanCode.
func Parse(b []byte) (*Module, error) {
	if len(b) < 8 || string(b[:4]) != "\x00asm" || string(b[4:8]) != "\x01\x00\x00\x00" {
		return nil, errors.New("wasmbin: not a WebAssembly 1.0 module")
	}
	r := &reader{b: b, i: 8}
	m := &Module{yield: -1, typesKnown: true}
	for r.i < len(b) {
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		n, err := r.u32()
		if err != nil {
			return nil, err
		}
		body, err := r.bytes(int(n))
		if err != nil {
			return nil, err
		}
		m.sections = append(m.sections, section{id, body})
	}
	for _, s := range m.sections {
		var err error
		switch s.id {
		case secType:
			m.readTypes(s.body)
		case secImport:
			err = m.readImports(s.body)
		case secGlobal:
			err = m.readGlobals(s.body)
		case secTable:
			err = m.readTables(s.body)
		case secStart:
			m.HasStart = true
		case secElement:
			err = m.readElements(s.body)
		case secData:
			err = m.readData(s.body)
		case secExport:
			err = m.readExports(s.body)
		case secCode:
			// Read by Instrument.
		}
		if err != nil {
			return nil, err
		}
	}
	if m.tableMin > MaxTableEntries {
		return nil, fmt.Errorf("wasmbin: the tables start with %d entries, more than %d", m.tableMin, MaxTableEntries)
	}
	return m, nil
}

// MaxTableEntries bounds the entries of a module's tables, together:
// wazero keeps them on the Go heap (8 bytes each), outside the linear
// memory limit, and lets table.grow reach 2^32-1 entries (32 GiB: a
// fatal out-of-memory that kills the process). table.grow is allowed
// only when every table declares a maximum and the maximums fit.
const MaxTableEntries = 1 << 20

func (m *Module) readTables(b []byte) error {
	return eachEntry(b, func(r *reader, _ uint32) error {
		if _, err := r.byte(); err != nil { // reftype
			return err
		}
		flag, err := r.byte()
		if err != nil {
			return err
		}
		min, err := r.u32()
		if err != nil {
			return err
		}
		m.tableMin += uint64(min)
		if flag&1 != 0 {
			max, err := r.u32()
			if err != nil {
				return err
			}
			m.tableMax += uint64(max)
		} else {
			m.tableUnbounded = true
		}
		return nil
	})
}

// eachEntry reads a section body that is a vector: its count, then each
// entry with fn (given the entry's index), stopping at the first error.
func eachEntry(b []byte, fn func(r *reader, i uint32) error) error {
	r := &reader{b: b}
	n, err := r.u32()
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		if err := fn(r, i); err != nil {
			return err
		}
	}
	return nil
}

// globals is the module's global count, imported and defined.
func (m *Module) globals() int { return m.ImportedGlobals + m.DefinedGlobals }

func (m *Module) notResettable(format string, args ...any) {
	if m.NotResettable == "" {
		m.NotResettable = fmt.Sprintf(format, args...)
	}
}

// readExports refuses an export of a global that does not exist: the
// index the budget global takes would otherwise become valid.
func (m *Module) readExports(b []byte) error {
	return eachEntry(b, func(r *reader, i uint32) error {
		if _, err := r.name(); err != nil {
			return err
		}
		kind, err := r.byte()
		if err != nil {
			return err
		}
		idx, err := r.u32()
		if err != nil {
			return err
		}
		if kind == 3 && int64(idx) >= int64(m.globals()) {
			return fmt.Errorf("wasmbin: export %d names global %d of %d", i, idx, m.globals())
		}
		return nil
	})
}

func (m *Module) readImports(b []byte) error {
	return eachEntry(b, func(r *reader, _ uint32) error {
		module, err := r.name()
		if err != nil {
			return err
		}
		name, err := r.name()
		if err != nil {
			return err
		}
		kind, err := r.byte()
		if err != nil {
			return err
		}
		switch kind {
		case 0: // func: type index
			var t uint32
			if t, err = r.u32(); err == nil && module == YieldModule && name == YieldName &&
				m.typesKnown && int(t) < len(m.types) && m.types[t] && m.yield < 0 {
				m.yield = int64(m.funcImports)
			}
			m.funcImports++
		case 1: // table: reftype, limits
			m.ImportedTables++
			if _, err = r.byte(); err == nil {
				err = r.limits()
			}
		case 2: // memory: limits
			m.ImportedMemories++
			err = r.limits()
		case 3: // global: valtype, mut
			m.ImportedGlobals++
			_, err = r.bytes(2)
		default:
			return fmt.Errorf("wasmbin: unknown import kind %d", kind)
		}
		if err != nil {
			return err
		}
		return nil
	})
}

func (r *reader) limits() error {
	flag, err := r.byte()
	if err != nil {
		return err
	}
	if _, err := r.u32(); err != nil {
		return err
	}
	if flag&1 != 0 {
		_, err = r.u32()
	}
	return err
}

// readTypes records which function types are () -> i32. A form other
// than a plain function type (the GC proposal's rec and sub types) leaves
// the types unknown, and the module not instrumentable.
func (m *Module) readTypes(b []byte) {
	r := &reader{b: b}
	n, err := r.u32()
	if err != nil {
		m.typesKnown = false
		return
	}
	for i := uint32(0); i < n; i++ {
		form, err := r.byte()
		if err != nil || form != 0x60 {
			m.typesKnown = false
			return
		}
		var counts [2]uint32
		i32Result := true
		for k := range counts {
			if counts[k], err = r.u32(); err != nil {
				m.typesKnown = false
				return
			}
			for j := uint32(0); j < counts[k]; j++ {
				c, err := r.byte()
				if err != nil || !isValType(c) {
					m.typesKnown = false
					return
				}
				if k == 1 && c != 0x7f {
					i32Result = false
				}
			}
		}
		m.types = append(m.types, counts[0] == 0 && counts[1] == 1 && i32Result)
	}
}

func (m *Module) readGlobals(b []byte) error {
	r := &reader{b: b}
	n, err := r.u32()
	if err != nil {
		return err
	}
	m.DefinedGlobals = int(n)
	for i := uint32(0); i < n; i++ {
		hdr, err := r.bytes(2) // valtype, mut
		if err != nil {
			return err
		}
		if hdr[1] == 1 {
			m.MutableGlobals = append(m.MutableGlobals, uint32(m.ImportedGlobals)+i)
		} else if hdr[1] != 0 {
			return errors.New("wasmbin: bad global mutability")
		}
		if err := r.constExpr(m.ImportedGlobals + int(i)); err != nil {
			return err
		}
	}
	return nil
}

// constExpr skips a constant expression up to its end opcode. A
// global.get in it must name one of the first globals globals (the
// budget global Instrument adds must not become reachable, whatever the
// runtime's own rules for constant expressions).
func (r *reader) constExpr(globals int) error {
	for {
		op, err := r.byte()
		if err != nil {
			return err
		}
		if op == 0x0b {
			return nil
		}
		if op == 0x23 {
			save := r.i
			idx, err := r.u32()
			if err != nil {
				return err
			}
			if int64(idx) >= int64(globals) {
				return fmt.Errorf("wasmbin: a constant expression names global %d of %d", idx, globals)
			}
			r.i = save
		}
		if err := r.immediates(op); err != nil {
			return err
		}
	}
}

func (m *Module) readElements(b []byte) error {
	return eachEntry(b, func(r *reader, i uint32) error {
		flags, err := r.u32()
		if err != nil {
			return err
		}
		if flags&3 == 1 {
			m.notResettable("element segment %d is passive", i)
		}
		if flags&1 == 0 { // active
			if flags&2 != 0 {
				if _, err := r.u32(); err != nil { // table index
					return err
				}
			}
			if err := r.constExpr(m.globals()); err != nil {
				return err
			}
		}
		if flags&3 != 0 && flags != 4 { // elemkind or reftype byte
			if _, err := r.byte(); err != nil {
				return err
			}
		}
		cnt, err := r.u32()
		if err != nil {
			return err
		}
		for j := uint32(0); j < cnt; j++ {
			if flags&4 != 0 {
				err = r.constExpr(m.globals())
			} else {
				_, err = r.u32()
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func (m *Module) readData(b []byte) error {
	return eachEntry(b, func(r *reader, i uint32) error {
		flags, err := r.u32()
		if err != nil {
			return err
		}
		switch flags {
		case 0:
			err = r.constExpr(m.globals())
		case 1:
			m.notResettable("data segment %d is passive", i)
		case 2:
			if _, err = r.u32(); err == nil {
				err = r.constExpr(m.globals())
			}
		default:
			return fmt.Errorf("wasmbin: bad data segment flags %d", flags)
		}
		if err != nil {
			return err
		}
		size, err := r.u32()
		if err != nil {
			return err
		}
		if _, err := r.bytes(int(size)); err != nil {
			return err
		}
		return nil
	})
}

// ErrNotInstrumentable means the module lacks the yield import or its code
// holds an instruction Instrument cannot decode (SIMD, threads,
// exceptions, GC, …): the host refuses it.
var ErrNotInstrumentable = errors.New("wasmbin: code not instrumentable")

// YieldModule and YieldName name the import the inserted check calls:
// WASI's sched_yield, which the Go wasip1 runtime imports (type
// () -> i32). The host's sched_yield is where the per-op deadline is
// enforced.
const (
	YieldModule = "wasi_snapshot_preview1"
	YieldName   = "sched_yield"
)

// BudgetExport names the global Instrument adds: the countdown of
// function entries and loop heads until the next call to the yield
// import.
const BudgetExport = "pinned.budget"

// BudgetInterval is how many function entries and loop heads run between
// two calls to the yield import. A call costs tens of nanoseconds, an
// iteration at least one: the calls cost the guest under 5%, and a tight
// loop still reaches the host every few microseconds.
const BudgetInterval = 1024

// StraightLineInterval is the most instructions a function body holds
// between two countdown checks: one is inserted every StraightLineInterval
// instructions too, charging StraightLineCost steps, so 1024 steps never
// cover more than 1024/StraightLineCost*StraightLineInterval (64Ki)
// instructions of loop-free code, however long the bodies.
const (
	StraightLineInterval = 256
	StraightLineCost     = 4
)

// BulkShift sets what a bulk instruction (memory.copy, memory.fill,
// memory.init, table.copy, table.init, table.fill) costs: 1 + its length
// operand >> BulkShift steps, charged (and the host called when the
// budget runs out) before it runs, so one step covers at most 1 KiB of
// bulk work (a single instruction still runs whole: at most the memory
// or table size).
const BulkShift = 10

// Instrumented is a module rewritten by Instrument.
type Instrumented struct {
	// Wasm is the rewritten module.
	Wasm []byte
	// Globals are the export names of every mutable global, the budget
	// global included, in index order.
	Globals []string
}

// Instrument rewrites the module for the host, changing nothing the
// module's own code can observe:
//
//   - it adds a mutable i32 global, initially BudgetInterval, exported as
//     BudgetExport;
//
//   - at the entry of every function and the head of every loop it
//     inserts a countdown:
//
//     global.get $budget; i32.const 1; i32.sub; global.set $budget
//     global.get $budget; i32.eqz
//     if
//     call $sched_yield; drop
//     i32.const BudgetInterval; global.set $budget
//     end
//
//     so the running code calls the host's sched_yield every
//     BudgetInterval entries and iterations. Loops and calls are the only
//     ways code runs long, so the host sees every op's code at least every
//     few microseconds: that call is where it enforces the deadline, and
//     where the Go runtime can preempt the goroutine (machine code it
//     cannot stop would otherwise stall every stop-the-world pause, the
//     garbage collector's included, until the guest returns);
//
//   - it exports every mutable global as GlobalExportPrefix + index, so
//     the host can save and restore them.
//
// The module must import YieldModule.YieldName with type () -> i32;
// without it Instrument returns ErrNotInstrumentable. While walking the
// code it also completes NotResettable. It refuses a module whose code
// names a global that does not exist (the new index must not become
// reachable), and returns ErrNotInstrumentable for an instruction it
// cannot decode. The inserted if..end is balanced and holds no branch, so
// every existing branch (by label depth) keeps its target, and its stack
// effect is nil.
func (m *Module) Instrument() (*Instrumented, error) {
	if m.yield < 0 {
		return nil, fmt.Errorf("%w: the module imports no %s.%s of type () -> i32", ErrNotInstrumentable, YieldModule, YieldName)
	}
	total := uint32(m.globals())
	budget := total
	g := appendU32(nil, budget)
	check := append([]byte{0x23}, g...)           // global.get $budget
	check = append(check, 0x41, 0x01, 0x6b, 0x24) // i32.const 1; i32.sub; global.set
	check = append(check, g...)
	check = append(check, 0x23) // global.get $budget
	check = append(check, g...)
	check = append(check, 0x45, 0x04, 0x40, 0x10) // i32.eqz; if (empty); call
	check = appendU32(check, uint32(m.yield))
	check = append(check, 0x1a, 0x41) // drop; i32.const
	check = appendS32(check, BudgetInterval)
	check = append(check, 0x24) // global.set $budget
	check = append(check, g...)
	check = append(check, 0x0b) // end
	// Every StraightLineInterval instructions: budget -= StraightLineCost;
	// if budget <= 0 { call $sched_yield; drop; budget = BudgetInterval }
	straightCheck := append([]byte{0x23}, g...)
	straightCheck = append(straightCheck, 0x41, StraightLineCost, 0x6b, 0x24)
	straightCheck = append(straightCheck, g...)
	straightCheck = append(straightCheck, 0x23)
	straightCheck = append(straightCheck, g...)
	straightCheck = append(straightCheck, 0x41, 0x00, 0x4c, 0x04, 0x40, 0x10) // i32.const 0; i32.le_s; if; call
	straightCheck = appendU32(straightCheck, uint32(m.yield))
	straightCheck = append(straightCheck, 0x1a, 0x41)
	straightCheck = appendS32(straightCheck, BudgetInterval)
	straightCheck = append(straightCheck, 0x24)
	straightCheck = append(straightCheck, g...)
	straightCheck = append(straightCheck, 0x0b)
	// Before a bulk instruction, with its length operand on top:
	// global.set $len; budget -= 1 + len>>BulkShift; if budget <= 0
	// { call $sched_yield; drop; budget = BudgetInterval }; global.get $len
	scratch := appendU32(nil, total+1)
	bulk := append([]byte{0x24}, scratch...)
	bulk = append(bulk, 0x23)
	bulk = append(bulk, g...)
	bulk = append(bulk, 0x23)
	bulk = append(bulk, scratch...)
	bulk = append(bulk, 0x41, BulkShift, 0x76, 0x6b, 0x41, 0x01, 0x6b, 0x24) // i32.const; i32.shr_u; i32.sub; i32.const 1; i32.sub; global.set
	bulk = append(bulk, g...)
	bulk = append(bulk, 0x23)
	bulk = append(bulk, g...)
	bulk = append(bulk, 0x41, 0x00, 0x4c, 0x04, 0x40, 0x10) // i32.const 0; i32.le_s; if; call
	bulk = appendU32(bulk, uint32(m.yield))
	bulk = append(bulk, 0x1a, 0x41) // drop; i32.const
	bulk = appendS32(bulk, BudgetInterval)
	bulk = append(bulk, 0x24)
	bulk = append(bulk, g...)
	bulk = append(bulk, 0x0b, 0x23) // end; global.get $len
	bulk = append(bulk, scratch...)
	initial := appendS32([]byte{0x7f, 0x01, 0x41}, BudgetInterval) // i32, mutable, i32.const K
	initial = append(initial, 0x0b)
	initial = append(initial, 0x7f, 0x01, 0x41, 0x00, 0x0b) // $len: i32, mutable, i32.const 0
	out := []byte("\x00asm\x01\x00\x00\x00")
	globals := append(append([]uint32(nil), m.MutableGlobals...), budget, budget+1)
	wroteGlobals, wroteExports := false, false
	emitGlobals := func(body []byte) error {
		var n uint32
		var rest []byte
		if body != nil {
			r := &reader{b: body}
			var err error
			if n, err = r.u32(); err != nil {
				return err
			}
			rest = body[r.i:]
		}
		b := appendU32(nil, n+2)
		b = append(b, rest...)
		b = append(b, initial...)
		out = appendSection(out, secGlobal, b)
		wroteGlobals = true
		return nil
	}
	emitExports := func(body []byte) error {
		var n uint32
		var rest []byte
		if body != nil {
			r := &reader{b: body}
			var err error
			if n, err = r.u32(); err != nil {
				return err
			}
			rest = body[r.i:]
		}
		b := appendU32(nil, n+uint32(len(globals))+1)
		b = append(b, rest...)
		for _, g := range globals {
			b = appendName(b, GlobalExportPrefix+fmt.Sprint(g))
			b = append(b, 3)
			b = appendU32(b, g)
		}
		b = appendName(b, BudgetExport)
		b = append(b, 3)
		b = appendU32(b, budget)
		out = appendSection(out, secExport, b)
		wroteExports = true
		return nil
	}
	for _, sec := range m.sections {
		// Sections are ordered; insert missing global/export sections at
		// their place (custom and data-count sections do not count).
		if sec.id != secCustom && sec.id != secDataCnt {
			if !wroteGlobals && sec.id > secGlobal {
				if err := emitGlobals(nil); err != nil {
					return nil, err
				}
			}
			if !wroteExports && sec.id > secExport {
				if err := emitExports(nil); err != nil {
					return nil, err
				}
			}
		}
		var err error
		switch sec.id {
		case secGlobal:
			err = emitGlobals(sec.body)
		case secExport:
			err = emitExports(sec.body)
		case secCode:
			var body []byte
			if body, err = m.instrumentCode(sec.body, total, check, straightCheck, bulk); err == nil {
				out = appendSection(out, secCode, body)
			}
		default:
			out = appendSection(out, sec.id, sec.body)
		}
		if err != nil {
			return nil, err
		}
	}
	if !wroteGlobals {
		if err := emitGlobals(nil); err != nil {
			return nil, err
		}
	}
	if !wroteExports {
		if err := emitExports(nil); err != nil {
			return nil, err
		}
	}
	res := &Instrumented{Wasm: out}
	for _, g := range globals {
		res.Globals = append(res.Globals, GlobalExportPrefix+fmt.Sprint(g))
	}
	return res, nil
}

// instrumentCode copies the code section, inserting check after every
// loop's block type, and scans every instruction (see mutates).
func (m *Module) instrumentCode(b []byte, globals uint32, check, straightCheck, bulk []byte) ([]byte, error) {
	r := &reader{b: b}
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	out := appendU32(make([]byte, 0, len(b)+len(b)/8), n)
	var fn []byte
	for f := uint32(0); f < n; f++ {
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		body, err := r.bytes(int(size))
		if err != nil {
			return nil, err
		}
		br := &reader{b: body}
		locals, err := br.u32()
		if err != nil {
			return nil, err
		}
		for l := uint32(0); l < locals; l++ {
			if _, err := br.u32(); err != nil {
				return nil, err
			}
			if _, err := br.byte(); err != nil {
				return nil, err
			}
		}
		fn = append(fn[:0], body[:br.i]...)
		// At the entry of every function too: recursion without loops
		// (a tree of calls) must not outrun the deadline.
		fn = append(fn, check...)
		straight := 0 // instructions since the last countdown step
		for br.i < len(br.b) {
			start := br.i
			op, _ := br.byte()
			if straight++; straight > StraightLineInterval {
				// Stack-neutral and balanced: valid before any instruction.
				fn = append(fn, straightCheck...)
				straight = 1
			}
			if op == 0xfc && isBulk(br) {
				fn = append(fn, bulk...)
			}
			if op == 0xfc && isTableGrow(br) && (m.tableUnbounded || m.ImportedTables > 0 || m.tableMax > MaxTableEntries) {
				return nil, fmt.Errorf("wasmbin: function %d grows a table, and the tables have no maximum of at most %d entries", f, MaxTableEntries)
			}
			if why := mutates(op, br); why != "" {
				m.notResettable("function %d uses %s", f, why)
			}
			if op == 0x23 || op == 0x24 { // global.get, global.set
				save := br.i
				idx, err := br.u32()
				if err != nil {
					return nil, err
				}
				if idx >= globals {
					return nil, fmt.Errorf("wasmbin: function %d names global %d of %d", f, idx, globals)
				}
				br.i = save
			}
			if err := br.immediates(op); err != nil {
				if errors.Is(err, errUnknownOpcode) {
					return nil, fmt.Errorf("%w: function %d: %v", ErrNotInstrumentable, f, err)
				}
				return nil, err
			}
			fn = append(fn, body[start:br.i]...)
			if op == 0x03 { // loop: check at the head of every iteration
				fn = append(fn, check...)
				straight = 0
			}
		}
		out = appendU32(out, uint32(len(fn)))
		out = append(out, fn...)
	}
	return out, nil
}

func appendName(b []byte, s string) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}

var errUnknownOpcode = errors.New("unknown opcode")

// isTableGrow reports whether the 0xFC instruction at r is table.grow.
func isTableGrow(r *reader) bool {
	save := r.i
	sub, err := r.u32()
	r.i = save
	return err == nil && sub == 15
}

// isBulk reports whether the 0xFC instruction at r (sub-opcode not yet
// consumed) does work proportional to a length operand: memory.init,
// memory.copy, memory.fill, table.init, table.copy, table.fill, whose
// length is the i32 on top of the stack.
func isBulk(r *reader) bool {
	save := r.i
	sub, err := r.u32()
	r.i = save
	if err != nil {
		return false
	}
	switch sub {
	case 8, 10, 11, 12, 14, 17:
		return true
	}
	return false
}

// mutates names an instruction that changes a table or a segment. It
// peeks at a 0xFC sub-opcode without consuming it.
func mutates(op byte, r *reader) string {
	switch op {
	case 0x26:
		return "table.set"
	case 0xfc:
		save := r.i
		sub, err := r.u32()
		r.i = save
		if err != nil {
			return ""
		}
		switch sub {
		case 8:
			return "memory.init"
		case 9:
			return "data.drop"
		case 12:
			return "table.init"
		case 13:
			return "elem.drop"
		case 14:
			return "table.copy"
		case 15:
			return "table.grow"
		case 17:
			return "table.fill"
		}
	}
	return ""
}

// immediates skips the immediates of op (core spec 5.4).
func (r *reader) immediates(op byte) error {
	var err error
	switch {
	case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0b || op == 0x0f || op == 0x1a || op == 0x1b || op == 0xd1:
	case op >= 0x45 && op <= 0xc4: // numeric, sign extension
	case op == 0x02 || op == 0x03 || op == 0x04: // blocktype
		var c byte
		if c, err = r.byte(); err == nil && c != 0x40 && !isValType(c) {
			r.i--
			err = r.sleb(5)
		}
	case op == 0x0c || op == 0x0d || op == 0x10 || op == 0x12 || (op >= 0x20 && op <= 0x26) || op == 0xd2:
		_, err = r.u32()
	case op == 0x0e: // br_table
		var n uint32
		if n, err = r.u32(); err == nil {
			for i := uint32(0); i <= n && err == nil; i++ {
				_, err = r.u32()
			}
		}
	case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
		if _, err = r.u32(); err == nil {
			_, err = r.u32()
		}
	case op == 0x1c: // select t*
		var n uint32
		if n, err = r.u32(); err == nil {
			_, err = r.bytes(int(n))
		}
	case op >= 0x28 && op <= 0x3e: // memarg
		err = r.memarg()
	case op == 0x3f || op == 0x40: // memory.size, memory.grow
		_, err = r.u32()
	case op == 0x41:
		err = r.sleb(5)
	case op == 0x42:
		err = r.sleb(10)
	case op == 0x43:
		_, err = r.bytes(4)
	case op == 0x44:
		_, err = r.bytes(8)
	case op == 0xd0: // ref.null t
		_, err = r.byte()
	case op == 0xfc:
		var sub uint32
		if sub, err = r.u32(); err != nil {
			return err
		}
		switch {
		case sub <= 7: // saturating truncation
		case sub == 8: // memory.init data, mem
			if _, err = r.u32(); err == nil {
				_, err = r.u32()
			}
		case sub == 9 || sub == 13 || sub == 15 || sub == 16 || sub == 17:
			_, err = r.u32()
		case sub == 10 || sub == 12 || sub == 14:
			if _, err = r.u32(); err == nil {
				_, err = r.u32()
			}
		case sub == 11:
			_, err = r.u32()
		default:
			return fmt.Errorf("%w 0xfc %d", errUnknownOpcode, sub)
		}
	default:
		return fmt.Errorf("%w 0x%02x", errUnknownOpcode, op)
	}
	return err
}

func (r *reader) memarg() error {
	align, err := r.u32()
	if err != nil {
		return err
	}
	if align&0x40 != 0 { // multi-memory: a memory index follows
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	_, err = r.u32()
	return err
}

func isValType(c byte) bool {
	switch c {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		return true
	}
	return false
}

func appendSection(out []byte, id byte, body []byte) []byte {
	out = append(out, id)
	out = appendU32(out, uint32(len(body)))
	return append(out, body...)
}

// appendS32 appends a signed LEB128.
func appendS32(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}
