//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
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
			gm, gg, _ := r.Template()
			wm, wg, _ := want.Template()
			if !bytes.Equal(gm, wm) || !slices.Equal(gg, wg) {
				t.Fatal("the template after the refusal differs from the first start's")
			}
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
