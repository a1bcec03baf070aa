package sandbox

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// The template cache keeps the reset pool's template (its memory image,
// globals, page count and clock) in the cache directory, so a start with
// a filled cache skips instantiating a build instance, _initialize and
// the warm-up ops (docs/RATIONALE.md, "Why may the template come from
// the cache directory?").

// templateVersion names the format of a template file; bump it whenever
// the format or what a template holds changes.
const templateVersion = "1"

// templateMagic opens every template file.
const templateMagic = "pinned template v" + templateVersion + "\n"

// maxTemplateGlobals bounds the globals a template file may declare (the
// executor has a few dozen).
const maxTemplateGlobals = 1 << 16

// hostBuildID is the Go build ID of the running executable (its ELF note
// .note.go.buildid), "" when it cannot be read: another format than ELF,
// an executable linked with -buildid= or with an ID Go did not compute
// (goBuildID). The ID changes with every input of the link, so a
// template kept by one build of pinned is never read by another: the
// host functions the warm-up ops called, and their answers, are that
// build's. On Linux it is read from /proc/self/exe, the file this
// process runs even after another build was installed at its path.
var hostBuildID = sync.OnceValue(func() string {
	if id := buildIDOf("/proc/self/exe"); id != "" {
		return id
	}
	if runtime.GOOS == "linux" {
		return "" // not the running file: never another build's ID
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return buildIDOf(exe)
})

// buildIDOf is the Go build ID in the ELF executable at path (goBuildID),
// or "".
func buildIDOf(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil {
		return ""
	}
	b, err := s.Data()
	if err != nil {
		return ""
	}
	return goBuildID(f.ByteOrder, b)
}

// goBuildID reads the build ID from the contents of a .note.go.buildid
// section: namesz, descsz, type (each a uint32 in order), the name "Go"
// padded to 4 bytes, then the description, the ID. It returns "" unless
// the ID has the form the go command gives it: two or more hashes of
// 20 characters (base64url), separated by "/". A placeholder such as
// -buildid=redacted names no one build, and keeps no template.
func goBuildID(order binary.ByteOrder, b []byte) string {
	if len(b) < 16 {
		return ""
	}
	namesz, descsz := uint64(order.Uint32(b)), uint64(order.Uint32(b[4:]))
	if namesz != 4 || string(b[12:15]) != "Go\x00" {
		return ""
	}
	off := uint64(16)
	if descsz == 0 || off+descsz > uint64(len(b)) {
		return ""
	}
	id := string(b[off : off+descsz])
	parts := strings.Split(id, "/")
	if len(parts) < 2 {
		return ""
	}
	for _, p := range parts {
		if len(p) != 20 || strings.TrimLeft(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return ""
		}
	}
	return id
}

// templatePath is where the template built from this guest, under this
// memory limit, by this build of the host (hostBuildID), from these
// warm-up calls and key (what else decides how they run: the host passes
// its registry's digest) is kept in cacheDir. It is "" without a cache
// directory, a key or a build ID: the template is then built at every
// start.
func templatePath(cacheDir string, guestSum [sha256.Size]byte, maxBytes uint64, key string, warm []Call) string {
	build := hostBuildID()
	if cacheDir == "" || key == "" || build == "" {
		return ""
	}
	h := sha256.New()
	for _, f := range [][]byte{[]byte(templateMagic), guestSum[:], []byte(build), []byte(key)} {
		hashField(h, f)
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], maxBytes)
	h.Write(n[:])
	binary.LittleEndian.PutUint64(n[:], uint64(len(warm)))
	h.Write(n[:])
	hashInputs(h, warm)
	return filepath.Join(cacheDir, "pinned-template-v"+templateVersion+"-"+hex.EncodeToString(h.Sum(nil)))
}

// templateHeader is the fixed part of a template file after the magic:
// pages (uint32), clock in nanoseconds (int64), number of globals
// (uint32), all little-endian.
const templateHeader = 4 + 8 + 4

// writeTemplate keeps t at path: the magic, the header, each global
// (uint64), zeros to the next 4 KiB of the file (templatePad), the memory
// (pages × 64 KiB), and a CRC-32C (Castagnoli) of all but the zeros.
// Errors are ignored: the cache is an optimisation.
func writeTemplate(path string, t *template) {
	if path == "" || t.image == nil || len(t.image.view) != int(t.pages)*65536 {
		return
	}
	head := append([]byte(templateMagic), make([]byte, templateHeader)...)
	h := head[len(templateMagic):]
	binary.LittleEndian.PutUint32(h, t.pages)
	binary.LittleEndian.PutUint64(h[4:], uint64(t.clock))
	binary.LittleEndian.PutUint32(h[12:], uint32(len(t.globals)))
	for _, g := range t.globals {
		head = binary.LittleEndian.AppendUint64(head, g)
	}
	tail := binary.LittleEndian.AppendUint32(nil, crc32.Update(crc32.Checksum(head, castagnoli), castagnoli, t.image.view))
	if writeAtomicWith(path, func(f *os.File) error {
		return writeSparse(f, head, templatePad(len(head)), t.image.view, tail)
	}) {
		pruneTemplates(filepath.Dir(path), keepTemplates, time.Now())
	}
}

