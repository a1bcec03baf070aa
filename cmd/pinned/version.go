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
	"github.com/elevenmessenger/pinned/registry/snapshot"
)

const versionUsage = `Usage: pinned version [--json]

Prints the build, the embedded registry digest and the guest module digest.

The version is, in order: the one stamped at build time (make build sets
-ldflags "-X main.version=$(git describe --tags --always --dirty)"), the
module version of a "go install ...@v1.2.3" build, or the VCS revision
Go records in the binary ("devel+3f2a9c1e0b4d", "+dirty" for uncommitted
changes); "devel" when none is known.

--json prints {"version", "go", "revision", "revision_time", "modified",
"registry": {"digest", "services", "snapshot": {"version", "digest",
"key_id"}}, "guest": "sha256:…"}. The registry digest is the digest of the
signed snapshot embedded with the manifests (registry/snapshot.json); a
snapshot that does not verify or differs from the manifests shows as
"error" (a build whose tests pass never has one).

Exit status: 0 success, 2 bad usage.

Flags:
`

// version is stamped by the linker: -ldflags "-X main.version=v1.2.3".
var version = ""

// buildInfo is what the binary knows about its build.
type buildInfo struct {
	Version      string `json:"version"`
	Go           string `json:"go"`
	Revision     string `json:"revision,omitempty"`
	RevisionTime string `json:"revision_time,omitempty"`
	Modified     bool   `json:"modified,omitempty"`
	Registry     struct {
		Digest   string `json:"digest"`
		Services int    `json:"services"`
		// Snapshot is the embedded signed snapshot (registry/snapshot.json):
		// its version and signing key, or Error when it does not verify or
		// is not the embedded manifests.
		Snapshot struct {
			Version uint64 `json:"version,omitempty"`
			Digest  string `json:"digest,omitempty"`
			KeyID   string `json:"key_id,omitempty"`
			Error   string `json:"error,omitempty"`
		} `json:"snapshot"`
	} `json:"registry"`
	Guest string `json:"guest"`
}

// binaryVersion is the version readBuildInfo reports, without the
// registry and guest digests.
func binaryVersion() string {
	b := buildInfo{Version: version}
	readVCS(&b)
	return b.Version
}

// readVCS fills b's version (when not stamped) and revision from the
// build information Go records in the binary.
func readVCS(b *buildInfo) {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.time":
				b.RevisionTime = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
	}
	if b.Version == "" {
		b.Version = "devel"
		if b.Revision != "" {
			b.Version += "+" + b.Revision[:min(12, len(b.Revision))]
			if b.Modified {
				b.Version += "+dirty"
			}
		}
	}
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Go: runtime.Version()}
	readVCS(&b)
	reg := registry.Default()
	b.Registry.Digest, b.Registry.Services = reg.Digest(), len(reg.IDs())
	if e, err := snapshot.LoadEmbedded(); err != nil {
		b.Registry.Snapshot.Error = err.Error()
	} else {
		b.Registry.Snapshot.Version, b.Registry.Snapshot.Digest, b.Registry.Snapshot.KeyID = e.Version, e.Digest, e.KeyID
		if err := snapshot.Check(); err != nil {
			b.Registry.Snapshot.Error = err.Error()
		}
	}
	sum := sha256.Sum256(guest.Wasm())
	b.Guest = "sha256:" + hex.EncodeToString(sum[:])
	return b
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the build information as one JSON object")
	output := fs.String("output", "text", "output `format`: text or json (--json is --output json)")
	if code, ok := parseFlags(fs, versionUsage, args, stdout, stderr); !ok {
		return code
	}
	if *output != "text" && *output != "json" {
		return flagError(stderr, "version", fmt.Sprintf("--output %q: want text or json", *output))
	}
	b := readBuildInfo()
	if *asJSON || *output == "json" {
		out, _ := marshalJSON(b)
		fmt.Fprintf(stdout, "%s\n", out)
		return 0
	}
	snap := fmt.Sprintf("snapshot version %d, signed by key %s", b.Registry.Snapshot.Version, b.Registry.Snapshot.KeyID)
	if b.Registry.Snapshot.Error != "" {
		snap = "SNAPSHOT REFUSED: " + b.Registry.Snapshot.Error
	}
	fmt.Fprintf(stdout, "pinned %s (%s)\nregistry %s (%d services; %s)\nguest    %s\n",
		b.Version, b.Go, b.Registry.Digest, b.Registry.Services, snap, b.Guest)
	return 0
}
