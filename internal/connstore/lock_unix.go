//go:build unix

package connstore

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// openNoFollow makes an open fail on a symbolic link in the last element.
const openNoFollow = syscall.O_NOFOLLOW

// lockDir takes the store's cross-process lock: an exclusive flock(2) on
// <dir>/.lock, held until the returned func runs. Two pinned processes
// (a `pinned connect` and a `pinned mcp` re-sealing a rotated pair, or two
// agents' `pinned mcp`) then read-modify-write the sealed file one after
// the other, so neither's change is lost.
func lockDir(dir string) (func(), error) {
	p := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|openNoFollow, FileMode)
	if err != nil {
		return nil, fmt.Errorf("connstore: lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("connstore: lock %s: %w", p, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// checkOwner refuses a file or directory another user owns: a store in a
// directory someone else controls is theirs to swap.
func checkOwner(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return fmt.Errorf("connstore: %s is owned by uid %d, not by you (uid %d): refusing it", path, st.Uid, uid)
	}
	return nil
}
