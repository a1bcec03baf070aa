package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// addrFileHelp is the help of every server's --addr-file flag.
const addrFileHelp = "write the `file` with the address actually bound (host:port, one line) once serving, and remove it at exit: scripts wait for it instead of polling a port another process may hold (use with --listen 127.0.0.1:0)"

// writeAddrFile writes addr and a newline to path atomically (a reader
// never sees it half written) and returns the function that removes it.
// path "" does nothing.
func writeAddrFile(path, addr string) (remove func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".addr-*")
	if err != nil {
		return nil, fmt.Errorf("--addr-file: %w", err)
	}
	_, werr := fmt.Fprintln(tmp, addr)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("--addr-file: %w", werr)
	}
	return func() { os.Remove(path) }, nil
}
