//go:build wasip1

// Command imports is a hostile guest that imports WASI functions the host
// does not provide (sockets and files). It must fail to load: a guest's
// imports are exactly the documented list (ABI invariant 1).
package main

//go:wasmimport wasi_snapshot_preview1 sock_accept
func sockAccept(fd int32, flags int32, result uint32) int32

//go:wasmimport wasi_snapshot_preview1 path_open
func pathOpen(fd int32, dirflags int32, path uint32, pathLen uint32, oflags int32, rightsBase uint64, rightsInheriting uint64, fdflags int32, result uint32) int32

func main() {}

//go:wasmexport run
func run() int32 {
	var fd uint32
	if sockAccept(3, 0, 0) == 0 {
		return 1
	}
	return pathOpen(3, 0, 0, 0, 0, 0, 0, 0, uint32(fd))
}
