//go:build linux && (amd64 || arm64)

package sandbox

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The userfaultfd and PAGEMAP_SCAN interfaces (linux/userfaultfd.h,
// linux/fs.h; Documentation/admin-guide/mm/userfaultfd.rst and
// pagemap.rst), which golang.org/x/sys/unix does not define. The ioctl
// numbers are _IOWR(type, nr, size) in the asm-generic encoding that
// amd64 and arm64 use; other architectures build without this file and
// reset by reading /proc/self/pagemap.
const (
	uffdAPI            = 0xAA
	uffdUserModeOnly   = 1          // userfaultfd(2) flag: handle user-mode faults only
	ioctlUffdAPI       = 0xC018AA3F // UFFDIO_API, struct uffdio_api (24 bytes)
	ioctlUffdRegister  = 0xC020AA00 // UFFDIO_REGISTER, struct uffdio_register (32 bytes)
	ioctlUffdWP        = 0xC018AA06 // UFFDIO_WRITEPROTECT, struct uffdio_writeprotect (24 bytes)
	ioctlPagemapScan   = 0xC0606610 // PAGEMAP_SCAN, struct pm_scan_arg (96 bytes)
	uffdRegisterModeWP = 1 << 1     // UFFDIO_REGISTER_MODE_WP
	uffdWPModeWP       = 1 << 0     // UFFDIO_WRITEPROTECT_MODE_WP
	uffdIoctlRegister  = 1 << 0     // _UFFDIO_REGISTER in uffdio_api.ioctls

	uffdFeatureWPShmem       = 1 << 12 // UFFD_FEATURE_WP_HUGETLBFS_SHMEM: a memfd mapping can be write-protected
	uffdFeatureWPUnpopulated = 1 << 13 // UFFD_FEATURE_WP_UNPOPULATED: protect pages not yet mapped, too
	uffdFeatureWPAsync       = 1 << 15 // UFFD_FEATURE_WP_ASYNC: the kernel resolves a write fault itself

	pmScanCheckWPAsync = 1 << 1 // PM_SCAN_CHECK_WPASYNC: fail unless the range is async write-protected
	pageIsWritten      = 1 << 1 // PAGE_IS_WRITTEN
	pageIsPresent      = 1 << 3 // PAGE_IS_PRESENT
)

type uffdioAPI struct{ api, features, ioctls uint64 }

type uffdioRegister struct{ start, len, mode, ioctls uint64 }

type uffdioWriteprotect struct{ start, len, mode uint64 }

type pmScanArg struct {
	size, flags, start, end, walkEnd, vec, vecLen, maxPages       uint64
	categoryInverted, categoryMask, categoryAnyofMask, returnMask uint64
}

type pageRegion struct{ start, end, categories uint64 }

// userfault is the process's userfaultfd in asynchronous write-protect
// mode (Linux 6.7+), opened on first use. Every pooled memory registers
// its image range with it; the descriptor stays open for the life of the
// process, since closing it would drop every registration.
var userfault = sync.OnceValues(func() (int, error) {
	fd, _, errno := unix.Syscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC|unix.O_NONBLOCK|uffdUserModeOnly, 0, 0)
	if errno != 0 {
		return -1, fmt.Errorf("userfaultfd: %w", errno)
	}
	want := uint64(uffdFeatureWPAsync | uffdFeatureWPShmem | uffdFeatureWPUnpopulated)
	api := uffdioAPI{api: uffdAPI, features: want}
	if _, err := ioctlPtr(int(fd), ioctlUffdAPI, unsafe.Pointer(&api)); err != nil {
		unix.Close(int(fd))
		return -1, fmt.Errorf("UFFDIO_API: %w", err)
	}
	if api.features&want != want || api.ioctls&uffdIoctlRegister == 0 {
		unix.Close(int(fd))
		return -1, errors.New("userfaultfd lacks asynchronous write-protection of memfd mappings")
	}
	return int(fd), nil
})

