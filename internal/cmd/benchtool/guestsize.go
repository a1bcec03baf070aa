package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// guestSize is what `benchtool guestsize` measures in a guest module
// built with its symbol names (without -ldflags=-s): the bytes of each
// section, and the code bytes of each Go package, from the function
// names in the "name" custom section (WebAssembly core spec, appendix
// "Name Section").
type guestSize struct {
	Total    int            // the module's bytes
	Sections map[string]int // section name → bytes, with its header
	Code     map[string]int // Go package → function body bytes
	Funcs    map[string]int // Go package → functions
}

// wasmSectionNames are the standard sections by id.
var wasmSectionNames = map[byte]string{
	0: "custom", 1: "type", 2: "import", 3: "function", 4: "table", 5: "memory",
	6: "global", 7: "export", 8: "start", 9: "element", 10: "code", 11: "data", 12: "data count",
}

// wasmReader reads the LEB128 and vectors of the binary format.
type wasmReader struct {
	b   []byte
	off int
}

func (r *wasmReader) u32() (uint32, error) {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		if r.off >= len(r.b) {
			return 0, errors.New("truncated LEB128")
		}
		c := r.b[r.off]
		r.off++
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
	}
	return 0, errors.New("LEB128 too long")
}

func (r *wasmReader) bytes(n uint32) ([]byte, error) {
	if uint64(r.off)+uint64(n) > uint64(len(r.b)) {
		return nil, errors.New("truncated")
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}

// measureGuest reads a module's sections, its function names and its
// code bodies. A module without names is an error: build it without -s.
func measureGuest(b []byte) (*guestSize, error) {
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		return nil, errors.New("not a WebAssembly module")
	}
	g := &guestSize{Total: len(b), Sections: map[string]int{}, Code: map[string]int{}, Funcs: map[string]int{}}
	r := &wasmReader{b: b, off: 8}
	var imported uint32
	var bodies []int
	names := map[uint32]string{}
	for r.off < len(b) {
		start := r.off
		id := b[r.off]
		r.off++
		n, err := r.u32()
		if err != nil {
			return nil, err
		}
		body, err := r.bytes(n)
		if err != nil {
			return nil, fmt.Errorf("section %d: %w", id, err)
		}
		name := wasmSectionNames[id]
		s := &wasmReader{b: body}
		switch id {
		case 0:
			nl, err := s.u32()
			if err != nil {
				return nil, err
			}
			cn, err := s.bytes(nl)
			if err != nil {
				return nil, err
			}
			name = "custom " + string(cn)
			if string(cn) == "name" {
				if err := readFuncNames(s, names); err != nil {
					return nil, fmt.Errorf("name section: %w", err)
				}
			}
		case 2:
			if imported, err = countFuncImports(s); err != nil {
				return nil, fmt.Errorf("import section: %w", err)
			}
		case 10:
			count, err := s.u32()
			if err != nil {
				return nil, err
			}
			for range count {
				size, err := s.u32()
				if err != nil {
					return nil, err
				}
				if _, err := s.bytes(size); err != nil {
					return nil, err
				}
				bodies = append(bodies, int(size))
			}
		}
		if name == "" {
			name = fmt.Sprintf("section %d", id)
		}
		g.Sections[name] += r.off - start
	}
	if len(names) == 0 {
		return nil, errors.New("the module has no function names: build it without -ldflags=-s")
	}
	for i, size := range bodies {
		pkg := goPackage(names[imported+uint32(i)])
		g.Code[pkg] += size
		g.Funcs[pkg]++
	}
	return g, nil
}

// readFuncNames reads the function names subsection (id 1) of a name
// section into names.
func readFuncNames(s *wasmReader, names map[uint32]string) error {
	for s.off < len(s.b) {
		id := s.b[s.off]
		s.off++
		n, err := s.u32()
		if err != nil {
			return err
		}
		sub, err := s.bytes(n)
		if err != nil {
			return err
		}
		if id != 1 {
			continue
		}
		f := &wasmReader{b: sub}
		count, err := f.u32()
		if err != nil {
			return err
		}
		for range count {
			idx, err := f.u32()
			if err != nil {
				return err
			}
			nl, err := f.u32()
			if err != nil {
				return err
			}
			nb, err := f.bytes(nl)
			if err != nil {
				return err
			}
			names[idx] = string(nb)
		}
	}
	return nil
}

