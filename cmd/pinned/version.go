package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/elevenmessenger/pinned/guest"
	"github.com/elevenmessenger/pinned/registry"
)

func runVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "Usage: pinned version\n\nPrints the build, the embedded registry digest and the guest module digest.")
		if args[0] == "-h" || args[0] == "--help" {
			return 0
		}
		return 2
	}
	v := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	sum := sha256.Sum256(guest.Wasm())
	fmt.Fprintf(stdout, "pinned %s (%s)\nregistry %s (%d services)\nguest    sha256:%s\n",
		v, runtime.Version(), registry.Default().Digest(), len(registry.Default().Services()), hex.EncodeToString(sum[:]))
	return 0
}
