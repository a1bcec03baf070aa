package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// publicPackages are the module's packages a program outside it may
// import (docs/ARCHITECTURE.md, "Packages"), subtrees included.
var publicPackages = []string{"host", "registry", "sidecar", "broker", "web", "mcpserver", "mcpauth"}

// TestNoExportedVars: no public package declares an exported package
// variable (wazero's rule: no exported mutable state). Any package of a
// program could assign one: before the fix sidecar/grant's sentinel
// errors were variables, and `grant.ErrReplayed = nil` (or ErrExpired,
// ErrOpMismatch, ErrArgsMismatch) made ReplayCache.Record, CheckTime and
// CheckBinding return nil for a replayed, expired or rebound grant. A
// value that must be shared is a constant (an error is a constant of a
// string error type) or is returned by a function, as a copy.
func TestNoExportedVars(t *testing.T) {
	for _, root := range publicPackages {
		skip := func(dir string) bool { return dir == "testdata" || dir == "internal" || strings.HasPrefix(dir, ".") }
		eachSource(t, filepath.Join("../../..", root), skip, func(rel string, f *ast.File) {
			for _, decl := range f.Decls {
				g, ok := decl.(*ast.GenDecl)
				if !ok || g.Tok != token.VAR {
					continue
				}
				for _, spec := range g.Specs {
					for _, name := range spec.(*ast.ValueSpec).Names {
						if name.IsExported() {
							t.Errorf("%s: exported variable %s in package %s (make it a constant, or unexported behind a function returning a copy)", rel, name.Name, f.Name.Name)
						}
					}
				}
			}
		})
	}
}

// eachSource parses every non-test .go file under root, except in the
// directories skip names (root itself is never skipped), and calls fn
// with its path relative to the module root, in slashes.
func eachSource(t *testing.T, root string, skip func(dir string) bool, fn func(rel string, f *ast.File)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skip(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../../..", path)
		fn(filepath.ToSlash(rel), f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