// countFuncImports counts the imported functions: they come first in the
// function index space.
func countFuncImports(s *wasmReader) (uint32, error) {
	count, err := s.u32()
	if err != nil {
		return 0, err
	}
	var funcs uint32
	for range count {
		for range 2 { // module, name
			n, err := s.u32()
			if err != nil {
				return 0, err
			}
			if _, err := s.bytes(n); err != nil {
				return 0, err
			}
		}
		if s.off >= len(s.b) {
			return 0, errors.New("truncated import")
		}
		kind := s.b[s.off]
		s.off++
		switch kind {
		case 0: // func: a type index
			funcs++
			if _, err := s.u32(); err != nil {
				return 0, err
			}
		default:
			return 0, fmt.Errorf("import of kind %d (the guest imports functions only)", kind)
		}
	}
	return funcs, nil
}

// goPackage is the Go package of a function's name in the name section.
// The wasm linker writes each character outside [A-Za-z0-9_.] as '_', so
// "regexp/syntax.(*parser).push" is there "regexp_syntax.__parser_.push":
// the package is the name up to its first '.', or, after a module path's
// host ("github.com_…"), up to the next one, with '_' read back as '/' (a
// package whose path holds '_' is misnamed, which a size report bears).
// Names the compiler makes ("type:.eq.…") are "(generated)".
func goPackage(sym string) string {
	switch {
	case sym == "":
		return "(unnamed)"
	case strings.HasPrefix(sym, "type_."), strings.HasPrefix(sym, "type:."), strings.HasPrefix(sym, "go_."), strings.HasPrefix(sym, "go:"):
		return "(generated)"
	}
	host := ""
	if i := strings.IndexByte(sym, '_'); i > 0 {
		if d := strings.IndexByte(sym[:i], '.'); d > 0 && slices.Contains([]string{"com", "org", "net", "io", "in", "dev"}, sym[d+1:i]) {
			host, sym = sym[:i+1], sym[i+1:]
		}
	}
	dot := strings.IndexByte(sym, '.')
	if dot < 0 {
		return strings.ReplaceAll(host+sym, "_", "/")
	}
	return strings.ReplaceAll(host+sym[:dot], "_", "/")
}

// markdown is the measurement as two tables: each Go package's code
// (the largest first, the rest as one row), and the sections.
func (g *guestSize) markdown(top int) string {
	var b strings.Builder
	code := 0
	for _, n := range g.Code {
		code += n
	}
	pkgs := make([]string, 0, len(g.Code))
	for p := range g.Code {
		pkgs = append(pkgs, p)
	}
	slices.SortFunc(pkgs, func(a, c string) int { return g.Code[c] - g.Code[a] })
	fmt.Fprintf(&b, "The executor module built with its names (%d bytes; the committed one is built with -s, without them). Code bytes per Go package, from the name section's function names:\n\n", g.Total)
	b.WriteString("| package | functions | code bytes | share of the code |\n| --- | --- | --- | --- |\n")
	rest, restFuncs := 0, 0
	for i, p := range pkgs {
		if i < top {
			fmt.Fprintf(&b, "| %s | %d | %d | %.1f%% |\n", p, g.Funcs[p], g.Code[p], 100*float64(g.Code[p])/float64(code))
		} else {
			rest += g.Code[p]
			restFuncs += g.Funcs[p]
		}
	}
	if rest > 0 {
		fmt.Fprintf(&b, "| %d other packages | %d | %d | %.1f%% |\n", len(pkgs)-top, restFuncs, rest, 100*float64(rest)/float64(code))
	}
	b.WriteString("\n| section | bytes | share of the module |\n| --- | --- | --- |\n")
	secs := make([]string, 0, len(g.Sections))
	for s := range g.Sections {
		secs = append(secs, s)
	}
	slices.SortFunc(secs, func(a, c string) int { return g.Sections[c] - g.Sections[a] })
	for _, s := range secs {
		fmt.Fprintf(&b, "| %s | %d | %.1f%% |\n", s, g.Sections[s], 100*float64(g.Sections[s])/float64(g.Total))
	}
	return b.String()
}

// runGuestSize measures the module at path and writes the tables to out.
func runGuestSize(path, out string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	g, err := measureGuest(b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	md := g.markdown(15)
	fmt.Print(md)
	return os.WriteFile(out, []byte(md), 0o644)
}
