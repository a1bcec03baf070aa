//go:build linux

package host

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cowSupported reports whether this platform can back linear memory with
// a copy-on-write image (Linux: memfd_create, MAP_PRIVATE|MAP_FIXED,
// madvise(MADV_DONTNEED)).
const cowSupported = true

// memImage is a sealed, read-only memory file holding a template
// instance's linear memory: the page cache shares it between every
// instance mapped from it.
type memImage struct {
	fd   int
	size int
}

// newMemImage copies mem into a sealed memfd. Sealing (F_SEAL_WRITE,
// F_SEAL_GROW, F_SEAL_SHRINK) makes the image immutable for the life of
// the process: no instance, and no bug, can change what a reset restores.
func newMemImage(mem []byte) (*memImage, error) {
	fd, err := unix.MemfdCreate("pinned-guest-image", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	for off := 0; off < len(mem); {
		n, err := unix.Pwrite(fd, mem[off:], int64(off))
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("write memory image: %w", err)
		}
		off += n
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_GROW|unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("seal memory image: %w", err)
	}
	return &memImage{fd: fd, size: len(mem)}, nil
}

func (m *memImage) close() { unix.Close(m.fd) }

// cowMemory is one instance's linear memory: a reservation of the maximum
// size, whose first image.size bytes are a private copy-on-write mapping
// of the image once adopt is called. It implements
// experimental.LinearMemory.
type cowMemory struct {
	buf   []byte // the whole reservation
	image *memImage
}

func newCowMemory(max uint64) (*cowMemory, error) {
	b, err := unix.Mmap(-1, 0, int(max), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("reserve linear memory: %w", err)
	}
	return &cowMemory{buf: b}, nil
}

// Reallocate implements experimental.LinearMemory: the memory never moves;
// growing only exposes more of the reservation.
func (c *cowMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(c.buf)) {
		return nil
	}
	return c.buf[:size]
}

// Free implements experimental.LinearMemory.
func (c *cowMemory) Free() {
	if c.buf != nil {
		_ = unix.Munmap(c.buf)
		c.buf = nil
	}
}

// adopt maps the image privately over the start of the memory: from now
// on the instance reads the image and its writes land in private pages.
func (c *cowMemory) adopt(img *memImage) error {
	if img.size > len(c.buf) {
		return fmt.Errorf("memory image of %d bytes exceeds the reservation", img.size)
	}
	_, err := unix.MmapPtr(img.fd, 0, unsafe.Pointer(&c.buf[0]), uintptr(img.size),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED)
	if err != nil {
		return fmt.Errorf("map memory image: %w", err)
	}
	c.image = img
	return nil
}

// reset drops every private page of the image range, so each byte reads
// as the image again; pages the op never wrote cost nothing. The caller
// has checked the memory did not grow past the image.
func (c *cowMemory) reset() error {
	return unix.Madvise(c.buf[:c.image.size], unix.MADV_DONTNEED)
}
