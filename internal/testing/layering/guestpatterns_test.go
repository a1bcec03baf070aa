package layering

import (
	"go/ast"
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
	found := 0
	skip := func(dir string) bool {
		return dir == "testdata" || dir == "node_modules" || strings.HasPrefix(dir, ".")
	}
	eachSource(t, "../../..", skip, func(rel string, f *ast.File) {
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
	})
	if found == 0 {
		t.Fatal("no file names argrules.GuestPatterns: the guest's executor should (is the walk reading the module?)")
	}
}
