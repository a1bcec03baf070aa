// Package wasmbuild rebuilds the project's committed WebAssembly modules
// from source, exactly as the Makefile does, so tests can prove the
// committed bytes are not stale.
package wasmbuild

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Flags are the reproducible build flags of the Makefile's WASMFLAGS.
var Flags = []string{"-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid=", "-buildmode=c-shared"}

// Build compiles the package at pkg (a path relative to the module root)
// with GOOS=wasip1 GOARCH=wasm and returns the module's bytes.
func Build(moduleRoot, pkg string) ([]byte, error) {
	out := filepath.Join(os.TempDir(), fmt.Sprintf("pinned-wasmbuild-%d.wasm", os.Getpid()))
	defer os.Remove(out)
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
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
