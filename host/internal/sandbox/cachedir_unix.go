//go:build unix

package sandbox

import (
	"os"
	"syscall"
)

// fileOwner is the owner's uid of st.
func fileOwner(st os.FileInfo) (int, bool) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid), true
	}
	return 0, false
}
