package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/registry"
)

func TestRunVersion(t *testing.T) {
	t.Run("stamped", func(t *testing.T) {
		old := version
		version = "v1.2.3"
		defer func() { version = old }()
		var out, errb bytes.Buffer
		if code := runVersion(nil, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "pinned v1.2.3 (go") {
			t.Fatalf("exit %d, %q %q", code, &out, &errb)
		}
	})
	t.Run("json", func(t *testing.T) {
		for _, args := range [][]string{{"--json"}, {"--output", "json"}} {
			var out, errb bytes.Buffer
			if code := runVersion(args, &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, &errb)
			}
			var b buildInfo
			if err := json.Unmarshal(out.Bytes(), &b); err != nil {
				t.Fatalf("%v: %s", err, &out)
			}
			if b.Version == "" || !strings.HasPrefix(b.Go, "go") || b.Registry.Digest != registry.Default().Digest() ||
				b.Registry.Services != len(registry.Default().Services()) || !strings.HasPrefix(b.Guest, "sha256:") || len(b.Guest) != 71 {
				t.Fatalf("build info %+v", b)
			}
		}
	})
	t.Run("bad output", func(t *testing.T) {
		var out, errb bytes.Buffer
		if code := runVersion([]string{"--output", "yaml"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `--output "yaml": want text or json`) {
			t.Fatalf("exit %d, %q", code, &errb)
		}
	})
}
