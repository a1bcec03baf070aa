package layering

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// surfacePackages are the public packages the surface rules must at
// least hold (docs/ARCHITECTURE.md, "Packages"); the test checks every
// importable package of the module, which must include them.
var surfacePackages = []string{"host", "host/api", "registry", "secret", "sidecar", "sidecar/api", "sidecar/grant", "broker", "web", "mcpserver", "mcpauth"}

// surfaceAllowed are the violations the public surface still has, each
// with why. An entry that no longer occurs fails the test, so the list
// only shrinks.
var surfaceAllowed = map[string]string{
	"mcpserver.Config.Store: names internal type github.com/elevenmessenger/pinned/internal/connstore.Store": "a person's sealed connection store; only cmd/pinned builds an MCP server, and a public contract for it is not written yet",
	// The executor is compiled into the guest: its reject is argrules' so
	// the module carries one copy of the rules, and owning the type would
	// rebuild executor.wasm.
	"executor.Reject: an alias of github.com/elevenmessenger/pinned/internal/argrules.Reject; define the type here and let the internal package use it": "the guest's",
	"executor.Render: names internal type github.com/elevenmessenger/pinned/internal/argrules.Reject":                                                   "the guest's",
	"executor.Renderer.Render: names internal type github.com/elevenmessenger/pinned/internal/argrules.Reject":                                          "the guest's",
	"executor.Validate: names internal type github.com/elevenmessenger/pinned/internal/argrules.Reject":                                                 "the guest's",
}