// ioctlPtr is ioctl(2) with a pointer argument; it returns the call's
// result.
func ioctlPtr(fd int, req uintptr, arg unsafe.Pointer) (uintptr, error) {
	n, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
	if errno != 0 {
		return 0, errno
	}
	return n, nil
}

// uffdRange runs the userfaultfd ioctl req (name, in errors) with arg on
// the process's userfaultfd.
func uffdRange(name string, req uintptr, arg unsafe.Pointer) error {
	fd, err := userfault()
	if err != nil {
		return err
	}
	if _, err := ioctlPtr(fd, req, arg); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func rangeOf(b []byte) (start, length uint64) {
	return uint64(uintptr(unsafe.Pointer(&b[0]))), uint64(len(b))
}

// wpRegister registers b for asynchronous write-protection.
func wpRegister(b []byte) error {
	start, length := rangeOf(b)
	reg := uffdioRegister{start: start, len: length, mode: uffdRegisterModeWP}
	return uffdRange("UFFDIO_REGISTER", ioctlUffdRegister, unsafe.Pointer(&reg))
}

// wpProtect write-protects b: the next write to each of its pages is
// resolved by the kernel and marks the page written.
func wpProtect(b []byte) error {
	start, length := rangeOf(b)
	wp := uffdioWriteprotect{start: start, len: length, mode: uffdWPModeWP}
	return uffdRange("UFFDIO_WRITEPROTECT", ioctlUffdWP, unsafe.Pointer(&wp))
}

// scanChanged appends to out the index of every page of b that is not in
// the state primeWPLocked left it in: written since it was last
// write-protected (or never protected), or not mapped; and to absent the
// index of each of those pages that is not mapped. Write-class pages,
// never protected, are always named; absent says which of them lost
// their private copy. (Asking for PAGE_IS_FILE too would name the others
// directly, but makes the kernel look up every page's struct page: it
// more than doubled BenchmarkSandbox/reset's time an op.) A protected page
// the op never wrote can still lose its mapping (reclaim, a huge page
// split) and keep its protection; the next op's read would map it, and
// only a scan that names unmapped pages lets reset undo that. It asks
// PAGEMAP_SCAN for PAGE_IS_WRITTEN or not PAGE_IS_PRESENT, both read from
// the page-table entry alone. vec is scratch for the kernel's answer.
func scanChanged(pm int, b []byte, vec []pageRegion, out, absent []int) ([]int, []int, error) {
	base, length := rangeOf(b)
	end := base + length
	for start := base; start < end; {
		arg := pmScanArg{
			size: uint64(unsafe.Sizeof(pmScanArg{})), flags: pmScanCheckWPAsync,
			start: start, end: end,
			vec: uint64(uintptr(unsafe.Pointer(&vec[0]))), vecLen: uint64(len(vec)),
			categoryInverted:  pageIsPresent,
			categoryAnyofMask: pageIsWritten | pageIsPresent,
			returnMask:        pageIsWritten | pageIsPresent,
		}
		n, err := ioctlPtr(pm, ioctlPagemapScan, unsafe.Pointer(&arg))
		if err != nil {
			return out, absent, fmt.Errorf("PAGEMAP_SCAN: %w", err)
		}
		if int(n) > len(vec) || arg.walkEnd <= start || arg.walkEnd > end {
			return out, absent, fmt.Errorf("PAGEMAP_SCAN answered %d regions up to %#x for [%#x, %#x)", n, arg.walkEnd, start, end)
		}
		for _, r := range vec[:n] {
			if r.start < base || r.end > end || r.start >= r.end {
				return out, absent, fmt.Errorf("PAGEMAP_SCAN region [%#x, %#x) outside [%#x, %#x)", r.start, r.end, base, end)
			}
			for a := r.start; a < r.end; a += pageSize {
				out = append(out, int((a-base)/pageSize))
				if r.categories&pageIsPresent == 0 {
					absent = append(absent, int((a-base)/pageSize))
				}
			}
		}
		start = arg.walkEnd
	}
	return out, absent, nil
}
