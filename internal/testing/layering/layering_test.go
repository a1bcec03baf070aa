package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/elevenmessenger/pinned"

// layers lists the project's packages bottom to top (docs/ARCHITECTURE.md,
// "Layers"); a pattern ending in "/..." matches the package and its
// subtree. A package may import a package of a lower layer, or one of its
// own subtree (sidecar → sidecar/grant), never one of its own layer's
// other families (sidecar ↛ broker) nor one above.
var layers = []struct {
	name     string
	packages []string
}{
	// Foundations any layer may use: the one JSON writer of answers and
	// the one credential type.
	{"foundation", []string{"internal/jsonenc", "secret"}},
	// The bottom: each imports nothing of the project's but the foundation
	// (registry included: it is what everyone agrees on).
	{"bottom", []string{"registry/...", "internal/abi", "internal/jsonv", "internal/display", "internal/httperr", "host/api", "sidecar/api", "host/internal/sandbox/wasmbin", "internal/tracing/...",
		"internal/testing/schematest", "internal/testing/wasmbuild", "internal/testing/wasmtest", "internal/testing/redistest", "internal/demo/fakemodel", "internal/testing/layering"}},
	// sidecar/grant is the sealed-grant format (it imports only the
	// bottom), so it sits here, below the parts of the sidecar that use it.
	// internal/flow (cross-service flow control) is a contract of the
	// sessions that use it, research and MCP alike: it imports registry.
	// internal/httpserve is the services' one HTTP middleware chain, over
	// internal/httperr. internal/audit (the hash-chained audit trail)
	// implements sidecar/api's Auditor and imports nothing else of ours.
	// The provider fake serves the registry's manifests from fixtures, so
	// it imports registry too.
	{"contracts and the provider fake", []string{"internal/argrules", "internal/brokerapi", "sidecar/grant", "internal/flow", "internal/httpserve", "internal/audit", "internal/demo/fakeapi"}},
	// The helpers tests share, over the fake they start.
	{"test helpers", []string{"internal/testing/testutil"}},
	{"guest", []string{"guest/..."}},
	// The host's parts, each named for what it is; only host imports them.
	{"host core", []string{"host/internal/pick", "host/internal/egress"}},
	// The host's parts over its core, none importing another: the sandbox
	// (its pin_v1 request function runs the egress checks), the upstream
	// exchange (it sends what egress accepted and projects it) and paging
	// (it reads cursors with pick and follows pages the host runs).
	{"host parts", []string{"host/internal/sandbox", "host/internal/upstream", "host/internal/paginate"}},
	{"host", []string{"host/..."}},
	// The binary's own parts of the services, under internal/ (nothing
	// outside the module needs them): the sidecar's shared state, then
	// what runs on it or beside it.
	{"service state", []string{"internal/state"}},
	{"service parts", []string{"internal/rotate", "internal/research/..."}},
	{"services", []string{"sidecar/...", "broker/...", "web/..."}},
	// A person's own side: their sealed connections, and the MCP server
	// that serves them to their agent through the sidecar's op path.
	{"connection store", []string{"internal/connstore"}},
	// mcpauth, the OAuth 2.1 authorization server of a remote MCP server,
	// imports nothing of pinned's; only the binary puts the two together.
	{"agent front ends", []string{"mcpserver/...", "mcpauth"}},
	// The stacks: the demo's web stack, and the test environment the
	// sidecar, mcpserver and cmd/pinned tests share.
	{"stacks", []string{"internal/demo/webstack", "internal/testing/testenv"}},
	{"binaries", []string{"cmd/...", "internal/cmd/..."}},
}

// allowed are the edges the layers alone would refuse, each with why.
// None today: the host no longer imports guest/executor (the argument
// rules both run are internal/argrules).
var allowed = map[[2]string]string{}

// family is the pattern a package matches (its subtree root), and the
// layer index.
func family(pkg string) (string, int) {
	for i, l := range layers {
		for _, p := range l.packages {
			if root, ok := strings.CutSuffix(p, "/..."); ok {
				if pkg == root || strings.HasPrefix(pkg, root+"/") {
					return root, i
				}
			} else if pkg == p {
				return p, i
			}
		}
	}
	return "", -1
}

type listed struct {
	ImportPath string
	Imports    []string
}

