//go:build !linux

package host

import "errors"

// cowSupported is false: without Linux's memfd and madvise the host falls
// back to a fresh instance per op.
const cowSupported = false

var errNoCow = errors.New("copy-on-write memory needs Linux")

type memImage struct{ size int }

func newMemImage([]byte) (*memImage, error) { return nil, errNoCow }

func (*memImage) close() {}

type cowMemory struct{ image *memImage }

func newCowMemory(uint64) (*cowMemory, error) { return nil, errNoCow }

func (*cowMemory) Reallocate(uint64) []byte     { return nil }
func (*cowMemory) Free()                        {}
func (*cowMemory) adopt(*memImage) error        { return errNoCow }
func (*cowMemory) setBusy(bool) bool            { return false }
func (*cowMemory) reset([]byte) (int, error)    { return 0, errNoCow }
func (*cowMemory) pageClasses() ([]byte, error) { return nil, errNoCow }
func (*cowMemory) prime([]byte)                 {}
