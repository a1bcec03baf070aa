//go:build !unix

package connstore

import "io/fs"

// openNoFollow: no O_NOFOLLOW here; load's Lstat check stands alone.
const openNoFollow = 0

// lockDir: no cross-process lock off unix; the process-wide mutex only
// (writes stay atomic, concurrent processes last-writer-wins).
func lockDir(string) (func(), error) { return func() {}, nil }

// checkOwner: ownership is not checked off unix.
func checkOwner(string, fs.FileInfo) error { return nil }
