//go:build linux

package sandbox

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cowSupported reports whether this platform can back linear memory with
// a copy-on-write image (Linux: memfd_create, MAP_PRIVATE|MAP_FIXED,
// madvise(MADV_DONTNEED)).
const cowSupported = true

// memImage is a sealed, read-only memory file holding a template
// instance's linear memory: the page cache shares it between every
// instance mapped from it. view is a read-only shared mapping of it, the
// source a reset copies from.
type memImage struct {
	fd   int
	size int
	view []byte
	// refs counts the pool and every memory mapped from the image; the
	// last release unmaps the view and closes the file.
	mu   sync.Mutex
	refs int
}

// newMemImage copies mem into a sealed memfd. Sealing (F_SEAL_WRITE,
// F_SEAL_GROW, F_SEAL_SHRINK) makes the image immutable for the life of
// the process: no instance, and no bug, can change what a reset restores.
func newMemImage(mem []byte) (*memImage, error) {
	fd, err := unix.MemfdCreate("pinned-guest-image", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	// The file is sized first and only pages holding a non-zero byte are
	// written: a memfd reads as zeros where nothing was written, and much
	// of a Go heap is zeros.
	if err := unix.Ftruncate(fd, int64(len(mem))); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("size memory image: %w", err)
	}
	for page := 0; page < len(mem); page += pageSize {
		end := min(page+pageSize, len(mem))
		if allZero(mem[page:end]) {
			continue
		}
		for off := page; off < end; {
			n, err := unix.Pwrite(fd, mem[off:end], int64(off))
			if err != nil {
				unix.Close(fd)
				return nil, fmt.Errorf("write memory image: %w", err)
			}
			off += n
		}
	}
	if err := sealImage(fd); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("seal memory image: %w", err)
	}
	view, err := unix.Mmap(fd, 0, len(mem), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("map memory image: %w", err)
	}
	return &memImage{fd: fd, size: len(mem), view: view, refs: 1}, nil
}

// sealImage adds the image's seals. F_SEAL_WRITE fails with EBUSY while a
// page of the file holds a reference beyond its mappings (memfd(2);
// mm/memfd.c memfd_wait_for_pins): on a loaded machine a page just written
// can sit for a moment in another CPU's LRU batch, which holds one. That
// is transient, so EBUSY is tried again for up to about a second; any other
// error, or EBUSY past that, is returned and the pool is not built.
func sealImage(fd int) error {
	const seals = unix.F_SEAL_WRITE | unix.F_SEAL_GROW | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL
	for attempt := 1; ; attempt++ {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals)
		if err != unix.EBUSY || attempt == 20 {
			return err
		}
		time.Sleep(time.Duration(attempt) * 5 * time.Millisecond)
	}
}

// acquire takes a reference; false once the image is released for good.
func (m *memImage) acquire() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refs == 0 {
		return false
	}
	m.refs++
	return true
}

// close drops a reference.
func (m *memImage) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refs == 0 {
		return
	}
	if m.refs--; m.refs == 0 {
		unix.Munmap(m.view)
		unix.Close(m.fd)
		m.view = nil
	}
}

// pagemap is /proc/self/pagemap (proc(5)): one 64-bit entry per virtual
// page. A reset reads the entries of an instance's image range to find the
// pages the op wrote.
var pagemap = sync.OnceValues(func() (*os.File, error) { return os.Open("/proc/self/pagemap") })

const (
	pmPresent = 1 << 63 // page present in RAM
	pmSwapped = 1 << 62 // page swapped out
	pmFile    = 1 << 61 // page is a file page (here: the image, untouched)
)

// cowMemory is one instance's linear memory: a reservation of the maximum
// size, whose first image.size bytes are a private copy-on-write mapping
// of the image once adopt is called. It implements
// experimental.LinearMemory.
type cowMemory struct {
	// mu guards the mapping's lifetime: wazero may call Free from another
	// goroutine (Runtime.Close), and the reservation must never be
	// unmapped while an op runs on it or a reset copies into it.
	mu      sync.Mutex
	buf     []byte // the whole reservation; nil once unmapped
	busy    bool   // an op is running on it
	freed   bool   // Free was called; unmap when no longer busy
	image   *memImage
	entries []byte // pagemap scratch
	sink    byte   // keeps the compiler from dropping primeLocked's reads
	// wp is true once the image range is write-protected for tracking
	// (primeWPLocked): reset then asks the kernel which pages were written
	// instead of reading the page table.
	wp      bool
	wpFail  error        // why priming with write tracking failed, if it did
	vec     []pageRegion // PAGEMAP_SCAN scratch
	written []int        // scanChanged scratch
	absent  []int        // scanChanged scratch
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

// Free implements experimental.LinearMemory. While an op runs on the
// memory it only marks it; setBusy(false) unmaps it afterwards.
func (c *cowMemory) Free() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.freed = true
	if !c.busy {
		c.unmapLocked()
	}
}

