package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrepareCacheDir: a compilation cache others could write to is
// refused (hostile input: a 0777 directory, a world-writable parent), with
// the fix in the message; a fresh one is created 0700.
func TestPrepareCacheDir(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, base string) string // returns the cache dir
		want  string                                 // fragment of the error; "" = accepted
	}{
		{name: "fresh directory is created 0700", setup: func(t *testing.T, base string) string {
			return filepath.Join(base, "a", "cache")
		}},
		{name: "world-writable directory", setup: func(t *testing.T, base string) string {
			d := filepath.Join(base, "open")
			mkdirMode(t, d, 0o777)
			return d
		}, want: "has mode 0777: group or others can write the machine code it holds; run `chmod 700 "},
		{name: "group-writable directory", setup: func(t *testing.T, base string) string {
			d := filepath.Join(base, "group")
			mkdirMode(t, d, 0o770)
			return d
		}, want: "has mode 0770"},
		{name: "world-writable parent without sticky bit", setup: func(t *testing.T, base string) string {
			p := filepath.Join(base, "shared")
			mkdirMode(t, p, 0o777)
			return filepath.Join(p, "cache")
		}, want: "has mode 0777: anyone can replace the directory; run `chmod o-w "},
		{name: "sticky world-writable parent like /tmp", setup: func(t *testing.T, base string) string {
			p := filepath.Join(base, "tmp")
			mkdirMode(t, p, 0o777|os.ModeSticky)
			return filepath.Join(p, "cache")
		}},
		{name: "a file, not a directory", setup: func(t *testing.T, base string) string {
			f := filepath.Join(base, "file")
			if err := os.WriteFile(f, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return f
		}, want: "cannot be created"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			if err := os.Chmod(base, 0o700); err != nil {
				t.Fatal(err)
			}
			dir := tt.setup(t, base)
			err := prepareCacheDir(dir)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				st, serr := os.Stat(dir)
				if serr != nil || st.Mode().Perm() != 0o700 {
					t.Fatalf("mode %v, %v; want 0700", st.Mode(), serr)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrCacheDir) {
				t.Fatalf("error %v; want ErrCacheDir with %q", err, tt.want)
			}
		})
	}
}

func mkdirMode(t *testing.T, d string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, mode); err != nil {
		t.Fatal(err)
	}
}

// TestReadCacheFile: a cache file is read whole, into one buffer of its
// size (a buffer grown as it reads cost a 2.8 MB guest ten copies and
// their page faults at every start).
func TestReadCacheFile(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, 4095, 4096, 3 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			want := make([]byte, size)
			for i := range want {
				want[i] = byte(i * 7)
			}
			path := filepath.Join(dir, fmt.Sprint(size))
			if err := os.WriteFile(path, want, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := readCacheFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("read %d bytes, not the file's %d", len(got), size)
			}
			if cap(got) != size+1 {
				t.Fatalf("read into a buffer of %d bytes, want one of the file's size and a byte (%d)", cap(got), size+1)
			}
		})
	}
}
