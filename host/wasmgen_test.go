package host

// A minimal WebAssembly binary writer for the red-team tests: the hostile
// modules here need instructions and sections the Go compiler never emits
// (a start section, funcref globals, ...), so they are written by hand.

type wmod struct {
	types   [][2][]byte // params, results (valtype bytes)
	imports []wimport
	funcs   []wfunc // defined functions
	memMin  uint32
	memMax  int64    // -1: none
	globals [][]byte // full global entries (valtype, mut, init expr incl. end)
	exports []wexport
	start   int64    // -1: none
	elems   [][]byte // raw element segments
	tables  [][]byte // raw table types
	data    [][]byte // raw data segments
}

type wimport struct {
	mod, name string
	typ       uint32
}

type wfunc struct {
	typ    uint32
	locals []byte // raw locals vector (count-prefixed), nil = none
	code   []byte // instructions, without the final end
}

type wexport struct {
	name string
	kind byte
	idx  uint32
}

func wleb(v uint64) []byte {
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

func wsleb(v int64) []byte {
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

func wname(s string) []byte { return append(wleb(uint64(len(s))), s...) }

func wsection(out []byte, id byte, body []byte) []byte {
	out = append(out, id)
	out = append(out, wleb(uint64(len(body)))...)
	return append(out, body...)
}

func wvec(items [][]byte) []byte {
	b := wleb(uint64(len(items)))
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

func (m *wmod) bytes() []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	var items [][]byte
	for _, t := range m.types {
		b := []byte{0x60}
		b = append(b, wleb(uint64(len(t[0])))...)
		b = append(b, t[0]...)
		b = append(b, wleb(uint64(len(t[1])))...)
		b = append(b, t[1]...)
		items = append(items, b)
	}
	out = wsection(out, 1, wvec(items))
	items = nil
	for _, im := range m.imports {
		b := append(wname(im.mod), wname(im.name)...)
		b = append(b, 0)
		b = append(b, wleb(uint64(im.typ))...)
		items = append(items, b)
	}
	out = wsection(out, 2, wvec(items))
	items = nil
	for _, f := range m.funcs {
		items = append(items, wleb(uint64(f.typ)))
	}
	out = wsection(out, 3, wvec(items))
	if len(m.tables) > 0 {
		out = wsection(out, 4, wvec(m.tables))
	}
	mem := []byte{0}
	if m.memMax >= 0 {
		mem[0] = 1
	}
	mem = append(mem, wleb(uint64(m.memMin))...)
	if m.memMax >= 0 {
		mem = append(mem, wleb(uint64(m.memMax))...)
	}
	out = wsection(out, 5, wvec([][]byte{mem}))
	if len(m.globals) > 0 {
		out = wsection(out, 6, wvec(m.globals))
	}
	items = nil
	for _, e := range m.exports {
		b := append(wname(e.name), e.kind)
		b = append(b, wleb(uint64(e.idx))...)
		items = append(items, b)
	}
	out = wsection(out, 7, wvec(items))
	if m.start >= 0 {
		out = wsection(out, 8, wleb(uint64(m.start)))
	}
	if len(m.elems) > 0 {
		out = wsection(out, 9, wvec(m.elems))
	}
	items = nil
	for _, f := range m.funcs {
		body := f.locals
		if body == nil {
			body = []byte{0}
		}
		body = append(append(append([]byte(nil), body...), f.code...), 0x0b)
		items = append(items, append(wleb(uint64(len(body))), body...))
	}
	out = wsection(out, 10, wvec(items))
	if len(m.data) > 0 {
		out = wsection(out, 11, wvec(m.data))
	}
	return out
}

// Value types and a few opcodes.
const (
	wI32 = 0x7f
	wI64 = 0x7e
)

// wdata is an active data segment of memory 0 at offset off.
func wdata(off int32, b []byte) []byte {
	d := []byte{0x00, 0x41}
	d = append(d, wsleb(int64(off))...)
	d = append(d, 0x0b)
	d = append(d, wleb(uint64(len(b)))...)
	return append(d, b...)
}
