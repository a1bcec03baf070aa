package snapshot

import (
	"strings"
	"sync"

	"github.com/elevenmessenger/pinned/registry"
)

// Embedded is the snapshot built into the binary, verified.
type Embedded struct {
	// Snapshot is the verified embedded snapshot.
	*Snapshot
	// KeyID is the id of the key that signed it (registry/snapshot.pub).
	KeyID string
}

var loadEmbedded = sync.OnceValues(func() (*Embedded, error) {
	archive, sig, pubText := registry.EmbeddedSnapshot()
	pub, err := ParsePublicKey(pubText)
	if err != nil {
		return nil, err
	}
	s, err := Verify(pub, archive, sig)
	if err != nil {
		return nil, err
	}
	return &Embedded{Snapshot: s, KeyID: KeyID(pub)}, nil
})

// LoadEmbedded verifies the snapshot built into the binary with the
// embedded public key and returns it. It fails when the archive, its
// signature or its key do not agree; [Check] also holds it to the
// embedded manifests.
func LoadEmbedded() (*Embedded, error) { return loadEmbedded() }

// Check reports whether the embedded manifests are exactly the embedded,
// signed snapshot: nil, or an error naming each file that differs.
func Check() error {
	e, err := LoadEmbedded()
	if err != nil {
		return err
	}
	reg := registry.Default()
	if reg.Digest() == e.Digest {
		return nil
	}
	files := memFS{}
	for _, id := range reg.IDs() {
		files[id+".json"] = reg.Raw(id)
	}
	diff, _ := e.Diff(files)
	return fail(KindMismatch, "the embedded registry (%s) is not its signed snapshot (%s); run make snapshot:\n  %s",
		reg.Digest(), e.Digest, strings.Join(diff, "\n  "))
}
