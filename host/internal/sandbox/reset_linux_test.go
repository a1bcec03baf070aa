//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestResetCanonicalState: after an op that writes pages of every class
// and reads cold ones (a hostile guest's moves), reset restores every
// page's contents and its page state: with write tracking, every page
// mapped, the write-class pages private copies and the rest the image's
// own pages, write-protected; without it, cold pages unmapped again. A
// state left by the op is a channel to the next op (the page-fault
// timing channel, TestResetClosesPageFaultChannel in package host).
func TestResetCanonicalState(t *testing.T) {
	eachReset(t, 2, func(t *testing.T, ms []*cowMemory, class []byte) {
		c := ms[0]
		// Cold pages inside a read window, as where an instance's
		// fault-around windows fall otherwise than the probe's: reading
		// page 30 again maps them.
		class = slices.Clone(class)
		for i := 24; i < 28; i++ {
			class[i] = pageCold
		}
		img := c.image.view
		wrote := []int{0, 26, 16, 2, 17, 500, 1, 1201, 1663, 30} // write, write, read, cold, read, read, cold, read, read, read
		read := []int{4, 6, 1000, 1100}                          // cold pages
		for round := range 3 {
			var sink byte
			for _, i := range wrote {
				c.buf[i*pageSize+100] ^= 0xff
			}
			for _, i := range read {
				sink ^= c.buf[i*pageSize+7]
			}
			_ = sink
			n, err := c.reset(class)
			if err != nil {
				t.Fatalf("round %d: reset: %v", round, err)
			}
			if n < len(wrote)-2 {
				t.Fatalf("round %d: reset restored %d pages, the op wrote %d", round, n, len(wrote))
			}
			checkPageStates(t, c, class, round)
			for _, i := range append(wrote, read...) {
				if !bytes.Equal(c.buf[i*pageSize:(i+1)*pageSize], img[i*pageSize:(i+1)*pageSize]) {
					t.Fatalf("round %d: page %d differs from the image after reset", round, i)
				}
			}
			if c.tracked() {
				checkScanNamesWriteClass(t, c, class)
			}
		}
		// Reading the whole memory last: it maps every page.
		if !bytes.Equal(c.buf[:c.image.size], img) {
			t.Fatal("memory differs from the image after the resets")
		}
		// The other instance, never used, is in the same state.
		if !bytes.Equal(ms[1].buf[:ms[1].image.size], img) {
			t.Fatal("an idle instance changed")
		}
	})
}

// TestResetRemapsUnmappedPages: with write tracking, a page can leave the
// canonical state without being written: reclaim, or a huge page split
// while priming, unmaps a protected page and leaves only its protection.
// The next op's reads then decide which such pages are mapped, a
// fault-timing channel to the op after it, unless reset maps them again.
// A write by the kernel (getrandom(2), as random_get does) must be
// tracked like a guest's.
func TestResetRemapsUnmappedPages(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   func(c *cowMemory) error
	}{
		{"protected_page_unmapped", func(c *cowMemory) error {
			return unix.Madvise(c.buf[16*pageSize:18*pageSize], unix.MADV_DONTNEED) // read-class, never written
		}},
		{"unmapped_then_read", func(c *cowMemory) error {
			if err := unix.Madvise(c.buf[16*pageSize:18*pageSize], unix.MADV_DONTNEED); err != nil {
				return err
			}
			c.sink ^= c.buf[16*pageSize+5] // the op reads one: mapped, the other not
			return nil
		}},
		{"write_class_page_unmapped", func(c *cowMemory) error {
			return unix.Madvise(c.buf[26*pageSize:27*pageSize], unix.MADV_DONTNEED)
		}},
		{"kernel_write", func(c *cowMemory) error {
			_, err := unix.Getrandom(c.buf[17*pageSize+4000:18*pageSize+64], 0)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, class := resetImage(t, 1, false)
			c := ms[0]
			if !c.tracked() {
				t.Skipf("no write tracking on this kernel (%v)", c.wpErr())
			}
			if err := tc.op(c); err != nil {
				t.Fatal(err)
			}
			if _, err := c.reset(class); err != nil {
				t.Fatalf("reset: %v", err)
			}
			checkPageStates(t, c, class, 0)
			checkScanNamesWriteClass(t, c, class)
			if !bytes.Equal(c.buf[:c.image.size], c.image.view) {
				t.Fatal("memory differs from the image after reset")
			}
		})
	}
}

