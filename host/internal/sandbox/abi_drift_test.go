package sandbox

import (
	"context"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/elevenmessenger/pinned/guest"
)

// documentedImports reads the "### `module.name`" headings of docs/ABI.md.
func documentedImports(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../../../docs/ABI.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile("(?m)^### `([a-z_0-9]+\\.[a-z_0-9]+)`$").FindAllStringSubmatch(string(doc), -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return out
}

// moduleImports lists what a compiled guest imports, as "module.name".
func moduleImports(t *testing.T, wasm []byte) []string {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	m, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range m.ImportedFunctions() {
		mod, name, _ := f.Import()
		out = append(out, mod+"."+name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestABIDrift keeps the three lists of the ABI equal: what docs/ABI.md
// documents, what the host registers, and what the shipped executor
// imports. Adding a host function without documenting it (or documenting
// one that does not exist) fails here.
func TestABIDrift(t *testing.T) {
	doc := documentedImports(t)
	registered := Imports()
	imported := moduleImports(t, guest.Wasm())
	if len(doc) == 0 {
		t.Fatal("no imports found in docs/ABI.md")
	}
	if !slices.Equal(doc, registered) {
		t.Errorf("docs/ABI.md and the host disagree:\n doc:  %v\n host: %v", doc, registered)
	}
	if !slices.Equal(imported, registered) {
		t.Errorf("the executor's imports and the host disagree:\n guest: %v\n host:  %v", imported, registered)
	}
}