// TestPublicSurfaceOwnsItsTypes: the go doc of every public package
// names no type of an internal package (no alias of one, no field,
// parameter or result of one, no re-exported internal value), and has no
// exported function or method returning a concrete *Error (a typed nil in
// an error is not nil: the Go FAQ's trap). Callers get error and use
// errors.As; a Config takes interfaces a caller outside the module can
// implement.
func TestPublicSurfaceOwnsItsTypes(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range loadSurface(t) {
		bad := surfaceViolations(p)
		rel, _ := strings.CutPrefix(p.Path(), module+"/")
		re, err := reexports("../../../"+rel, p.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range append(bad, re...) {
			if _, ok := surfaceAllowed[b]; ok {
				seen[b] = true
				continue
			}
			t.Error(b)
		}
	}
	for b := range surfaceAllowed {
		if !seen[b] {
			t.Errorf("allowed violation no longer occurs; remove it from surfaceAllowed: %s", b)
		}
	}
}

// TestSurfaceViolationsCatches proves the check sees each kind of
// violation in a package written to break every rule.
func TestSurfaceViolationsCatches(t *testing.T) {
	const src = `package bad

import "example.com/m/internal/in"

type Error struct{}

func (*Error) Error() string { return "" }

type Alias = in.T

const Reexported = in.C

var Value = in.V

type Config struct {
	Store in.Store
	ok    in.Store
}

type S struct{}

func Do() *Error                  { return nil }
func (S) Do() (int, *Error)       { return 0, nil }
func Take(in.T)                   {}
func Fine() error                 { return nil }
func (s S) internal() *Error      { return nil }
type hidden struct{}
func (hidden) Do() *Error         { return nil }
`
	const in = `package in

type T int
type Store interface{ Get() }

const C T = 1

var V = 2
`
	inPkg := typecheck(t, "example.com/m/internal/in", in, nil)
	p := typecheck(t, "example.com/m/bad", src, map[string]*types.Package{"example.com/m/internal/in": inPkg})
	got := strings.Join(surfaceViolations(p), "\n")
	for _, want := range []string{
		"bad.Alias: an alias of example.com/m/internal/in.T",
		"bad.Reexported: of internal type example.com/m/internal/in.T",
		"bad.Config.Store: names internal type example.com/m/internal/in.Store",
		"bad.Do: returns the concrete *example.com/m/bad.Error",
		"bad.S.Do: returns the concrete *example.com/m/bad.Error",
		"bad.Take: names internal type example.com/m/internal/in.T",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	for _, never := range []string{"Fine", "internal()", "hidden", "Config.ok", "bad.Value"} {
		if strings.Contains(got, never) {
			t.Errorf("flagged %s:\n%s", never, got)
		}
	}
}

// TestReexportsCatches proves the re-export check sees an exported
// constant or variable set from an internal package's value.
func TestReexportsCatches(t *testing.T) {
	dir := t.TempDir()
	src := `package bad

import (
	"example.com/m/internal/in"
	pub "example.com/m/pub"
)

const Redacted = in.Redacted

const (
	Fine  = pub.Value
	local = in.Value
	Own   = "own"
)

var Max = in.Max + 1
`
	if err := os.WriteFile(dir+"/bad.go", []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := reexports(dir, "bad")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"bad.Max: re-exports example.com/m/internal/in.Max; define the value here and let the internal package use it",
		"bad.Redacted: re-exports example.com/m/internal/in.Redacted; define the value here and let the internal package use it",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// reexports lists the exported constants and variables of the package in
// dir (its non-test files) whose value names a value of an internal
// package: a re-export, which go/types cannot see in an untyped constant.
func reexports(dir, name string) ([]string, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, dir+"/"+e.Name(), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if f.Name.Name != name {
			continue
		}
		imports := map[string]string{}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			local := path[strings.LastIndex(path, "/")+1:]
			if im.Name != nil {
				local = im.Name.Name
			}
			imports[local] = path
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || (g.Tok != token.CONST && g.Tok != token.VAR) {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !n.IsExported() || i >= len(vs.Values) {
						continue
					}
					ast.Inspect(vs.Values[i], func(x ast.Node) bool {
						sel, ok := x.(*ast.SelectorExpr)
						if !ok {
							return true
						}
						if id, ok := sel.X.(*ast.Ident); ok && isInternal(imports[id.Name]) {
							out = append(out, fmt.Sprintf("%s.%s: re-exports %s.%s; define the value here and let the internal package use it", name, n.Name, imports[id.Name], sel.Sel.Name))
						}
						return true
					})
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

func typecheck(t *testing.T, path, src string, deps map[string]*types.Package) *types.Package {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parseSrc(fset, src)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: importerFunc(func(p string) (*types.Package, error) {
		if d, ok := deps[p]; ok {
			return d, nil
		}
		return nil, fmt.Errorf("no package %s", p)
	})}
	p, err := conf.Check(path, fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func parseSrc(fset *token.FileSet, src string) (*ast.File, error) {
	return parser.ParseFile(fset, "bad.go", src, 0)
}

type importerFunc func(string) (*types.Package, error)

func (f importerFunc) Import(p string) (*types.Package, error) { return f(p) }

// loadSurface reads the public packages' export data, as the compiler
// wrote it (go list -export), so the check sees exactly the API go doc
// shows.
func loadSurface(t *testing.T) []*types.Package {
	t.Helper()
	var public []string
	for _, p := range list(t) {
		rel, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if ok && !isInternal(p.ImportPath) && !strings.HasPrefix(rel, "cmd/") {
			public = append(public, rel)
		}
	}
	for _, want := range surfacePackages {
		if !slices.Contains(public, want) {
			t.Fatalf("public package %s is missing from go list", want)
		}
	}
	var args []string
	for _, p := range public {
		args = append(args, "./"+p)
	}
	cmd := exec.Command("go", append([]string{"list", "-export", "-deps", "-json=ImportPath,Export"}, args...)...)
	cmd.Dir = "../../.."
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	var pkgs []*types.Package
	for _, p := range public {
		pkg, err := imp.Import(module + "/" + p)
		if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, pkg)
	}
	return pkgs
}

// surfaceViolations lists what p's exported API breaks: an alias of a
// type of an internal package, an exported constant or field, or a
// parameter or result, of such a type, and an exported function or
// method returning a pointer to an error type.
func surfaceViolations(p *types.Package) []string {
	var out []string
	name := func(s string) string { return p.Name() + "." + s }
	checkSig := func(where string, sig *types.Signature) {
		for i := range sig.Params().Len() {
			if in := internalIn(sig.Params().At(i).Type(), p); in != "" {
				out = append(out, fmt.Sprintf("%s: names internal type %s", where, in))
			}
		}
		for i := range sig.Results().Len() {
			r := sig.Results().At(i).Type()
			if ptr, ok := r.(*types.Pointer); ok && types.Implements(ptr, errorType) {
				if n, ok := ptr.Elem().(*types.Named); ok {
					out = append(out, fmt.Sprintf("%s: returns the concrete *%s.%s; return error (callers use errors.As)", where, n.Obj().Pkg().Path(), n.Obj().Name()))
					continue
				}
			}
			if in := internalIn(r, p); in != "" {
				out = append(out, fmt.Sprintf("%s: names internal type %s", where, in))
			}
		}
	}
	scope := p.Scope()
	for _, n := range scope.Names() {
		obj := scope.Lookup(n)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.TypeName:
			if o.IsAlias() {
				if in := internalIn(o.Type(), p); in != "" {
					out = append(out, fmt.Sprintf("%s: an alias of %s; define the type here and let the internal package use it", name(n), in))
				}
				continue
			}
			named, ok := o.Type().(*types.Named)
			if !ok {
				continue
			}
			if st, ok := named.Underlying().(*types.Struct); ok {
				for i := range st.NumFields() {
					f := st.Field(i)
					if !f.Exported() {
						continue
					}
					if in := internalIn(f.Type(), p); in != "" {
						out = append(out, fmt.Sprintf("%s.%s: names internal type %s", name(n), f.Name(), in))
					}
				}
			}
			if it, ok := named.Underlying().(*types.Interface); ok {
				for i := range it.NumExplicitMethods() {
					if m := it.ExplicitMethod(i); m.Exported() {
						checkSig(name(n)+"."+m.Name(), m.Type().(*types.Signature))
					}
				}
			}
			ms := types.NewMethodSet(types.NewPointer(named))
			for i := range ms.Len() {
				m := ms.At(i).Obj()
				if !m.Exported() || m.Pkg() != p {
					continue
				}
				checkSig(name(n)+"."+m.Name(), m.Type().(*types.Signature))
			}
		case *types.Func:
			checkSig(name(n), o.Type().(*types.Signature))
		case *types.Const, *types.Var:
			if in := internalIn(o.Type(), p); in != "" {
				out = append(out, fmt.Sprintf("%s: of internal type %s", name(n), in))
			}
		}
	}
	sort.Strings(out)
	return out
}

var errorType = types.Universe.Lookup("error").Type().Underlying().(*types.Interface)

// internalIn returns the first type of an internal package (one whose
// path has an "internal" element) that t names, through pointers, slices,
// maps, channels, signatures and aliases; "" when none.
func internalIn(t types.Type, from *types.Package) string {
	seen := map[types.Type]bool{}
	var walk func(types.Type) string
	walk = func(t types.Type) string {
		if seen[t] {
			return ""
		}
		seen[t] = true
		switch t := t.(type) {
		case *types.Alias:
			if o := t.Obj(); o.Pkg() != nil && isInternal(o.Pkg().Path()) {
				return o.Pkg().Path() + "." + o.Name()
			}
			return walk(types.Unalias(t))
		case *types.Named:
			if o := t.Obj(); o.Pkg() != nil && isInternal(o.Pkg().Path()) {
				return o.Pkg().Path() + "." + o.Name()
			}
			if args := t.TypeArgs(); args != nil {
				for i := range args.Len() {
					if s := walk(args.At(i)); s != "" {
						return s
					}
				}
			}
			return ""
		case *types.Pointer:
			return walk(t.Elem())
		case *types.Slice:
			return walk(t.Elem())
		case *types.Array:
			return walk(t.Elem())
		case *types.Map:
			if s := walk(t.Key()); s != "" {
				return s
			}
			return walk(t.Elem())
		case *types.Chan:
			return walk(t.Elem())
		case *types.Signature:
			for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
				for i := range tup.Len() {
					if s := walk(tup.At(i).Type()); s != "" {
						return s
					}
				}
			}
		}
		return ""
	}
	return walk(t)
}

func isInternal(path string) bool {
	for _, e := range strings.Split(path, "/") {
		if e == "internal" {
			return true
		}
	}
	return false
}

// TestBinaryLinksNoTesting: the shipped binary links no testing package,
// neither the standard library's (testing, testing/fstest, ...) nor the
// module's test helpers (internal/testing/...).
func TestBinaryLinksNoTesting(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./cmd/pinned")
	cmd.Dir = "../../.."
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	n := 0
	for _, p := range strings.Fields(string(out)) {
		n++
		if p == "testing" || strings.HasPrefix(p, "testing/") || strings.HasPrefix(p, module+"/internal/testing/") {
			t.Errorf("cmd/pinned links %s", p)
		}
	}
	if n < 50 {
		t.Fatalf("go list -deps listed %d packages: not the binary's graph", n)
	}
}
