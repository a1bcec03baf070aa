package guest

import (
	"bytes"
	"crypto/sha256"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/internal/testing/wasmbuild"
)

// TestWasmUpToDate rebuilds the executor from source and requires the
// committed (and embedded) module to be byte-identical: the module is
// reproducible, so any difference means it is stale. Fix with `make guest`.
func TestWasmUpToDate(t *testing.T) {
	wasmbuild.RequireToolchain(t, GoVersion)
	got, err := wasmbuild.Build("..", "guest/wasm")
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("executor.wasm")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, got) {
		t.Fatalf("guest/executor.wasm is stale against its source (%d bytes committed, %d rebuilt): run `make guest`", len(committed), len(got))
	}
	if !bytes.Equal(Wasm(), got) {
		t.Fatal("the embedded module differs from the rebuilt one")
	}

}

// TestSHA256 requires the recorded digest (the plan cache's key) to be
// the embedded module's.
func TestSHA256(t *testing.T) {
	if got, want := SHA256(), sha256.Sum256(Wasm()); got != want {
		t.Fatalf("executor.wasm.sha256 holds %x, the module's SHA-256 is %x: run `make guest`", got, want)
	}
}

// TestGuestDependencies: the packages compiled into the guest leave out
// the standard library's regular expressions, reflection and fmt. Each
// is code the host validates and compiles at every start (the module's
// size is start time: docs/BENCHMARKS.md, "What each dependency adds to
// the guest"); regexp alone was a fifth of the module until the guest
// stopped matching patterns (argrules.GuestPatterns).
func TestGuestDependencies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list; skipped with -short")
	}
	cmd := exec.Command("go", "list", "-deps", "./guest/wasm")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/elevenmessenger/pinned/internal/argrules") {
		t.Fatalf("go list -deps ./guest/wasm does not list argrules: not the guest's graph:\n%s", out)
	}
	for _, banned := range []string{"regexp", "regexp/syntax", "reflect", "fmt", "encoding/json"} {
		if slices.Contains(deps, banned) {
			t.Errorf("the guest imports %s", banned)
		}
	}
}

// TestModuleReadOnly: Module is the embedded module, and a write to it
// faults (here made a panic) instead of changing it.
func TestModuleReadOnly(t *testing.T) {
	m := Module()
	if !bytes.Equal(m, Wasm()) {
		t.Fatal("Module differs from Wasm")
	}
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("writing to Module did not fault")
			}
		}()
		m[0] ^= 0xff
	}()
	if m[0] != 0 || !bytes.Equal(m[:4], []byte("\x00asm")) {
		t.Fatalf("the module starts %q after the write", m[:4])
	}
}
