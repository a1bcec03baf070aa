//go:build linux

package sandbox

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// resetImage builds an image of the executor template's shape (1664
// pages: 64 write-class, 800 read-class, the rest cold, interleaved as a
// Go heap's are), maps it into instances copies and primes them.
func resetImage(tb testing.TB, instances int) ([]*cowMemory, []byte) {
	tb.Helper()
	const pages = 1664
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
		switch {
		case i%26 == 0:
			class[i] = pageWrite
		case i%2 == 1:
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
		c.prime(class)
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
// (cpu-ns/op), on an image of the executor template's shape: "pagemap"
// is reading the page table alone (/proc/self/pagemap over the image),
// "heap" a whole reset after an op that wrote only write-class pages (as
// the executor's ops do), "stray" after an op that also wrote read-class
// and cold pages (each then dropped with madvise).
func BenchmarkReset(b *testing.B) {
	for _, w := range []struct {
		name  string
		pages []int // the pages the op writes; nil: read the pagemap only
	}{
		{"pagemap", nil},
		{"heap", []int{0, 26, 52, 78, 1612}},
		{"stray", []int{0, 1, 2, 3, 500, 501, 1201, 1663}},
	} {
		b.Run(w.name, func(b *testing.B) {
			ms, class := resetImage(b, 4)
			c := ms[0]
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
				if w.pages == nil {
					_, err = c.readPagemap()
				} else {
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
