package main

import (
	"strings"
	"testing"
)

func TestGoPackage(t *testing.T) {
	for _, tc := range []struct{ name, sym, want string }{
		{"runtime", "runtime.mallocgc", "runtime"},
		{"method", "runtime.__mheap_.sysAlloc", "runtime"},
		{"nested std package", "regexp_syntax.__parser_.push", "regexp/syntax"},
		{"module path", "github.com_elevenmessenger_pinned_internal_jsonv.Parse", "github.com/elevenmessenger/pinned/internal/jsonv"},
		{"underscore after the dot is not a host", "runtime.args_sizes_get", "runtime"},
		{"generic shape", "slices.siftDownOrdered_go.shape.int32_", "slices"},
		{"generated", "type_.eq.runtime.mcache", "(generated)"},
		{"unnamed", "", "(unnamed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := goPackage(tc.sym); got != tc.want {
				t.Fatalf("goPackage(%q) = %q, want %q", tc.sym, got, tc.want)
			}
		})
	}
}

// wasmVec is a LEB128 length followed by b.
func wasmVec(b ...byte) []byte {
	var out []byte
	n := len(b)
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n != 0 {
			out = append(out, c|0x80)
			continue
		}
		return append(append(out, c), b...)
	}
}

func wasmName(s string) []byte { return wasmVec([]byte(s)...) }

// TestMeasureGuest: on a module of one imported function and two bodies
// (3 and 5 bytes) named in its name section, the code goes to the
// bodies' packages, past the import in the index space, and every byte
// of the module to a section.
func TestMeasureGuest(t *testing.T) {
	imports := append(append([]byte{1}, append(wasmName("wasi_snapshot_preview1"), wasmName("sched_yield")...)...), 0, 0)
	code := append([]byte{2}, append(wasmVec(0, 0x0b, 0x0b), wasmVec(0, 0x01, 0x01, 0x01, 0x0b)...)...)
	names := []byte{2}
	names = append(append(names, 1), wasmName("regexp_syntax.parse")...)
	names = append(append(names, 2), wasmName("github.com_x_y.F")...)
	custom := append(wasmName("name"), append([]byte{1}, wasmVec(names...)...)...)
	mod := []byte("\x00asm\x01\x00\x00\x00")
	mod = append(append(mod, 2), wasmVec(imports...)...)
	mod = append(append(mod, 10), wasmVec(code...)...)
	mod = append(append(mod, 0), wasmVec(custom...)...)

	g, err := measureGuest(mod)
	if err != nil {
		t.Fatal(err)
	}
	if g.Code["regexp/syntax"] != 3 || g.Code["github.com/x/y"] != 5 || len(g.Code) != 2 {
		t.Fatalf("code by package %v, want regexp/syntax 3 and github.com/x/y 5", g.Code)
	}
	sum := 8
	for _, n := range g.Sections {
		sum += n
	}
	if sum != len(mod) || g.Sections["code"] != 2+len(code) || g.Sections["custom name"] != 2+len(custom) {
		t.Fatalf("sections %v over %d bytes, want all %d", g.Sections, sum, len(mod))
	}
	if md := g.markdown(1); !strings.Contains(md, "| github.com/x/y | 1 | 5 | 62.5% |") || !strings.Contains(md, "| 1 other packages | 1 | 3 | 37.5% |") {
		t.Fatalf("tables:\n%s", md)
	}

	for _, tc := range []struct {
		name string
		mod  []byte
		want string
	}{
		{"no names", mod[:len(mod)-2-len(custom)], "no function names"},
		{"cut", mod[:len(mod)-3], "truncated"},
		{"not wasm", []byte("\x7fELF...."), "not a WebAssembly module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := measureGuest(tc.mod); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
