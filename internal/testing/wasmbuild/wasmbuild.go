// Package wasmbuild rebuilds the project's committed WebAssembly modules
// from source, exactly as the Makefile does, so tests can prove the
// committed bytes are not stale. It is a test helper: only _test.go files
// import it, and it imports nothing of the project's.
package wasmbuild

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// StrictEnv names the environment variable `make check` sets: with it, a
// toolchain other than the one the committed modules were built with is a
// failure; without it (plain `go test`, `make test`) the byte-for-byte
// rebuild is skipped on another toolchain, since its bytes legitimately
// differ.
const StrictEnv = "PINNED_REPRODUCIBLE"

// RequireToolchain gates a byte-for-byte rebuild test on the toolchain the
// committed modules were built with (want, e.g. "go1.26.11"). On another
// toolchain it skips with a message naming both, or fails when StrictEnv is
// "1" (`make check`, the CI contract).
func RequireToolchain(t testing.TB, want string) {
	t.Helper()
	have := runtime.Version()
	if have == want {
		return
	}
	msg := fmt.Sprintf("the committed modules were built with %s; this toolchain is %s, whose bytes differ", want, have)
	if os.Getenv(StrictEnv) == "1" {
		t.Fatalf("%s: run with that toolchain (GOTOOLCHAIN=%s make check; CI installs it, see .ci/run), or rebuild with `make guest hostile` and update guest.GoVersion", msg, want)
	}
	t.Skipf("%s: byte-for-byte rebuild skipped (`make check` runs it and fails on a mismatch)", msg)
}

// Flags are the reproducible build flags of the Makefile's WASMFLAGS.
var Flags = []string{"-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid=", "-buildmode=c-shared"}

// Build compiles the package at pkg (a path relative to the module root)
// with GOOS=wasip1 GOARCH=wasm and returns the module's bytes.
func Build(moduleRoot, pkg string) ([]byte, error) {
	out := filepath.Join(os.TempDir(), fmt.Sprintf("pinned-wasmbuild-%d.wasm", os.Getpid()))
	defer os.Remove(out)
	goBin, err := goTool()
	if err != nil {
		return nil, err
	}
	args := append([]string{"build"}, Flags...)
	args = append(args, "-o", out, "./"+pkg)
	cmd := exec.Command(goBin, args...)
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s: %v\n%s", pkg, err, stderr.String())
	}
	return os.ReadFile(out)
}

// goTool is the go command of the toolchain running the test: `go test`
// puts its own GOROOT/bin first on the PATH of the test binary (Go 1.19
// release notes), so the rebuild uses the same toolchain. runtime.GOROOT
// is deprecated: it reports the root at build time.
func goTool() (string, error) {
	p, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go command is not on PATH: %w", err)
	}
	return p, nil
}
