package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// ErrCacheDir is wrapped by the error New returns when Config.CacheDir
// cannot be used: it cannot be created, someone other than this user
// (and root) could write machine code into it, or wazero cannot keep its
// cache in it (a file where its directory goes).
const ErrCacheDir = constError("compilation cache directory refused")

// constError is an error that is a constant, so no package can replace
// it (nothing exported is mutable).
type constError string

func (e constError) Error() string { return string(e) }

// cacheDirError is a refused cache directory: the message says what is
// wrong and the fix; Unwrap gives ErrCacheDir.
type cacheDirError struct{ msg string }

func (e *cacheDirError) Error() string { return "host: cache directory " + e.msg }
func (e *cacheDirError) Unwrap() error { return ErrCacheDir }

// prepareCacheDir creates dir (mode 0700) if needed and refuses it when
// it is not safe to execute code from: the directory holds wazero's
// compiled machine code and the instrumented guest, which the host runs
// (docs/OPERATING.md: it MUST be writable by the sidecar's user only;
// checksums catch a damaged file, not a hostile writer). Refused, with the
// fix in the message, like a key file others can read:
//
//   - dir writable by group or others, or owned by another user;
//   - a parent directory writable by others without the sticky bit (such
//     as a world-writable /srv/shared: anyone could rename dir away and put
//     their own in its place), or owned by another user than this one or
//     root.
//
// A sticky, world-writable parent such as /tmp is accepted: nobody else
// can rename or delete what this user created there.
func prepareCacheDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return &cacheDirError{msg: fmt.Sprintf("%s: %v", dir, err)}
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return &cacheDirError{msg: fmt.Sprintf("%s cannot be created: %v", dir, unwrapPathError(err))}
	}
	st, err := os.Stat(abs)
	if err != nil {
		return &cacheDirError{msg: fmt.Sprintf("%s: %v", dir, unwrapPathError(err))}
	}
	if !st.IsDir() {
		return &cacheDirError{msg: fmt.Sprintf("%s is not a directory", dir)}
	}
	if st.Mode().Perm()&0o022 != 0 {
		return &cacheDirError{msg: fmt.Sprintf("%s has mode %04o: group or others can write the machine code it holds; run `chmod 700 %s`", dir, st.Mode().Perm(), dir)}
	}
	if owner, ok := fileOwner(st); ok && owner != os.Geteuid() {
		return &cacheDirError{msg: fmt.Sprintf("%s belongs to user %d, not to this user (%d), who runs the code in it; use a directory of your own", dir, owner, os.Geteuid())}
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		pst, err := os.Stat(p)
		if err != nil {
			return &cacheDirError{msg: fmt.Sprintf("%s: parent %s: %v", dir, p, unwrapPathError(err))}
		}
		if pst.Mode().Perm()&0o002 != 0 && pst.Mode()&os.ModeSticky == 0 {
			return &cacheDirError{msg: fmt.Sprintf("%s: its parent %s has mode %04o: anyone can replace the directory; run `chmod o-w %s` or choose a cache directory elsewhere", dir, p, pst.Mode().Perm(), p)}
		}
		if owner, ok := fileOwner(pst); ok && owner != 0 && owner != os.Geteuid() {
			return &cacheDirError{msg: fmt.Sprintf("%s: its parent %s belongs to user %d, who could replace the directory; choose a cache directory under one of your own or root's", dir, p, owner)}
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}

// unwrapPathError drops the path of an *os.PathError (the message names
// it already).
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// openCacheFile opens a file of the cache directory to read. Anything but
// a regular file (a FIFO, a device, a directory, or a link to one) is an
// error, so a reader never waits for a FIFO's writer nor reads a device:
// the caller builds what the file would have held. The open does not
// block (O_NONBLOCK), which changes nothing for a regular file.
func openCacheFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
	}
	return f, nil
}

// readCacheFile reads a regular file of the cache directory whole
// (openCacheFile), into a buffer of the size its stat gives, as
// os.ReadFile does: grown from 512 bytes by io.ReadAll, the 2.8 MB
// instrumented guest took ten copies and their page faults (10-15 µs
// each on some VMs), about 20 ms of a start.
func readCacheFile(path string) ([]byte, error) {
	f, err := openCacheFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// One byte more than the size, so the read that finds the end needs
	// no more room; a file that grew since the stat grows the buffer.
	b := make([]byte, 0, st.Size()+1)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}
