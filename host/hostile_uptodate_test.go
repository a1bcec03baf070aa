package host

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/guest"
	"github.com/elevenmessenger/pinned/internal/testing/wasmbuild"
)

// TestHostileUpToDate rebuilds every hostile guest from its committed
// source and requires the committed .wasm to match byte for byte, so the
// suite never runs a module nobody can read. Fix with `make hostile`.
func TestHostileUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("rebuilds modules; skipped with -short")
	}
	wasmbuild.RequireToolchain(t, guest.GoVersion)
	mains, err := filepath.Glob("testdata/hostile/*/main.go")
	if err != nil || len(mains) == 0 {
		t.Fatalf("no hostile guests found: %v", err)
	}
	for _, m := range mains {
		dir := filepath.Dir(m)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			got, err := wasmbuild.Build("..", filepath.ToSlash(filepath.Join("host", dir)))
			if err != nil {
				t.Fatal(err)
			}
			committed, err := os.ReadFile(dir + ".wasm")
			if err != nil {
				t.Fatalf("%v (run `make hostile`)", err)
			}
			if !bytes.Equal(got, committed) {
				t.Fatalf("%s.wasm is stale against %s (run `make hostile`)", name, strings.TrimPrefix(m, "testdata/"))
			}
		})
	}
}
