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

// TestGuestPatternsOnlyInTheGuest: argrules.GuestPatterns, the Compiler
// whose matchers accept every string, is named by the guest's code only
// (guest/...). Any other package decoding declarations with it would
// check no pattern; the host's binding uses its own RE2 compiler
// (host/internal/egress/pattern.go; docs/RATIONALE.md, "Why does the
// guest not match patterns?"). Tests may name it.
func TestGuestPatternsOnlyInTheGuest(t *testing.T) {
	root := "../../.."
	found := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "node_modules" || (strings.HasPrefix(n, ".") && path != root) {
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
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "GuestPatterns" {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "argrules" {
				found++
				if !strings.HasPrefix(rel, "guest/") {
					t.Errorf("%s names argrules.GuestPatterns: only the guest may (its args were validated by the host)", rel)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no file names argrules.GuestPatterns: the guest's executor should (is the walk reading the module?)")
	}
}
