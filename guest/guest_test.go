package guest

import (
	"bytes"
	"crypto/sha256"
	"os"
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
