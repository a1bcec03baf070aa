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
		err := filepath.WalkDir(filepath.Join("../../..", root), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if n := d.Name(); n == "testdata" || n == "internal" || strings.HasPrefix(n, ".") {
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
			for _, decl := range f.Decls {
				g, ok := decl.(*ast.GenDecl)
				if !ok || g.Tok != token.VAR {
					continue
				}
				for _, spec := range g.Specs {
					for _, name := range spec.(*ast.ValueSpec).Names {
						if name.IsExported() {
							rel, _ := filepath.Rel("../../..", path)
							t.Errorf("%s: exported variable %s in package %s (make it a constant, or unexported behind a function returning a copy)", rel, name.Name, f.Name.Name)
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