func (c *cowMemory) unmapLocked() {
	if c.buf != nil {
		_ = unix.Munmap(c.buf)
		c.buf = nil
		if c.image != nil {
			c.image.close()
		}
	}
}

// setBusy marks the memory in use by an op (true) or idle (false). It
// reports false when the memory was freed, so the caller must not use it.
func (c *cowMemory) setBusy(b bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.busy = b
	if !b && c.freed {
		c.unmapLocked()
	}
	return !c.freed
}

// adopt maps the image privately over the start of the memory: from now
// on the instance reads the image and its writes land in private pages.
func (c *cowMemory) adopt(img *memImage) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.freed || c.buf == nil {
		return fmt.Errorf("memory already freed")
	}
	if img.size > len(c.buf) {
		return fmt.Errorf("memory image of %d bytes exceeds the reservation", img.size)
	}
	if !img.acquire() {
		return fmt.Errorf("memory image released")
	}
	_, err := unix.MmapPtr(img.fd, 0, unsafe.Pointer(&c.buf[0]), uintptr(img.size),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED)
	if err != nil {
		img.close()
		return fmt.Errorf("map memory image: %w", err)
	}
	c.image = img
	return nil
}

// readPagemap reads the pagemap entries of the image range into
// c.entries.
func (c *cowMemory) readPagemap() ([]byte, error) {
	n := c.image.size / pageSize
	if cap(c.entries) < n*8 {
		c.entries = make([]byte, n*8)
	}
	buf := c.entries[:n*8]
	pm, err := pagemap()
	if err != nil {
		return nil, err
	}
	off := int64(uintptr(unsafe.Pointer(&c.buf[0]))/pageSize) * 8
	got, err := pm.ReadAt(buf, off)
	if err == nil && got != len(buf) {
		err = fmt.Errorf("short pagemap read")
	}
	return buf, err
}

// pageClasses classifies the image range by what the warm-up ops did on
// this instance: the pages they wrote become write-class, the pages they
// only read read-class, the rest cold.
func (c *cowMemory) pageClasses() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	buf, err := c.readPagemap()
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(buf)/8)
	for i := range out {
		e := binary.LittleEndian.Uint64(buf[i*8:])
		switch {
		case e&pmSwapped != 0 || (e&pmPresent != 0 && e&pmFile == 0):
			out[i] = pageWrite
		case e&pmPresent != 0:
			out[i] = pageRead
		}
	}
	return out, nil
}

// dropWritten drops every write-class page of class (pageClasses' answer
// for this memory) with madvise(MADV_DONTNEED), a run of adjacent pages at
// a time: in the private mapping of the image they read as the image
// again. The probe uses it to start each warm-up op from the template's
// pages.
func (c *cowMemory) dropWritten(class []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.freed || c.buf == nil || c.image == nil || len(class) != c.image.size/pageSize {
		return fmt.Errorf("memory freed or page classes of another size")
	}
	return classRuns(class, true, func(i, j int) error {
		return unix.Madvise(c.buf[i*pageSize:j*pageSize], unix.MADV_DONTNEED)
	})
}