// TestResetWriteClassPageUnmapped: a write-class page the op leaves
// equal to the image but unmapped (reclaim; the next read maps the
// image's own page) must be a private copy again after reset, with either
// reset: comparing its bytes alone would find nothing to copy, and the
// next op's first write would take a fault the op after a normal one does
// not (a page-fault timing channel). Without write tracking the pagemap
// tells a page read back from the image apart too.
func TestResetWriteClassPageUnmapped(t *testing.T) {
	eachReset(t, 1, func(t *testing.T, ms []*cowMemory, class []byte) {
		c := ms[0]
		if class[26] != pageWrite {
			t.Fatalf("page 26 is class %d, want write", class[26])
		}
		reads := []bool{false} // the op reads the page back after dropping it
		if !c.tracked() {
			reads = append(reads, true)
		}
		for _, read := range reads {
			for round := range 2 {
				if err := unix.Madvise(c.buf[26*pageSize:27*pageSize], unix.MADV_DONTNEED); err != nil {
					t.Fatal(err)
				}
				if read {
					c.sink ^= c.buf[26*pageSize+9]
				}
				n, err := c.reset(class)
				if err != nil {
					t.Fatalf("reset: %v", err)
				}
				if n < 1 {
					t.Fatalf("read back %v, round %d: reset restored %d pages, want the unmapped write-class page", read, round, n)
				}
				checkPageStates(t, c, class, round)
				if !bytes.Equal(c.buf[:c.image.size], c.image.view) {
					t.Fatal("memory differs from the image after reset")
				}
			}
		}
	})
}

// eachReset runs f on the instances of a new image (resetImage) under
// each reset: with write tracking (skipped where the kernel has none)
// and reading /proc/self/pagemap.
func eachReset(t *testing.T, instances int, f func(t *testing.T, ms []*cowMemory, class []byte)) {
	for _, tc := range []struct {
		name    string
		pagemap bool
	}{
		{"write_tracking", false},
		{"pagemap", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, class := resetImage(t, instances, tc.pagemap)
			if !tc.pagemap && !ms[0].tracked() {
				t.Skipf("no write tracking on this kernel (%v): resets read /proc/self/pagemap, tested by the pagemap case", ms[0].wpErr())
			}
			if tc.pagemap && ms[0].tracked() {
				t.Fatal("the pagemap case has write tracking")
			}
			f(t, ms, class)
		})
	}
}