// list runs `go list -json ./...` at the module root under env.
func list(t *testing.T, env ...string) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports", "./...")
	cmd.Dir = "../../.."
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listed
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// violations returns the edges of pkgs the layers refuse.
func violations(pkgs []listed) []string {
	var bad []string
	for _, p := range pkgs {
		from, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue
		}
		ff, fl := family(from)
		if fl < 0 {
			bad = append(bad, from+": in no layer (add it to layers in internal/testing/layering and to docs/ARCHITECTURE.md)")
			continue
		}
		for _, imp := range p.Imports {
			to, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			tf, tl := family(to)
			switch {
			case tl < 0:
				continue // reported as its own package
			case ff == tf:
				continue // its own subtree
			case tl < fl:
				continue // downward
			}
			if _, ok := allowed[[2]string{from, to}]; ok {
				continue
			}
			dir := "upward"
			if tl == fl {
				dir = "sideways"
			}
			bad = append(bad, from+" ("+layers[fl].name+") imports "+to+" ("+layers[tl].name+"): "+dir)
		}
	}
	slices.Sort(bad)
	return bad
}

// TestLayering: no package of the module imports upward or sideways, on
// the build (linux or not) and for the guest's wasip1 packages.
func TestLayering(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list; skipped with -short")
	}
	for _, env := range [][]string{nil, {"GOOS=wasip1", "GOARCH=wasm"}} {
		t.Run(strings.Join(append([]string{"default"}, env...), ","), func(t *testing.T) {
			pkgs := list(t, env...)
			for _, v := range violations(pkgs) {
				t.Error(v)
			}
		})
	}
	for edge := range allowed {
		if _, ff := family(edge[0]); ff < 0 {
			t.Errorf("allowed edge %v: %s is in no layer", edge, edge[0])
		}
	}
}

// TestViolationsCatches: the check refuses an upward, a sideways and an
// unlayered edge, and lets downward and own-subtree edges through.
func TestViolationsCatches(t *testing.T) {
	p := func(from string, imports ...string) listed {
		l := listed{ImportPath: path.Join(module, from)}
		for _, i := range imports {
			l.Imports = append(l.Imports, path.Join(module, i))
		}
		return l
	}
	tests := []struct {
		name string
		pkg  listed
		want int
	}{
		{name: "registry imports the host", pkg: p("registry", "host"), want: 1},
		{name: "registry imports an internal library", pkg: p("registry", "internal/abi"), want: 1},
		{name: "host imports the sidecar", pkg: p("host", "sidecar"), want: 1},
		{name: "sidecar imports the broker", pkg: p("sidecar", "broker"), want: 1},
		{name: "the rotation client imports the broker", pkg: p("internal/rotate", "broker"), want: 1},
		{name: "the state store imports the sidecar", pkg: p("internal/state", "sidecar"), want: 1},
		{name: "the rotation client imports the state store", pkg: p("internal/rotate", "internal/state", "sidecar/grant"), want: 0},
		{name: "the state store imports the rotation client", pkg: p("internal/state", "internal/rotate"), want: 1},
		{name: "broker imports cmd", pkg: p("broker", "cmd/pinned"), want: 1},
		{name: "a package in no layer", pkg: p("internal/newthing"), want: 1},
		{name: "downward and own subtree", pkg: p("sidecar", "host", "registry", "sidecar/grant", "internal/httperr", "fmt"), want: 0},
		{name: "the guest imports the host", pkg: p("guest/executor", "host"), want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := violations([]listed{tt.pkg}); len(got) != tt.want {
				t.Fatalf("violations = %q, want %d", got, tt.want)
			}
		})
	}
}

// TestHostPartsAreInternal: the host's enforcement code (the sandbox,
// the egress checks, the exchange that injects the credential, paging,
// the projection) sits under host/internal, so Go's own internal rule
// refuses an import of it from any package outside host/: no service can
// send through upstream or check requests beside the host's op path.
func TestHostPartsAreInternal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list; skipped with -short")
	}
	want := []string{"egress", "paginate", "pick", "sandbox", "sandbox/wasmbin", "upstream"}
	var got []string
	for _, p := range list(t) {
		if rest, ok := strings.CutPrefix(p.ImportPath, module+"/host/internal/"); ok {
			got = append(got, rest)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("host/internal holds %q, want %q", got, want)
	}
	for _, p := range list(t) {
		from, _ := strings.CutPrefix(p.ImportPath, module+"/")
		for _, name := range []string{"egress", "paginate", "pick", "sandbox", "upstream"} {
			if strings.HasSuffix(from, "/"+name) && !strings.HasPrefix(from, "host/internal/") {
				t.Errorf("%s: a host part outside host/internal, where the compiler no longer keeps it the host's", from)
			}
		}
	}
}
