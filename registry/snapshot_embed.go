package registry

import _ "embed"

// The embedded snapshot: the canonical archive of manifests/ (package
// registry/snapshot), its minisign signature and the public key that
// verifies it. `make snapshot` (go generate ./registry) rewrites both
// files; TestEmbeddedSnapshot fails the build's tests when a manifest's
// bytes differ from the snapshot.
//
//go:generate go run ../cmd/pinned registry snapshot manifests -o snapshot.json
//go:generate go run ../cmd/pinned registry sign --key snapshot/testdata/dev.key snapshot.json
var (
	//go:embed snapshot.json
	snapshotArchive []byte
	//go:embed snapshot.json.minisig
	snapshotSignature []byte
	//go:embed snapshot.pub
	snapshotPublicKey []byte
)

// EmbeddedSnapshot returns copies of the snapshot files built into the
// binary: the archive (registry/snapshot.json), its minisign signature
// and the public key it is signed with (registry/snapshot.pub). Package
// registry/snapshot reads and verifies them.
func EmbeddedSnapshot() (archive, signature, publicKey []byte) {
	return append([]byte(nil), snapshotArchive...), append([]byte(nil), snapshotSignature...), append([]byte(nil), snapshotPublicKey...)
}