// classRuns calls do(i, j) for each maximal run [i, j) of adjacent pages
// that are write-class (write true) or not (write false), in order, and
// stops at its first error.
func classRuns(class []byte, write bool, do func(i, j int) error) error {
	for i := 0; i < len(class); {
		if (class[i] == pageWrite) != write {
			i++
			continue
		}
		j := i + 1
		for j < len(class) && (class[j] == pageWrite) == write {
			j++
		}
		if err := do(i, j); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// prime puts the pages in their canonical state. Where the kernel tracks
// writes (primeWPLocked) that is: write-class pages private copies, every
// other page mapped from the image and write-protected. Elsewhere:
// write-class pages private copies, read-class pages mapped (by reading
// them), cold pages not mapped. A nil class (the probe instance) leaves
// the memory as it is. An error leaves the memory in an unknown state:
// the caller discards the instance.
func (c *cowMemory) prime(class []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if class == nil {
		return nil
	}
	err := c.primeWPLocked(class)
	if err == nil {
		c.wp = true
		return nil
	}
	c.wpFail = err
	// Back to the pagemap state from whatever the attempt left.
	if err := unix.Madvise(c.buf[:c.image.size], unix.MADV_DONTNEED); err != nil {
		return fmt.Errorf("drop a half-primed memory: %w", err)
	}
	return c.primeLocked(class, -1)
}

// adviseHugePages asks the kernel to back the reservation with
// transparent huge pages (madvise MADV_HUGEPAGE) where the system allows
// them ("madvise" or "always" in
// /sys/kernel/mm/transparent_hugepage/enabled). Of the instances, only
// the template's build instance asks (scratchMemory does too): it is
// written once from empty by _initialize and
// the warm-up ops, then read whole into the image and unmapped, so each
// 2 MiB takes one fault instead of 512 (at 10-15 µs a fault on some VMs,
// BenchmarkPageFault). It changes no byte the guest sees: untouched
// memory reads as zeros either way. Pooled instances map the image
// (shared memory, never huge here) and are primed with
// MADV_POPULATE_*; the advice is not given to them. An error is ignored:
// the advice is an optimisation.
func (c *cowMemory) adviseHugePages() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buf != nil {
		_ = unix.Madvise(c.buf, unix.MADV_HUGEPAGE)
	}
}

// scratchMemory returns n bytes of anonymous memory with transparent
// huge pages advised (adviseHugePages says why) and the function that
// unmaps them; readTemplate reads a template's memory into it.
func scratchMemory(n int) ([]byte, func(), error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, nil, fmt.Errorf("map scratch memory: %w", err)
	}
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	return b, func() { _ = unix.Munmap(b) }, nil
}

// wpErr says why the memory resets without write tracking (nil when it
// has it, or was never primed).
func (c *cowMemory) wpErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wpFail
}

// tracked reports whether resets use write tracking.
func (c *cowMemory) tracked() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wp
}

// primeWPLocked sets up write tracking (Linux 6.7+, userfaultfd in
// asynchronous write-protect mode): the image range is registered, every
// page is mapped (write-class pages as private copies, the rest from the
// image, so that no read in an op faults), and every page but the
// write-class ones is write-protected. A write to a protected page is then
// resolved by the kernel, which clears the page's protection: PAGEMAP_SCAN
// with PAGE_IS_WRITTEN finds it. Write-class pages stay unprotected, so an
// op's usual writes take no fault; they count as written on every scan
// and reset restores them anyway. It checks the result: the scan must
// name the write-class pages, each mapped, and nothing else (no other
// page written or unmapped).
func (c *cowMemory) primeWPLocked(class []byte) error {
	size := c.image.size
	n := size / pageSize
	if len(class) != n {
		return fmt.Errorf("page classes for %d pages, image of %d", len(class), n)
	}
	pm, err := pagemap()
	if err != nil {
		return err
	}
	if err := wpRegister(c.buf[:size]); err != nil {
		return err
	}
	for i, k := range class {
		if k == pageWrite {
			c.copyPage(i)
		}
	}
	if err := unix.Madvise(c.buf[:size], unix.MADV_POPULATE_READ); err != nil {
		return fmt.Errorf("madvise(MADV_POPULATE_READ): %w", err)
	}
	if err := classRuns(class, false, func(i, j int) error {
		return wpProtect(c.buf[i*pageSize : j*pageSize])
	}); err != nil {
		return err
	}
	// Protecting a range a huge page mapped splits it, and a split of a
	// file huge page unmaps all of it (leaving each page protected): map
	// them again, or the first op's reads would decide which are mapped.
	if err := unix.Madvise(c.buf[:size], unix.MADV_POPULATE_READ); err != nil {
		return fmt.Errorf("madvise(MADV_POPULATE_READ): %w", err)
	}
	if c.vec == nil {
		c.vec = make([]pageRegion, 256)
	}
	got, absent, err := scanChanged(int(pm.Fd()), c.buf[:size], c.vec, c.written[:0], c.absent[:0])
	if err != nil {
		return err
	}
	c.written, c.absent = got, absent[:0]
	if len(absent) != 0 {
		return fmt.Errorf("write tracking reports %d pages unmapped after priming (page %d)", len(absent), absent[0])
	}
	want := 0
	for _, k := range class {
		if k == pageWrite {
			want++
		}
	}
	if len(got) != want {
		return fmt.Errorf("write tracking reports %d pages written after priming, want the %d write-class pages", len(got), want)
	}
	for _, i := range got {
		if class[i] != pageWrite {
			return fmt.Errorf("write tracking reports page %d written after priming", i)
		}
	}
	return nil
}

