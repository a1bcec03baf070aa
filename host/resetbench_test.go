package host

import (
	"testing"

	"golang.org/x/sys/unix"
)

func BenchmarkResetStrategies(b *testing.B) {
	const size = 88 * 65536
	img, err := newMemImage(make([]byte, size))
	if err != nil {
		b.Fatal(err)
	}
	defer img.close()
	for _, dirty := range []int{10, 40} {
		for _, mode := range []string{"pagemap", "dontneed"} {
			b.Run(mode+"/"+string(rune('0'+dirty/10))+"0pages", func(b *testing.B) {
				c, err := newCowMemory(32 << 20)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Free()
				if err := c.adopt(img); err != nil {
					b.Fatal(err)
				}
				for i := 0; i < b.N; i++ {
					// an op: reads 100 pages, writes `dirty` of them
					s := 0
					for p := 0; p < 100; p++ {
						s += int(c.buf[p*37%1408*4096])
					}
					for p := 0; p < dirty; p++ {
						c.buf[p*53%1408*4096+8]++
					}
					if mode == "pagemap" {
						_, _ = c.reset()
					} else {
						unix.Madvise(c.buf[:size], unix.MADV_DONTNEED)
					}
					_ = s
				}
			})
		}
	}
}
