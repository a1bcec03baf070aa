// Package wasmtest writes WebAssembly binaries (core spec 2.0, section 5)
// by hand for tests: hostile modules need instructions and sections the Go
// compiler never emits (a start section, funcref globals, padded LEB128,
// ...). It is a test helper: only _test.go files import it, and it imports
// nothing of the project's.
package wasmtest

// Value types (core spec 5.3.1).
const (
	I32 = 0x7f
	I64 = 0x7e
)

// Module is a module written in section order: types, imports, functions,
// tables, memory, globals, exports, start, elements, code, data.
type Module struct {
	Types   [][2][]byte // params, results (valtype bytes)
	Imports []Import    // function imports
	Funcs   []Func      // defined functions
	MemMin  uint32      // pages
	MemMax  int64       // pages; -1: none
	Globals [][]byte    // full global entries (valtype, mut, init expr incl. end)
	Exports []Export
	Start   int64    // function index; -1: none
	Elems   [][]byte // raw element segments
	Tables  [][]byte // raw table types
	Data    [][]byte // raw data segments
}

// Import is a function import of type index Type.
type Import struct {
	Mod, Name string
	Type      uint32
}

// Func is a defined function of type index Type.
type Func struct {
	Type   uint32
	Locals []byte // raw locals vector (count-prefixed), nil = none
	Code   []byte // instructions, without the final end
}

// Export exports index Idx of kind Kind (0 func, 1 table, 2 memory, 3 global).
type Export struct {
	Name string
	Kind byte
	Idx  uint32
}

// ULEB is v in unsigned LEB128, shortest form.
func ULEB(v uint64) []byte {
	var b []byte
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

// SLEB is v in signed LEB128, shortest form.
func SLEB(v int64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// Name is s as a wasm name (length-prefixed bytes).
func Name(s string) []byte { return append(ULEB(uint64(len(s))), s...) }

// Section is a section: id, the body's length, the body.
func Section(id byte, body []byte) []byte {
	return append(append([]byte{id}, ULEB(uint64(len(body)))...), body...)
}

// Vec is a vector: the count of items, then the items.
func Vec(items ...[]byte) []byte {
	b := ULEB(uint64(len(items)))
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

// Body is a code-section entry without locals: its size, an empty locals
// vector and code as given (which must end with 0x0b itself).
func Body(code ...byte) []byte {
	b := append([]byte{0x00}, code...)
	return append(ULEB(uint64(len(b))), b...)
}

// Data is an active data segment of memory 0 at offset off.
func Data(off int32, b []byte) []byte {
	d := []byte{0x00, 0x41}
	d = append(d, SLEB(int64(off))...)
	d = append(d, 0x0b)
	d = append(d, ULEB(uint64(len(b)))...)
	return append(d, b...)
}

// Bytes is the module's binary.
func (m *Module) Bytes() []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	var items [][]byte
	for _, t := range m.Types {
		b := []byte{0x60}
		b = append(b, ULEB(uint64(len(t[0])))...)
		b = append(b, t[0]...)
		b = append(b, ULEB(uint64(len(t[1])))...)
		b = append(b, t[1]...)
		items = append(items, b)
	}
	out = append(out, Section(1, Vec(items...))...)
	items = nil
	for _, im := range m.Imports {
		b := append(Name(im.Mod), Name(im.Name)...)
		b = append(b, 0)
		b = append(b, ULEB(uint64(im.Type))...)
		items = append(items, b)
	}
	out = append(out, Section(2, Vec(items...))...)
	items = nil
	for _, f := range m.Funcs {
		items = append(items, ULEB(uint64(f.Type)))
	}
	out = append(out, Section(3, Vec(items...))...)
	if len(m.Tables) > 0 {
		out = append(out, Section(4, Vec(m.Tables...))...)
	}
	mem := []byte{0}
	if m.MemMax >= 0 {
		mem[0] = 1
	}
	mem = append(mem, ULEB(uint64(m.MemMin))...)
	if m.MemMax >= 0 {
		mem = append(mem, ULEB(uint64(m.MemMax))...)
	}
	out = append(out, Section(5, Vec(mem))...)
	if len(m.Globals) > 0 {
		out = append(out, Section(6, Vec(m.Globals...))...)
	}
	items = nil
	for _, e := range m.Exports {
		b := append(Name(e.Name), e.Kind)
		b = append(b, ULEB(uint64(e.Idx))...)
		items = append(items, b)
	}
	out = append(out, Section(7, Vec(items...))...)
	if m.Start >= 0 {
		out = append(out, Section(8, ULEB(uint64(m.Start)))...)
	}
	if len(m.Elems) > 0 {
		out = append(out, Section(9, Vec(m.Elems...))...)
	}
	items = nil
	for _, f := range m.Funcs {
		body := f.Locals
		if body == nil {
			body = []byte{0}
		}
		body = append(append(append([]byte(nil), body...), f.Code...), 0x0b)
		items = append(items, append(ULEB(uint64(len(body))), body...))
	}
	out = append(out, Section(10, Vec(items...))...)
	if len(m.Data) > 0 {
		out = append(out, Section(11, Vec(m.Data...))...)
	}
	return out
}