// primeLocked puts the pages of class (every page, or only the page
// numbered only) in the pagemap reset's canonical state. Priming every
// page ends by dropping the cold pages fault-around mapped beside the
// read-class ones, as reset does: a new instance is then in the state a
// reset returns to (TestPagemapPrimeMatchesReset). Without a readable
// pagemap it leaves them, as reset's fallback, which primes, does.
func (c *cowMemory) primeLocked(class []byte, only int) error {
	var sink byte
	for i, k := range class {
		if only >= 0 && i != only {
			continue
		}
		switch k {
		case pageWrite:
			c.copyPage(i)
		case pageRead:
			sink ^= c.buf[i*pageSize]
		}
	}
	c.sink = sink
	if only >= 0 || len(class) != c.image.size/pageSize {
		return nil
	}
	buf, err := c.readPagemap()
	if err != nil {
		return nil
	}
	return c.dropColdLocked(class, buf)
}

// dropColdLocked drops every cold page of class that buf (readPagemap's
// entries) names mapped: reading a page maps the pages around it too
// (fault-around), cold ones included.
func (c *cowMemory) dropColdLocked(class, buf []byte) error {
	for i, k := range class {
		e := binary.LittleEndian.Uint64(buf[i*8:])
		if k != pageCold || e&(pmPresent|pmSwapped) == 0 {
			continue
		}
		if err := unix.Madvise(c.buf[i*pageSize:(i+1)*pageSize], unix.MADV_DONTNEED); err != nil {
			return err
		}
	}
	return nil
}

// reset returns the memory to the image AND to a page state that does not
// depend on what the op did: otherwise an op could learn which pages the
// previous op touched by timing its own page faults, a cross-op channel a
// fresh instance does not have.
//
// With write tracking (primeWPLocked, Linux 6.7+) the canonical state is
// every page mapped, write-class pages as private copies, and reset asks
// the kernel which pages were written (resetWPLocked). Without it the
// canonical state (pageClasses, computed once per pool) is: each
// write-class page a private, present copy equal to the image; each
// read-class page mapped from the image and unwritten; every other page not
// mapped. reset then restores every write-class page (restorePage: whether or
// not the op wrote it), and reads /proc/self/pagemap (proc(5): bit 61 marks
// a file page, i.e. one still the sealed image's own) for the rest: a
// read-class page the op wrote, and any cold page the op mapped, is dropped
// with madvise(MADV_DONTNEED) — in a private file mapping it then reads as
// the image again — and a read-class page is mapped again by reading it.
// Without a readable pagemap it drops the whole range and primes again,
// which ends in the same state. It returns the pages copied, dropped or
// mapped. The caller has checked that the memory did not grow past the
// image.
func (c *cowMemory) reset(class []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.freed || c.buf == nil || c.image == nil {
		return 0, fmt.Errorf("memory freed")
	}
	n := c.image.size / pageSize
	if c.wp {
		return c.resetWPLocked(class)
	}
	buf, err := c.readPagemap()
	if err != nil || len(class) != n {
		if err := unix.Madvise(c.buf[:c.image.size], unix.MADV_DONTNEED); err != nil {
			return 0, err
		}
		return n, c.primeLocked(class, -1)
	}
	count, reread := 0, false
	for i := 0; i < n; i++ {
		e := binary.LittleEndian.Uint64(buf[i*8:])
		present := e&(pmPresent|pmSwapped) != 0
		file := e&pmPresent != 0 && e&pmFile != 0
		switch class[i] {
		case pageWrite:
			if !present || file {
				// Not a private copy (its canonical state): copying
				// makes it one, whatever its bytes.
				c.copyPage(i)
				count++
			} else if c.restorePage(i) {
				count++
			}
		case pageRead:
			if file {
				continue
			}
			if present { // written by the op
				if err := unix.Madvise(c.buf[i*pageSize:(i+1)*pageSize], unix.MADV_DONTNEED); err != nil {
					return count, err
				}
			}
			c.primeLocked(class, i)
			count++
			reread = true
		default:
			if present {
				if err := unix.Madvise(c.buf[i*pageSize:(i+1)*pageSize], unix.MADV_DONTNEED); err != nil {
					return count, err
				}
				count++
			}
		}
	}
	if !reread {
		return count, nil
	}
	// Reading a page maps the pages around it too (fault-around), cold
	// ones included, and which pages were read again depends on the op:
	// drop every cold page that is mapped now.
	if buf, err = c.readPagemap(); err != nil {
		return count, err
	}
	return count, c.dropColdLocked(class, buf)
}

