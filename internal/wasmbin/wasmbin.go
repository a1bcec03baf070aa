// Package wasmbin reads and rewrites just enough of the WebAssembly binary
// format (core spec 2.0, section 5) for the host: it instruments a module
// with a cheap interrupt check at every loop head (the per-op deadline),
// exports its mutable globals so the host can save and restore them, and
// decides whether its code can change any state other than linear memory
// and globals (tables, passive segments), in which case resetting memory
// and globals would not make an instance fresh and the host must not reuse
// it.
//
// It fails closed: an opcode it does not know (SIMD, threads, exceptions,
// GC, …) makes a module not instrumentable, and the host then falls back
// to fresh instances with wazero's own termination checks.
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

	hasMemory bool // a memory of at least one page
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
	m := &Module{}
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
		case secImport:
			err = m.readImports(s.body)
		case secGlobal:
			err = m.readGlobals(s.body)
		case secMemory:
			err = m.readMemory(s.body)
		case secStart:
			m.HasStart = true
		case secElement:
			err = m.readElements(s.body)
		case secData:
			err = m.readData(s.body)
		case secCode:
			// Read by Instrument.
		}
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Module) notResettable(format string, args ...any) {
	if m.NotResettable == "" {
		m.NotResettable = fmt.Sprintf(format, args...)
	}
}

func (m *Module) readImports(b []byte) error {
	r := &reader{b: b}
	n, err := r.u32()
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		if _, err := r.name(); err != nil {
			return err
		}
		if _, err := r.name(); err != nil {
			return err
		}
		kind, err := r.byte()
		if err != nil {
			return err
		}
		switch kind {
		case 0: // func: type index
			_, err = r.u32()
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
	}
	return nil
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

func (m *Module) readMemory(b []byte) error {
	r := &reader{b: b}
	n, err := r.u32()
	if err != nil || n == 0 {
		return err
	}
	if _, err := r.byte(); err != nil { // limits flag
		return err
	}
	min, err := r.u32()
	if err != nil {
		return err
	}
	m.hasMemory = min > 0
	return nil
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
		if err := r.constExpr(); err != nil {
			return err
		}
	}
	return nil
}

// constExpr skips a constant expression up to its end opcode.
func (r *reader) constExpr() error {
	for {
		op, err := r.byte()
		if err != nil {
			return err
		}
		if op == 0x0b {
			return nil
		}
		if err := r.immediates(op); err != nil {
			return err
		}
	}
}

func (m *Module) readElements(b []byte) error {
	r := &reader{b: b}
	n, err := r.u32()
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
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
			if err := r.constExpr(); err != nil {
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
				err = r.constExpr()
			} else {
				_, err = r.u32()
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *Module) readData(b []byte) error {
	r := &reader{b: b}
	n, err := r.u32()
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		flags, err := r.u32()
		if err != nil {
			return err
		}
		switch flags {
		case 0:
			err = r.constExpr()
		case 1:
			m.notResettable("data segment %d is passive", i)
		case 2:
			if _, err = r.u32(); err == nil {
				err = r.constExpr()
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
	}
	return nil
}

// ErrNotInstrumentable means the code holds an instruction Instrument
// cannot decode (SIMD, threads, exceptions, GC, …): the host then runs the
// module as is, with wazero's own (slower) termination checks.
var ErrNotInstrumentable = errors.New("wasmbin: code not instrumentable")

// InterruptExport names the global Instrument adds: the host sets it to
// InterruptAddress to make the running code trap at its next loop
// iteration.
const InterruptExport = "pinned.interrupt"

// InterruptAddress is the value that interrupts: an address past the end
// of any 32-bit linear memory.
const InterruptAddress = 0xFFFFFFF0

// Instrumented is a module rewritten by Instrument.
type Instrumented struct {
	// Wasm is the rewritten module.
	Wasm []byte
	// Globals are the export names of every mutable global, the interrupt
	// global included, in index order.
	Globals []string
}

// Instrument rewrites the module for the host, changing nothing the
// module's own code can observe:
//
//   - it adds a mutable i32 global, initially 0, exported as
//     InterruptExport;
//   - at the entry of every function and the head of every loop it
//     inserts
//     "global.get $interrupt; i32.load8_u; drop": a one-byte load at the
//     address the global holds, 0 until the host stores InterruptAddress,
//     after which the load traps at the next call or iteration (an epoch
//     check: a load, where wazero's own termination check is an indirect
//     call). Loops and calls are the only ways code runs long; the module
//     must define a memory of at least one page;
//   - it exports every mutable global as GlobalExportPrefix + index, so
//     the host can save and restore them.
//
// While walking the code it also completes NotResettable. It refuses a
// module whose code names a global that does not exist (the new index
// must not become reachable), and returns ErrNotInstrumentable for an
// instruction it cannot decode. A loop inserted inside an if..end adds no
// label depth outside itself, and wasm branches are by depth, so every
// existing branch keeps its target.
func (m *Module) Instrument() (*Instrumented, error) {
	if !m.hasMemory {
		return nil, fmt.Errorf("%w: the module defines no memory of at least one page", ErrNotInstrumentable)
	}
	total := uint32(m.ImportedGlobals + m.DefinedGlobals)
	interrupt := total
	// global.get $interrupt; i32.load8_u offset=0; drop — a load at the
	// address the global holds: 0 (harmless) until the host stores
	// InterruptAddress, which lies past any memory, so the load traps.
	// No block is added: validation and every label depth are unchanged.
	check := append([]byte{0x23}, appendU32(nil, interrupt)...)
	check = append(check, 0x2d, 0x00, 0x00, 0x1a)
	out := []byte("\x00asm\x01\x00\x00\x00")
	globals := append(append([]uint32(nil), m.MutableGlobals...), interrupt)
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
		b := appendU32(nil, n+1)
		b = append(b, rest...)
		b = append(b, 0x7f, 0x01, 0x41, 0x00, 0x0b) // i32, mutable, i32.const 0 end
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
		b = appendName(b, InterruptExport)
		b = append(b, 3)
		b = appendU32(b, interrupt)
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
			if body, err = m.instrumentCode(sec.body, total, check); err == nil {
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
func (m *Module) instrumentCode(b []byte, globals uint32, check []byte) ([]byte, error) {
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
		for br.i < len(br.b) {
			start := br.i
			op, _ := br.byte()
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
