package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/registry/snapshot"
)

// TestVersionNamesTheEmbeddedSnapshot: pinned version names the digest,
// version and key of the signed snapshot embedded with the manifests.
func TestVersionNamesTheEmbeddedSnapshot(t *testing.T) {
	e, err := snapshot.LoadEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := runVersion([]string{"--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, &errb)
	}
	var b buildInfo
	if err := json.Unmarshal(out.Bytes(), &b); err != nil {
		t.Fatal(err)
	}
	s := b.Registry.Snapshot
	if s.Error != "" || s.Digest != registry.Default().Digest() || s.Version != e.Version || s.KeyID != e.KeyID || len(s.KeyID) != 16 {
		t.Fatalf("snapshot %+v, want version %d key %s digest %s", s, e.Version, e.KeyID, registry.Default().Digest())
	}
	out.Reset()
	runVersion(nil, &out, &errb)
	if want := "snapshot version " + itoaU(e.Version) + ", signed by key " + e.KeyID; !strings.Contains(out.String(), want) || !strings.Contains(out.String(), e.Digest) {
		t.Errorf("pinned version printed %q, want %q and the digest", out.String(), want)
	}
}

func itoaU(v uint64) string {
	b, _ := json.Marshal(v)
	return string(b)
}
