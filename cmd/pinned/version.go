package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/elevenmessenger/pinned/guest"
	"github.com/elevenmessenger/pinned/registry"
)

const versionUsage = `Usage: pinned version

Prints the build, the embedded registry digest and the guest module digest.

Exit status: 0 success, 2 bad usage.
`

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if code, ok := parseFlags(fs, versionUsage, args, stdout, stderr); !ok {
		return code
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