// TestResetAfterHalfAppliedTracking: priming with write tracking can fail
// after registering the range and protecting part of it; the memory then
// resets from the pagemap, with the registration and some protection
// markers left behind. Resets still restore every page and the pagemap
// canonical state (cold pages unmapped, read-class pages mapped from the
// image, write-class pages private copies).
func TestResetAfterHalfAppliedTracking(t *testing.T) {
	ms, class := resetImage(t, 1, true)
	c := ms[0]
	size := c.image.size
	if err := wpRegister(c.buf[:size]); err != nil {
		t.Skipf("no write tracking on this kernel: %v", err)
	}
	// What primeWPLocked does up to a failure half way through.
	for i, k := range class {
		if k == pageWrite {
			copy(c.buf[i*pageSize:(i+1)*pageSize], c.image.view[i*pageSize:(i+1)*pageSize])
		}
	}
	if err := unix.Madvise(c.buf[:size], unix.MADV_POPULATE_READ); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(class)/2; i += 26 {
		if err := wpProtect(c.buf[i*pageSize : (i+25)*pageSize]); err != nil {
			t.Fatal(err)
		}
	}
	// prime's fallback.
	if err := unix.Madvise(c.buf[:size], unix.MADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	if err := c.primeLocked(class, -1); err != nil {
		t.Fatal(err)
	}
	if c.tracked() {
		t.Fatal("tracking after a failed priming")
	}
	wrote := []int{0, 16, 17, 2, 500, 27, 1201, 3, 40}
	read := []int{4, 6, 1000, 1100, 5, 7}
	for round := range 3 {
		for _, i := range wrote {
			c.buf[i*pageSize+100] ^= 0xff
		}
		for _, i := range read {
			c.sink ^= c.buf[i*pageSize+7]
		}
		if _, err := c.reset(class); err != nil {
			t.Fatalf("round %d: reset: %v", round, err)
		}
		checkPageStates(t, c, class, round)
		for _, i := range append(wrote, read...) {
			if !bytes.Equal(c.buf[i*pageSize:(i+1)*pageSize], c.image.view[i*pageSize:(i+1)*pageSize]) {
				t.Fatalf("round %d: page %d differs from the image after reset", round, i)
			}
		}
	}
	if !bytes.Equal(c.buf[:size], c.image.view) {
		t.Fatal("memory differs from the image after the resets")
	}
}

// TestResetManyScatteredWrites: an op that writes every other page (more
// separate regions than one PAGEMAP_SCAN answer holds, so the scan
// resumes where the kernel stopped) and unmaps others leaves no page
// unrestored or out of the canonical state.
func TestResetManyScatteredWrites(t *testing.T) {
	ms, class := resetImage(t, 1, false)
	c := ms[0]
	if !c.tracked() {
		t.Skipf("no write tracking on this kernel (%v)", c.wpErr())
	}
	pm, _ := pagemap()
	var want []int
	for i, k := range class {
		if k == pageWrite {
			want = append(want, i)
		}
	}
	for round := range 3 {
		for i := round % 2; i < len(class); i += 2 {
			c.buf[i*pageSize+i%pageSize] ^= 0x5a
		}
		for i := 3; i < len(class); i += 7 {
			if err := unix.Madvise(c.buf[i*pageSize:(i+1)*pageSize], unix.MADV_DONTNEED); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.reset(class); err != nil {
			t.Fatalf("round %d: reset: %v", round, err)
		}
		got, _, err := scanChanged(int(pm.Fd()), c.buf[:c.image.size], c.vec, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: %d pages out of the canonical state after reset, want the %d write-class pages", round, len(got), len(want))
		}
		if !bytes.Equal(c.buf[:c.image.size], c.image.view) {
			t.Fatalf("round %d: memory differs from the image after reset", round)
		}
	}
}

// checkScanNamesWriteClass fails t unless the tracked reset's scan names
// exactly the write-class pages: every other page is mapped and unwritten.
func checkScanNamesWriteClass(t *testing.T, c *cowMemory, class []byte) {
	t.Helper()
	pm, _ := pagemap()
	got, _, err := scanChanged(int(pm.Fd()), c.buf[:c.image.size], c.vec, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for i, k := range class {
		if k == pageWrite {
			want = append(want, i)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the scan names %d pages written or unmapped after reset, want the %d write-class pages", len(got), len(want))
	}
}

// checkPageStates fails t unless every page is in the state reset
// returns to: write-class pages private copies; with write tracking every
// other page mapped from the image, without it read-class pages mapped
// and cold pages unmapped.
func checkPageStates(t *testing.T, c *cowMemory, class []byte, round int) {
	t.Helper()
	buf, err := c.readPagemap()
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range class {
		e := binary.LittleEndian.Uint64(buf[i*8:])
		present, file := e&pmPresent != 0, e&pmFile != 0
		var ok bool
		switch {
		case k == pageWrite:
			ok = present && !file
		case c.tracked() || k == pageRead:
			ok = present && file
		default:
			ok = !present
		}
		if !ok {
			t.Fatalf("round %d: page %d (class %d) entry %#x (present=%v file=%v) after reset", round, i, k, e, present, file)
		}
	}
}

// TestPagemapPrimeMatchesReset is the hostile pair of classes and op
// without write tracking: classes (from the cache directory, or probed on
// a buffer that fault-around windows cut otherwise) put cold pages beside
// read-class ones. Priming reads the read-class pages, and fault-around
// maps the cold ones beside them; a reset drops them. A new instance then
// differs from a reset one, and an op that traps (so the next op gets a
// new instance) signals the next op through its page-fault timing. A
// new instance must be in the state a reset returns to.
func TestPagemapPrimeMatchesReset(t *testing.T) {
	for _, tc := range []struct {
		name  string
		class func(class []byte)
	}{
		{"cold pages inside a read window", func(class []byte) {
			for i := 24; i < 28; i++ {
				class[i] = pageCold
			}
		}},
		{"every other page write, page 6 read", func(class []byte) {
			for i := range class {
				class[i] = byte(i%2) * pageWrite
			}
			class[6] = pageRead
		}},
		{"one read page between cold ones", func(class []byte) {
			clear(class)
			class[40] = pageRead
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, class := resetImage(t, 2, true)
			class = slices.Clone(class)
			tc.class(class)
			for _, c := range ms { // prime without write tracking, as prime's fallback does
				if err := unix.Madvise(c.buf[:c.image.size], unix.MADV_DONTNEED); err != nil {
					t.Fatal(err)
				}
				if err := c.primeLocked(class, -1); err != nil {
					t.Fatal(err)
				}
			}
			checkPageStates(t, ms[1], class, -1) // new, never used (round -1)
			fresh, err := ms[1].readPagemap()
			if err != nil {
				t.Fatal(err)
			}
			fresh = slices.Clone(fresh)
			c := ms[0]
			for round := range 2 {
				c.buf[30*pageSize] ^= 1 // a read-class page or a write-class one
				c.buf[41*pageSize] ^= 1
				c.sink ^= c.buf[1000*pageSize]
				if _, err := c.reset(class); err != nil {
					t.Fatal(err)
				}
				got, err := c.readPagemap()
				if err != nil {
					t.Fatal(err)
				}
				for i := range class {
					const state = pmPresent | pmFile
					g, f := binary.LittleEndian.Uint64(got[i*8:])&state, binary.LittleEndian.Uint64(fresh[i*8:])&state
					if g != f {
						t.Fatalf("round %d: page %d (class %d): entry %#x after reset, %#x in a new instance", round, i, class[i], g, f)
					}
				}
			}
			if !bytes.Equal(c.buf[:c.image.size], c.image.view) {
				t.Fatal("memory differs from the image after the resets")
			}
		})
	}
}

// TestResetAnyClassesPageState is TestResetAnyClassesFromCache's page
// state: under wrong classes from the cache, an instance reset after an
// op has every page in the state of a new instance (present, and a file
// page or a private copy), so the op after it cannot time the op before.
func TestResetAnyClassesPageState(t *testing.T) {
	dir, file, n := probedClassesFile(t)
	for _, tc := range []struct {
		name  string
		class func(i int) byte
	}{
		{"all cold", func(int) byte { return pageCold }},
		{"all read", func(int) byte { return pageRead }},
		{"page 6 cold, its neighbours write", func(i int) byte {
			if i == 5 || i == 7 {
				return pageWrite
			}
			return pageCold
		}},
		{"every other page write, page 6 read", everyOtherWritePage6Read},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := walkerRuntimeWithClasses(t, dir, file, n, tc.class)
			fresh, err := r.pool.Load().create()
			if err != nil {
				t.Fatal(err)
			}
			want := pageStates(t, fresh.mem)
			fresh.mod.Close(context.Background())
			ctx := context.Background()
			for i := range 3 {
				l, err := r.Lease(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if got := pageStates(t, l.inst.mem); !slices.Equal(got, want) {
					t.Fatalf("op %d: page states %x, a new instance's %x", i, got, want)
				}
				if _, err := l.Run(ctx, Call{Input: []byte("{}"), MaxCalls: 16, MaxLogBytes: 64}); err != nil {
					t.Fatal(err)
				}
				l.Return()
			}
		})
	}
}

// pageStates is each image page's state, one byte a page: present, and
// a file page (the image's own), as /proc/self/pagemap says.
func pageStates(t *testing.T, c *cowMemory) []byte {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	buf, err := c.readPagemap()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, len(buf)/8)
	for i := range out {
		e := binary.LittleEndian.Uint64(buf[i*8:])
		out[i] = byte(e >> 61) // present, swapped, file
	}
	return out
}

// TestAdviseHugePages: the template's build memory carries the kernel's
// huge-page advice (VmFlags "hg" in /proc/self/smaps), still reads as
// zeros and keeps what is written; a memory that was not advised has no
// such flag (so the check can fail).
func TestAdviseHugePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); err != nil {
		t.Skip("this kernel has no transparent huge pages (CONFIG_TRANSPARENT_HUGEPAGE): the advice is refused and ignored")
	}
	advised := func(c *cowMemory) bool { return hugePageAdvised(t, c.buf) }
	for _, tc := range []struct {
		name   string
		advise bool
	}{
		{"advised", true},
		{"not advised", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := newCowMemory(8 << 20)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Free()
			if tc.advise {
				c.adviseHugePages()
			}
			if got := advised(c); got != tc.advise {
				t.Fatalf("huge-page advice %v, want %v", got, tc.advise)
			}
			mem := c.Reallocate(8 << 20)
			if !bytes.Equal(mem[3<<20:3<<20+4096], make([]byte, 4096)) {
				t.Fatal("untouched memory is not zero")
			}
			mem[5<<20+7] = 42
			if mem[5<<20+7] != 42 || mem[5<<20+8] != 0 {
				t.Fatal("a write was not kept")
			}
		})
	}
}

