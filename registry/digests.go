package registry

import (
	"crypto/sha256"
	"encoding/hex"
)

// ManifestSHA256 returns the lower-case hex SHA-256 of the bytes the
// manifest with the given id was parsed from (the per-file digest of its
// snapshot, package registry/snapshot), or "" if there is none. A grant
// or request naming another value was built against other bytes.
func (r *Registry) ManifestSHA256(id string) string {
	raw, ok := r.raw[id]
	if !ok {
		return ""
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}
