//go:build linux

package sandbox

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// imageShape is the shape of a resetImage: pages in all, and every
// writeEvery-th page write-class; read-class pages come in alternate
// 16-page windows, the rest are cold, interleaved as a Go heap's are.
type imageShape struct{ pages, writeEvery int }

var (
	// testShape is the reset tests' image (their page numbers are its):
	// 1664 pages, 64 write-class, 800 read-class.
	testShape = imageShape{1664, 26}
	// templateShape is the executor template's shape, which
	// BenchmarkReset times: 1152 pages, 29 write-class, 561 read-class
	// (the template: 28 write, 516 read of 1152, in pool_ready's
	// page_classes).
	templateShape = imageShape{1152, 41}
)

// resetImage builds an image of testShape (resetImageOf).
func resetImage(tb testing.TB, instances int, pagemap bool) ([]*cowMemory, []byte) {
	tb.Helper()
	return resetImageOf(tb, testShape, instances, pagemap)
}

// resetImageOf builds an image of shape, maps it into instances copies
// and primes them: with write tracking where the kernel has it, or
// (pagemap true) in the state the pagemap reset keeps.
func resetImageOf(tb testing.TB, shape imageShape, instances int, pagemap bool) ([]*cowMemory, []byte) {
	tb.Helper()
	pages := shape.pages
	mem := make([]byte, pages*pageSize)
	for i := range pages {
		mem[i*pageSize] = byte(i) | 1
	}
	img, err := newMemImage(mem)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(img.close)
	class := make([]byte, pages)
	for i := range class {
		// A read fault maps the aligned 16-page window around the page
		// (fault-around), so read-class pages come in whole windows.
		switch {
		case i%shape.writeEvery == 0:
			class[i] = pageWrite
		case i/16%2 == 1:
			class[i] = pageRead
		}
	}
	var ms []*cowMemory
	for range instances {
		c, err := newCowMemory(32 << 20)
		if err != nil {
			tb.Fatal(err)
		}
		if err := c.adopt(img); err != nil {
			tb.Fatal(err)
		}
		if pagemap {
			if err := c.primeLocked(class, -1); err != nil {
				tb.Fatal(err)
			}
		} else {
			if err := c.prime(class); err != nil {
				tb.Fatal(err)
			}
		}
		tb.Cleanup(c.Free)
		ms = append(ms, c)
	}
	return ms, class
}

// threadCPU is the calling thread's CPU time in nanoseconds: on a shared
// machine it counts the reset's own work, not the time other processes
// held the core.
func threadCPU() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return ts.Nano()
}

// BenchmarkReset is where a reset's time goes, in the thread's CPU time
// (cpu-ns/op), on an image of the executor template's shape (templateShape). "heap" is a
// whole reset after an op that wrote only write-class pages (as the
// executor's ops do), "stray" after an op that also wrote read-class and
// cold pages (each then dropped with madvise). The "-pagemap" variants
// find the written pages by reading /proc/self/pagemap (the fallback
// without write tracking); "pagemap" and "scan" time finding them alone,
// each way.
func BenchmarkReset(b *testing.B) {
	heap := []int{0, 41, 82, 123, 1148}
	stray := []int{0, 1, 2, 3, 500, 501, 1101, 1151}
	for _, w := range []struct {
		name    string
		pages   []int // the pages the op writes; nil: find the written pages only
		pagemap bool
	}{
		{"pagemap", nil, true},
		{"scan", nil, false},
		{"heap", heap, false},
		{"heap-pagemap", heap, true},
		{"stray", stray, false},
		{"stray-pagemap", stray, true},
	} {
		b.Run(w.name, func(b *testing.B) {
			ms, class := resetImageOf(b, templateShape, 4, w.pagemap)
			c := ms[0]
			if !w.pagemap && !c.wp {
				b.Skip("no write tracking on this kernel: ", c.wpErr())
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var cpu int64
			pages := 0
			for b.Loop() {
				for _, i := range w.pages {
					c.buf[i*pageSize+7]++
				}
				t := threadCPU()
				var n int
				var err error
				switch {
				case w.pages == nil && w.pagemap:
					_, err = c.readPagemap()
				case w.pages == nil:
					pm, _ := pagemap()
					c.written, _, err = scanChanged(int(pm.Fd()), c.buf[:c.image.size], c.vec, c.written[:0], nil)
				default:
					n, err = c.reset(class)
				}
				cpu += threadCPU() - t
				if err != nil {
					b.Fatal(err)
				}
				pages += n
			}
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
			if w.pages != nil {
				b.ReportMetric(float64(pages)/float64(b.N), "pages/reset")
			}
		})
	}
}

// BenchmarkPageFault is what mapping a fresh page costs on this machine,
// per 4 KiB page (ns/page): by a write fault ("fault"), and by the kernel
// in one madvise(MADV_POPULATE_WRITE) over 256 pages ("populate"). A
// virtual machine can make the fault far dearer than the populating; the
// reset and its priming map pages the second way (docs/RATIONALE.md).
func BenchmarkPageFault(b *testing.B) {
	const pages = 256
	for _, populate := range []bool{false, true} {
		name := "fault"
		if populate {
			name = "populate"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				m, err := unix.Mmap(-1, 0, pages*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if populate {
					if err := unix.Madvise(m, unix.MADV_POPULATE_WRITE); err != nil {
						b.Fatal(err)
					}
				} else {
					for i := 0; i < pages; i++ {
						m[i*pageSize] = 1
					}
				}
				b.StopTimer()
				if err := unix.Munmap(m); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*pages), "ns/page")
		})
	}
}
