package sandbox

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildIDNote is the contents of a .note.go.buildid section holding id,
// as the Go linker writes it (little-endian).
func buildIDNote(namesz uint32, name string, descsz uint32, id string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, namesz)
	b = binary.LittleEndian.AppendUint32(b, descsz)
	b = binary.LittleEndian.AppendUint32(b, 4) // ELF_NOTE_GOBUILDID_TAG
	return append(append(b, name...), id...)
}

// TestGoBuildID: only an ID of the form the go command computes names a
// build. A placeholder (-buildid=redacted, as some build systems link
// with), an empty one, or a malformed note keeps no template, and none
// panics (a note cut inside its name once did).
func TestGoBuildID(t *testing.T) {
	const h = "afXG8prgC-nbNEx9fiao"
	id := h + "/QsDxSo2J-g0VQU4phwRn/5-1bZjHhcrWorc-I16od/j7xchGY2bGJ_U7zT_f9J"
	for _, tc := range []struct {
		name string
		note []byte
		want string
	}{
		{name: "go build", note: buildIDNote(4, "Go\x00\x00", uint32(len(id)), id), want: id},
		{name: "action and content", note: buildIDNote(4, "Go\x00\x00", 41, h+"/"+h), want: h + "/" + h},
		{name: "redacted", note: buildIDNote(4, "Go\x00\x00", 8, "redacted")},
		{name: "one hash", note: buildIDNote(4, "Go\x00\x00", 20, h)},
		{name: "a hash too short", note: buildIDNote(4, "Go\x00\x00", 40, h+"/"+h[1:])},
		{name: "not base64url", note: buildIDNote(4, "Go\x00\x00", 41, h+"/"+h[:19]+"+")},
		{name: "empty", note: buildIDNote(4, "Go\x00\x00", 0, "")},
		{name: "desc past the end", note: buildIDNote(4, "Go\x00\x00", 1000, id)},
		{name: "huge desc", note: buildIDNote(4, "Go\x00\x00", 1<<32-1, id)},
		{name: "other name", note: buildIDNote(4, "GNU\x00", uint32(len(id)), id)},
		{name: "other name size", note: buildIDNote(8, "Go\x00\x00", uint32(len(id)), id)},
		{name: "cut in the name", note: buildIDNote(4, "Go", 0, "")},
		{name: "header only", note: buildIDNote(4, "", 0, "")},
		{name: "nothing", note: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := goBuildID(binary.LittleEndian, tc.note); got != tc.want {
				t.Fatalf("goBuildID = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestHostBuildIDIsTheRunningBinary: a process whose executable was
// replaced by another build (an upgrade installed at its path) still
// keys its template by its own build, not the file now at its path;
// otherwise the new build would read back a template the old one built.
// The child renames a copy of itself, its build ID changed, over its
// own path, then reads hostBuildID.
func TestHostBuildIDIsTheRunningBinary(t *testing.T) {
	if !cowSupported {
		t.Skip("the template cache needs Linux")
	}
	if os.Getenv("PINNED_TEST_REPLACE_SELF") == "1" {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		other := filepath.Join(filepath.Dir(exe), "other")
		if err := copyWithOtherBuildID(exe, other); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(other, exe); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("\nfile=%s\nhost=%s\n", buildIDOf(exe), hostBuildID())
		return
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "sandbox.test")
	if err := copyFile(self, exe); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestHostBuildIDIsTheRunningBinary$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PINNED_TEST_REPLACE_SELF=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	want := hostBuildID()
	if want == "" {
		t.Fatal("control: this test binary has no build ID")
	}
	if got["file"] == "" || got["file"] == want {
		t.Fatalf("control: the file at the child's path has build ID %q, want another than %q\n%s", got["file"], want, out)
	}
	if got["host"] != want {
		t.Fatalf("hostBuildID() in a process whose file was replaced = %q, want its own %q", got["host"], want)
	}
}

// copyFile copies src to dst (mode 0700).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o700)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// copyWithOtherBuildID copies the executable src to dst with the first
// character of its Go build ID changed (a valid ID of another build).
func copyWithOtherBuildID(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return err
	}
	s := f.Section(".note.go.buildid")
	if s == nil {
		return fmt.Errorf("%s has no .note.go.buildid", src)
	}
	i := int(s.Offset) + 16 // past namesz, descsz, type and "Go\0\0"
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return os.WriteFile(dst, b, 0o700)
}