// hugePageAdvised says whether the mapping that starts at b carries the
// huge-page advice (VmFlags "hg" in /proc/self/smaps).
func hugePageAdvised(t *testing.T, b []byte) bool {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	start := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	in := false
	for line := range strings.Lines(string(smaps)) {
		if strings.HasPrefix(line, start) {
			in = true
		} else if in && strings.HasPrefix(line, "VmFlags:") {
			return slices.Contains(strings.Fields(line)[1:], "hg")
		}
	}
	t.Fatalf("no mapping at %s in /proc/self/smaps", start)
	return false
}

// TestPooledMemoryNotAdvised: only the template's build memory asks for
// huge pages. A pooled instance, made from a built template or from one
// kept in the cache directory, maps the image without the advice, and so
// does the rest of its reservation.
func TestPooledMemoryNotAdvised(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); err != nil {
		t.Skip("this kernel has no transparent huge pages (CONFIG_TRANSPARENT_HUGEPAGE): the advice is refused and ignored")
	}
	dir := t.TempDir()
	for _, from := range []string{"warm-up", "cache"} {
		t.Run(from, func(t *testing.T) {
			r := walkerRuntimeKeyed(t, dir, "k")
			if got := r.TemplateFrom(); got != from {
				t.Fatalf("TemplateFrom() = %q, want %q", got, from)
			}
			l, err := r.Lease(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer l.Return()
			c := l.inst.mem
			if hugePageAdvised(t, c.buf) {
				t.Fatal("a pooled instance's image mapping carries the huge-page advice")
			}
			if rest := c.buf[c.image.size:]; len(rest) > 0 && hugePageAdvised(t, rest) {
				t.Fatal("the rest of a pooled instance's reservation carries the huge-page advice")
			}
		})
	}
}
