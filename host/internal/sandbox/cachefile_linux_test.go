//go:build linux

package sandbox

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCacheFileNotRegular: a FIFO, a directory or a device at the path
// of a template, page-classes or plan file is refused, and the start
// builds what the file would have held: it neither waits for a writer
// nor reads a device. Opening a FIFO to read blocks until someone opens
// it to write; without a bound the start would never end.
func TestCacheFileNotRegular(t *testing.T) {
	const notRegularBound = 2 * time.Minute
	if !cowSupported {
		t.Skip("the reset pool needs Linux (copy-on-write memory)")
	}
	for _, tc := range []struct {
		name  string
		glob  string // the cache file replaced
		place func(path string) error
	}{
		{"template FIFO", "pinned-template-v*", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"classes FIFO", "pinned-classes-v*", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"plan FIFO", "pinned-plan-v*.json", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"plan module FIFO", "pinned-plan-v*.wasm", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"template directory", "pinned-template-v*", func(p string) error { return os.Mkdir(p, 0o700) }},
		{"template a device", "pinned-template-v*", func(p string) error { return os.Symlink("/dev/zero", p) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			want := walkerRuntimeKeyed(t, dir, "k")
			files, err := filepath.Glob(filepath.Join(dir, tc.glob))
			if err != nil || len(files) != 1 {
				t.Fatalf("cache files %s: %v (%v), want one", tc.glob, files, err)
			}
			if err := os.Remove(files[0]); err != nil {
				t.Fatal(err)
			}
			if err := tc.place(files[0]); err != nil {
				t.Fatal(err)
			}
			done := make(chan *Runtime, 1)
			go func() { done <- walkerRuntimeKeyed(t, dir, "k") }()
			var r *Runtime
			select {
			case r = <-done:
			case <-time.After(notRegularBound):
				// Open the FIFO to write, so the start's open returns and
				// its goroutine ends within the test.
				for {
					if f, err := os.OpenFile(files[0], os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
						f.Close()
					}
					select {
					case <-done:
						t.Fatalf("the start waited on the %s until the test opened it to write", tc.name)
					case <-time.After(100 * time.Millisecond):
					}
				}
			}
			if tc.glob == "pinned-template-v*" {
				if got := r.TemplateFrom(); got != "warm-up" {
					t.Fatalf("TemplateFrom() = %q, want warm-up", got)
				}
			}
			assertSameMemoryAndGlobals(t, r, want, "the template after the refusal")
		})
	}
}

// TestTemplateFileSparse: the pages of a template that are all zeros are
// holes in its file, where the file system keeps holes (checked first
// with a file of its own), and read back as zeros (TestTemplateCached).
func TestTemplateFileSparse(t *testing.T) {
	if !cowSupported {
		t.Skip("the reset pool needs Linux (copy-on-write memory)")
	}
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe")
	f, err := os.Create(probe)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt([]byte{1}, 1<<20)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	blocks := func(p string) (alloc, size int64) {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks * 512, st.Size
	}
	var st syscall.Stat_t
	if err := syscall.Stat(probe, &st); err != nil {
		t.Fatal(err)
	}
	if st.Blksize > 4096 {
		t.Skipf("the file system of %s allocates %d bytes at a time: a 4 KiB page is no hole there", dir, st.Blksize)
	}
	if alloc, _ := blocks(probe); alloc >= 1<<20 {
		t.Skipf("the file system of %s keeps no holes (a 1 MiB hole took %d bytes)", dir, alloc)
	}
	walkerRuntimeKeyed(t, dir, "k")
	files := templateFiles(t, dir)
	if len(files) != 1 {
		t.Fatalf("template files %v, want one", files)
	}
	// The walker's template is one 64 KiB page holding five written 4 KiB
	// pages.
	if alloc, size := blocks(files[0]); size < 65536 || alloc > size/2 {
		t.Fatalf("template file of %d bytes takes %d on disk: its zero pages were written", size, alloc)
	}
}

// imageFDs counts this process's open memory images (memfds named
// pinned-guest-image).
func imageFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.Contains(target, "pinned-guest-image") {
			n++
		}
	}
	return n
}

// TestFailedPoolClosesTemplate: a pool whose build fails after its
// template exists (here a kept template, then a warm-up op that traps in
// the probe) leaves no image open. With the pool built in the
// background the process keeps serving after such a failure, so a
// leaked image would stay for its life.
func TestFailedPoolClosesTemplate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	wasm := markGuest(0x00) // run: unreachable
	warm := []Call{{Input: []byte("{}")}}
	newRuntime := func() *Runtime {
		r, err := New(ctx, Config{Guest: wasm, GuestSum: sha256.Sum256(wasm), MemoryLimitPages: 16, Reset: true, PoolSize: 1, CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := newRuntime()
	defer r.Close(ctx)
	// A template as _initialize leaves this guest: one page of zeros and
	// its globals at zero, kept where the next start looks.
	img, err := newMemImage(make([]byte, 65536))
	if err != nil {
		t.Fatal(err)
	}
	path := templatePath(dir, sha256.Sum256(wasm), r.maxBytes, "k", warm)
	writeTemplate(path, &template{image: img, pages: 1, globals: make([]uint64, len(r.plan.globals))})
	img.close()
	kept, err := readTemplate(path, len(r.plan.globals), 16)
	if err != nil {
		t.Fatalf("control: the kept template does not read back: %v", err)
	}
	kept.image.close()
	before := imageFDs(t)
	err = r.Start(ctx, "k", func() ([]Call, error) { return warm, nil })
	if err == nil {
		t.Fatal("the pool was built: the warm-up op did not trap")
	}
	if got := imageFDs(t); got != before {
		t.Fatalf("%d memory images open after the failed build (%v), %d before", got, err, before)
	}
}

// TestPoolSharesFreshSlots: fresh runs and the pool draw on one set of
// Config.PoolSize slots, so while the pool takes over from fresh
// instances no more guests run than the bound: with the one slot held by
// a fresh run, the pool gives out no instance until it is released.
func TestPoolSharesFreshSlots(t *testing.T) {
	ctx := context.Background()
	wasm := counterGuest()
	r, err := New(ctx, Config{Guest: wasm, GuestSum: sha256.Sum256(wasm), MemoryLimitPages: 16, Reset: true, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	r.fresh <- struct{}{} // a fresh run holds the only slot
	done := make(chan error, 1)
	r.StartBackground("", func() ([]Call, error) { return []Call{{Input: []byte("{}")}}, nil }, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if l, err := r.Lease(short); err == nil {
		l.Return()
		t.Fatal("the pool gave out an instance while a fresh run held the only slot")
	}
	<-r.fresh // the fresh run ends
	l, err := r.Lease(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.Return()
}