// templatePad is the zeros after a template's header and globals of n
// bytes that start its memory on a 4 KiB boundary of the file, so that
// its pages are the file system's blocks.
func templatePad(n int) int { return (pageSize - n%pageSize) % pageSize }

// writeSparse writes head, pad zeros, mem and tail one after the other to
// f, and skips the zeros and each 4 KiB page of mem that is all zeros:
// where the file system keeps sparse files, such a page is a hole, stored
// as nothing and read as zeros. Much of a guest's memory is zeros.
func writeSparse(f *os.File, head []byte, pad int, mem, tail []byte) error {
	if _, err := f.WriteAt(head, 0); err != nil {
		return err
	}
	base := int64(len(head) + pad)
	for page := 0; page < len(mem); page += pageSize {
		end := min(page+pageSize, len(mem))
		if allZero(mem[page:end]) {
			continue
		}
		if _, err := f.WriteAt(mem[page:end], base+int64(page)); err != nil {
			return err
		}
	}
	_, err := f.WriteAt(tail, base+int64(len(mem)))
	return err
}

// keepTemplates is how many template files a cache directory keeps, the
// most recently used: one is kept per build of pinned, guest, memory
// limit and registry that started there (a sidecar's, and each service's
// of `pinned op`), and each upgrade adds one.
const keepTemplates = 8

// staleTemp is the age past which a temporary file in the cache
// directory is taken for one a crashed writer left.
const staleTemp = time.Hour

// pruneTemplates removes from dir all template files but the keep most
// recently written or read (readTemplate touches what it reads), and
// temporary files older than staleTemp at now.
// Errors are ignored: a file left costs disk, one removed costs the
// start that wanted it a warm-up.
func pruneTemplates(dir string, keep int, now time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type kept struct {
		name string
		mod  time.Time
	}
	var templates []kept
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		switch {
		case strings.HasPrefix(e.Name(), "pinned-template-v"):
			templates = append(templates, kept{e.Name(), info.ModTime()})
		case strings.HasPrefix(e.Name(), ".tmp-") && now.Sub(info.ModTime()) > staleTemp:
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	slices.SortFunc(templates, func(a, b kept) int { return b.mod.Compare(a.mod) })
	for _, t := range templates[min(keep, len(templates)):] {
		os.Remove(filepath.Join(dir, t.name))
	}
}

// readTemplate reads a template writeTemplate kept at path, for a guest
// with nGlobals mutable globals and at most maxPages pages. Anything
// else is an error and the caller builds the template: no file, another
// format, a size that does not add up, a count out of range, or a CRC
// that does not match (a damaged or cut file). The memory goes into a
// new sealed image, as a built template's does.
func readTemplate(path string, nGlobals int, maxPages uint32) (*template, error) {
	if path == "" {
		return nil, errors.New("no template cache")
	}
	f, err := openCacheFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, len(templateMagic)+templateHeader)
	if _, err := io.ReadFull(f, head); err != nil {
		return nil, fmt.Errorf("template header: %w", err)
	}
	if string(head[:len(templateMagic)]) != templateMagic {
		return nil, errors.New("not a template file of this version")
	}
	h := head[len(templateMagic):]
	pages, clock, ng := binary.LittleEndian.Uint32(h), int64(binary.LittleEndian.Uint64(h[4:])), binary.LittleEndian.Uint32(h[12:])
	if pages == 0 || pages > maxPages || ng > maxTemplateGlobals || int(ng) != nGlobals || clock < 0 {
		return nil, fmt.Errorf("template of %d pages and %d globals, clock %d: out of range", pages, ng, clock)
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := int64(pages) * 65536
	pad := templatePad(len(head) + 8*int(ng))
	if want := int64(len(head)) + 8*int64(ng) + int64(pad) + size + 4; st.Size() != want {
		return nil, fmt.Errorf("template file of %d bytes, want %d", st.Size(), want)
	}
	gb := make([]byte, 8*int(ng)+pad)
	if _, err := io.ReadFull(f, gb); err != nil {
		return nil, err
	}
	if !allZero(gb[8*ng:]) {
		return nil, errors.New("template padding is not zeros")
	}
	gb = gb[:8*ng]
	mem, release, err := scratchMemory(int(size))
	if err != nil {
		return nil, err
	}
	defer release()
	if _, err := io.ReadFull(f, mem); err != nil {
		return nil, err
	}
	var tail [4]byte
	if _, err := io.ReadFull(f, tail[:]); err != nil {
		return nil, err
	}
	sum := crc32.Update(crc32.Update(crc32.Checksum(head, castagnoli), castagnoli, gb), castagnoli, mem)
	if sum != binary.LittleEndian.Uint32(tail[:]) {
		return nil, errors.New("template damaged (CRC-32C)")
	}
	t := &template{pages: pages, clock: time.Duration(clock)}
	for i := range int(ng) {
		t.globals = append(t.globals, binary.LittleEndian.Uint64(gb[8*i:]))
	}
	if t.image, err = newMemImage(mem); err != nil {
		return nil, err
	}
	// Used now: pruneTemplates keeps the templates used last, so one
	// read at every start outlives those written since.
	now := time.Now()
	_ = os.Chtimes(path, now, now)
	return t, nil
}

// allZero reports whether b holds only zero bytes.
func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}
