//go:build !linux

package sandbox

import "errors"

// cowSupported is false: without Linux's memfd, madvise and
// /proc/self/pagemap the reset pool is refused (Runtime.WhyFresh says why,
// and host.Engine.Strategy shows it) and every run gets a fresh instance. These stubs mirror cowmem_linux.go's method set; `make
// check` builds and vets GOOS=darwin and GOOS=windows so they cannot drift.
const cowSupported = false

var errNoCow = errors.New("copy-on-write memory needs Linux")

type memImage struct {
	size int
	view []byte
}

func newMemImage([]byte) (*memImage, error) { return nil, errNoCow }

func scratchMemory(n int) ([]byte, func(), error) { return make([]byte, n), func() {}, nil }

func (*memImage) close() {}

type cowMemory struct{ image *memImage }

func newCowMemory(uint64) (*cowMemory, error) { return nil, errNoCow }

func (*cowMemory) Reallocate(uint64) []byte     { return nil }
func (*cowMemory) Free()                        {}
func (*cowMemory) adopt(*memImage) error        { return errNoCow }
func (*cowMemory) setBusy(bool) bool            { return false }
func (*cowMemory) reset([]byte) (int, error)    { return 0, errNoCow }
func (*cowMemory) pageClasses() ([]byte, error) { return nil, errNoCow }
func (*cowMemory) dropWritten([]byte) error     { return errNoCow }
func (*cowMemory) prime([]byte) error           { return errNoCow }
func (*cowMemory) tracked() bool                { return false }
func (*cowMemory) wpErr() error                 { return errNoCow }
func (*cowMemory) adviseHugePages()             {}