// restorePage makes write-class page i equal to the image's again,
// copying it only where the two differ, and reports whether it copied.
// The caller copies the pages that lost their mapping whatever their
// bytes, since such a page reads as the image's own and compares equal
// (TestResetWriteClassPageUnmapped). A page that compares equal is
// written once all the same (one byte, its own value): a present,
// anonymous page can still be write-protected, merged by KSM or shared
// with a forked child, and the pagemap does not show it; the write makes
// it a private, writable copy again, as the op's writes made the pages
// that differ (TestResetLeavesWriteClassPagesWritable). The class is
// the union of the pages every warm-up op wrote, so most of them come out
// of any one op as they went in (5 of 28 differ after a list_repos op).
// Comparing reads both pages where copying reads one and writes the
// other, and dirties one cache line of a page that did not change, not
// 64.
func (c *cowMemory) restorePage(i int) bool {
	page, img := c.page(i)
	if bytes.Equal(page, img) {
		page[0] = img[0]
		return false
	}
	copy(page, img)
	return true
}

// page returns page i of the memory and of the image.
func (c *cowMemory) page(i int) (page, img []byte) {
	return c.buf[i*pageSize : (i+1)*pageSize], c.image.view[i*pageSize : (i+1)*pageSize]
}

// copyPage copies page i of the image over the memory's.
func (c *cowMemory) copyPage(i int) {
	page, img := c.page(i)
	copy(page, img)
}

// resetWPLocked is reset where the kernel tracks writes (primeWPLocked).
// It restores every write-class page (restorePage), as the pagemap reset
// does, and asks the kernel (PAGEMAP_SCAN) which other pages the op wrote
// or are no longer mapped (scanChanged: reclaim can unmap a page): each is
// dropped (madvise(MADV_DONTNEED): it reads as the image again), protected
// again and mapped again (madvise(MADV_POPULATE_READ), as priming maps
// the range). A page the op only read was already mapped, so reads change
// nothing. Any error leaves the memory in an unknown state: the caller
// discards the instance.
func (c *cowMemory) resetWPLocked(class []byte) (int, error) {
	size := c.image.size
	if len(class) != size/pageSize {
		return 0, fmt.Errorf("page classes for %d pages, image of %d", len(class), size/pageSize)
	}
	pm, err := pagemap()
	if err != nil {
		return 0, err
	}
	written, absent, err := scanChanged(int(pm.Fd()), c.buf[:size], c.vec, c.written[:0], c.absent[:0])
	c.written, c.absent = written[:0], absent[:0]
	if err != nil {
		return 0, err
	}
	count := 0
	for i, k := range class {
		if k == pageWrite && c.restorePage(i) {
			count++
		}
	}
	// A write-class page that lost its mapping read as the image's own
	// page in restorePage and compared equal. restorePage's one-byte
	// write already made it a private copy again; it is copied whole as
	// well, so that its canonical state (a private copy, whose first write
	// in the next op takes no fault) does not rest on that write alone.
	// A page still mapped but shared (KSM, a fork) is restorePage's case.
	for _, i := range absent {
		if class[i] == pageWrite {
			c.copyPage(i)
			count++
		}
	}
	// The other pages the scan named, a run of adjacent ones at a time
	// (written is in address order): three calls per run, and the run is
	// mapped again by the kernel (MADV_POPULATE_READ) rather than by a
	// read fault per page, which costs 16 times as much on the benchmark
	// VM.
	for k := 0; k < len(written); {
		i := written[k]
		k++
		if class[i] == pageWrite {
			continue
		}
		j := i + 1
		for k < len(written) && written[k] == j && class[j] != pageWrite {
			j, k = j+1, k+1
		}
		run := c.buf[i*pageSize : j*pageSize]
		if err := unix.Madvise(run, unix.MADV_DONTNEED); err != nil {
			return count, err
		}
		if err := wpProtect(run); err != nil {
			return count, err
		}
		if err := unix.Madvise(run, unix.MADV_POPULATE_READ); err != nil {
			return count, fmt.Errorf("madvise(MADV_POPULATE_READ): %w", err)
		}
		count += j - i
	}
	return count, nil
}
