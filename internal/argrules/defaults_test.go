package argrules

import (
	"testing"

	"github.com/elevenmessenger/pinned/registry"
)

// TestDefaultMaxLengthIsTheRegistrys: a string arg that declares no
// max_length is bounded by the registry's default, the number the manifest
// docs, the tool schemas (maxLength) and the host's bad_args messages use.
// argrules is compiled into the guest and cannot import registry, so this
// test holds the two together.
func TestDefaultMaxLengthIsTheRegistrys(t *testing.T) {
	if DefaultMaxLength != registry.DefaultMaxLength {
		t.Fatalf("argrules.DefaultMaxLength = %d, registry.DefaultMaxLength = %d", DefaultMaxLength, registry.DefaultMaxLength)
	}
}
