package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHostBuildID: the test binary, like pinned, is linked with a Go
// build ID; without one the template cache would be off unnoticed.
func TestHostBuildID(t *testing.T) {
	if !cowSupported {
		t.Skip("the reset pool, and so the template cache, needs Linux")
	}
	if id := hostBuildID(); len(id) < 20 || !bytes.ContainsRune([]byte(id), '/') {
		t.Fatalf("hostBuildID() = %q, want a Go build ID (actionID/contentID)", id)
	}
}

// templateFiles lists the template files in dir.
func templateFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "pinned-template-v*"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// assertSameTemplate fails unless r and want hold the same template:
// memory, globals, pages and clock.
func assertSameTemplate(t *testing.T, r, want *Runtime) {
	t.Helper()
	assertSameMemoryAndGlobals(t, r, want, "the template")
	if r.pool.Load().tmpl.pages != want.pool.Load().tmpl.pages || r.pool.Load().tmpl.clock != want.pool.Load().tmpl.clock {
		t.Fatalf("template of %d pages at clock %v, want %d at %v", r.pool.Load().tmpl.pages, r.pool.Load().tmpl.clock, want.pool.Load().tmpl.pages, want.pool.Load().tmpl.clock)
	}
}

// assertSameMemoryAndGlobals fails unless r's template holds want's
// memory and globals (a template built again differs in its clock only).
func assertSameMemoryAndGlobals(t *testing.T, r, want *Runtime, what string) {
	t.Helper()
	gm, gg, err := r.Template()
	if err != nil {
		t.Fatal(err)
	}
	wm, wg, err := want.Template()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gm, wm) || !slices.Equal(gg, wg) {
		t.Fatalf("%s differs from the first start's: memory equal %v, globals %v, want %v", what, bytes.Equal(gm, wm), gg, wg)
	}
}

// TestTemplateCached: a start with a cache directory and a key keeps its
// template; the next start with the same key reads it back, the same
// memory, globals, size and clock, and its ops start from it. Another key
// builds and keeps another; no key keeps none.
func TestTemplateCached(t *testing.T) {
	if !cowSupported {
		t.Skip("the reset pool needs Linux (copy-on-write memory)")
	}
	dir := t.TempDir()
	built := walkerRuntimeKeyed(t, dir, "registry-1")
	if got := built.TemplateFrom(); got != "warm-up" {
		t.Fatalf("first start: TemplateFrom() = %q, want warm-up", got)
	}
	if files := templateFiles(t, dir); len(files) != 1 {
		t.Fatalf("template files %v, want one", files)
	}
	_, tglobals, _ := built.Template()
	if tglobals[0] != 5 {
		t.Fatalf("control: the walker's template global is %d, want 5 (five warm-up runs)", tglobals[0])
	}

	cached := walkerRuntimeKeyed(t, dir, "registry-1")
	if got := cached.TemplateFrom(); got != "cache" {
		t.Fatalf("second start: TemplateFrom() = %q, want cache", got)
	}
	assertSameTemplate(t, cached, built)
	runWalkerOps(t, cached, 3, "the kept template", func(i int, l *Lease) {
		if g := l.Globals()[0]; g != 6 {
			t.Fatalf("op %d: global %d, want 6: the op did not start from the kept template", i, g)
		}
		if m := l.Memory(); m[6*4096] != 6 || m[5*4096] != 5 || m[7*4096] != 0 {
			t.Fatalf("op %d: pages 5, 6, 7 hold %d, %d, %d, want 5, 6, 0", i, m[5*4096], m[6*4096], m[7*4096])
		}
	})

	if got := walkerRuntimeKeyed(t, dir, "registry-2").TemplateFrom(); got != "warm-up" {
		t.Fatalf("another key: TemplateFrom() = %q, want warm-up", got)
	}
	if files := templateFiles(t, dir); len(files) != 2 {
		t.Fatalf("template files %v, want one per key", files)
	}
	if got := walkerRuntimeKeyed(t, dir, "").TemplateFrom(); got != "warm-up" {
		t.Fatalf("no key: TemplateFrom() = %q, want warm-up", got)
	}
	if got := walkerRuntimeKeyed(t, "", "registry-1").TemplateFrom(); got != "warm-up" {
		t.Fatalf("no cache directory: TemplateFrom() = %q, want warm-up", got)
	}
	if files := templateFiles(t, dir); len(files) != 2 {
		t.Fatalf("template files %v, want none kept without a key", files)
	}
}

// resealTemplate returns a template file's body b with its CRC-32C
// recomputed, so only the change made to it is wrong.
func resealTemplate(b []byte) []byte {
	body := b[:len(b)-4]
	n := len(templateMagic) + templateHeader + 8*int(binary.LittleEndian.Uint32(body[len(templateMagic)+12:]))
	sum := crc32.Checksum(body[:min(n, len(body))], castagnoli)
	if pad := templatePad(n); n+pad <= len(body) {
		sum = crc32.Update(sum, castagnoli, body[n+pad:]) // the padding is not summed
	}
	return binary.LittleEndian.AppendUint32(append([]byte(nil), body...), sum)
}

// TestTemplateCacheRefused is the damaged or hostile template file: a
// flipped byte, a cut or empty file, another format, and, each with a
// valid CRC, a global too many, more pages than the memory limit, and a
// negative clock. Each is refused: the start builds the template from
// the warm-up, as with no file, and keeps it again, valid.
func TestTemplateCacheRefused(t *testing.T) {
	if !cowSupported {
		t.Skip("the reset pool needs Linux (copy-on-write memory)")
	}
	dir := t.TempDir()
	want := walkerRuntimeKeyed(t, dir, "k")
	files := templateFiles(t, dir)
	if len(files) != 1 {
		t.Fatalf("template files %v, want one", files)
	}
	good, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	head := len(templateMagic)
	if !bytes.Equal(resealTemplate(good), good) {
		t.Fatal("control: resealing the kept file changed it, so the cases below would be refused for their CRC")
	}
	for _, tc := range []struct {
		name string
		file []byte
		why  string // what readTemplate's refusal says
	}{
		{"memory byte flipped", func() []byte {
			b := bytes.Clone(good)
			b[len(b)-4-4096*6] ^= 1
			return b
		}(), "CRC-32C"},
		{"crc flipped", func() []byte {
			b := bytes.Clone(good)
			b[len(b)-1] ^= 0x80
			return b
		}(), "CRC-32C"},
		{"cut", good[:len(good)-4097], "bytes, want"},
		{"empty", nil, "EOF"},
		{"other version", resealTemplate(append([]byte("pinned template v9\n"), good[head:]...)), "not a template file"},
		{"a global too many", func() []byte {
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint32(b[head+12:], binary.LittleEndian.Uint32(b[head+12:])+1)
			return resealTemplate(b)
		}(), "out of range"},
		{"pages past the limit", func() []byte {
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint32(b[head:], 17) // the walker's limit is 16
			return resealTemplate(b)
		}(), "out of range"},
		{"padding not zeros", func() []byte {
			b := bytes.Clone(good)
			b[head+templateHeader+8*int(binary.LittleEndian.Uint32(b[head+12:]))] = 1
			return resealTemplate(b)
		}(), "padding"},
		{"negative clock", func() []byte {
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint64(b[head+4:], 1<<63)
			return resealTemplate(b)
		}(), "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(files[0], tc.file, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := readTemplate(files[0], len(want.pool.Load().names), 16); err == nil || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("readTemplate: %v, want it refused with %q", err, tc.why)
			}
			r := walkerRuntimeKeyed(t, dir, "k")
			if got := r.TemplateFrom(); got != "warm-up" {
				t.Fatalf("TemplateFrom() = %q, want warm-up: the file was not refused", got)
			}
			assertSameMemoryAndGlobals(t, r, want, "the template built after the refusal")
			if got := walkerRuntimeKeyed(t, dir, "k").TemplateFrom(); got != "cache" {
				t.Fatalf("after the refusal, the next start: TemplateFrom() = %q, want cache (the built template kept again)", got)
			}
		})
	}
}

// FuzzReadTemplate: readTemplate refuses or accepts any file without
// panicking, and a template it accepts is written back byte for byte
// (parse, then encode).
func FuzzReadTemplate(f *testing.F) {
	if !cowSupported {
		f.Skip("templates need Linux (a sealed memfd image)")
	}
	valid := func(pages uint32, clock int64, globals []uint64, fill byte) []byte {
		b := append([]byte(templateMagic), make([]byte, templateHeader)...)
		binary.LittleEndian.PutUint32(b[len(templateMagic):], pages)
		binary.LittleEndian.PutUint64(b[len(templateMagic)+4:], uint64(clock))
		binary.LittleEndian.PutUint32(b[len(templateMagic)+12:], uint32(len(globals)))
		for _, g := range globals {
			b = binary.LittleEndian.AppendUint64(b, g)
		}
		mem := make([]byte, int(pages)*65536)
		mem[100] = fill
		sum := crc32.Update(crc32.Checksum(b, castagnoli), castagnoli, mem)
		b = append(append(b, make([]byte, templatePad(len(b)))...), mem...)
		return binary.LittleEndian.AppendUint32(b, sum)
	}
	f.Add(valid(1, 12345, []uint64{7, 1 << 40}, 9))
	f.Add(valid(2, 0, nil, 0))
	f.Add([]byte(templateMagic))
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "in")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		ng := 0
		if len(b) >= len(templateMagic)+templateHeader {
			ng = int(binary.LittleEndian.Uint32(b[len(templateMagic)+12:]))
		}
		tm, err := readTemplate(path, ng, 4)
		if err != nil {
			return
		}
		defer tm.image.close()
		out := filepath.Join(dir, "out")
		writeTemplate(out, tm)
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, b) {
			t.Fatalf("an accepted template of %d bytes is written back as %d other bytes", len(b), len(got))
		}
	})
}

// TestStartBackground: with the pool built in the background, runs
// before it is built get fresh instances (no reset counted) and succeed;
// done reports the build once; later runs use the pool, whose instances
// start from the template. Close in the middle of a build stops it and
// returns.
func TestStartBackground(t *testing.T) {
	if !cowSupported {
		t.Skip("the reset pool needs Linux (copy-on-write memory)")
	}
	ctx := context.Background()
	newRuntime := func(t *testing.T) *Runtime {
		wasm := pageWalkerGuest()
		r, err := New(ctx, Config{Guest: wasm, GuestSum: sha256.Sum256(wasm), MemoryLimitPages: 16, Reset: true, PoolSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	call := Call{Input: []byte("{}"), MaxCalls: 16, MaxLogBytes: 64}

	t.Run("runs before and after", func(t *testing.T) {
		r := newRuntime(t)
		defer r.Close(ctx)
		release := make(chan struct{})
		done := make(chan error, 2)
		r.StartBackground("", func() ([]Call, error) {
			<-release
			return slices.Repeat([]Call{{Input: []byte("{}")}}, 5), nil
		}, func(err error) { done <- err })
		for i := range 3 {
			if _, err := r.Run(ctx, call); err != nil {
				t.Fatalf("run %d before the pool: %v", i, err)
			}
		}
		if r.Pooled() || r.Stats().Resets != 0 {
			t.Fatalf("before the pool is built: Pooled %v, %d resets", r.Pooled(), r.Stats().Resets)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !r.Pooled() || r.TemplateFrom() != "warm-up" {
			t.Fatalf("after done: Pooled %v, template from %q", r.Pooled(), r.TemplateFrom())
		}
		if _, err := r.Run(ctx, call); err != nil {
			t.Fatal(err)
		}
		l, err := r.Lease(ctx) // waits for the run's instance to be reset
		if err != nil {
			t.Fatal(err)
		}
		if g := l.Globals()[0]; g != 5 {
			t.Fatalf("a pooled instance holds global %d, want the template's 5", g)
		}
		l.Return()
		if got := r.Stats().Resets; got < 1 {
			t.Fatalf("%d resets after a pooled run, want at least 1", got)
		}
		select {
		case err := <-done:
			t.Fatalf("done called twice (%v)", err)
		default:
		}
	})

	t.Run("close while building", func(t *testing.T) {
		r := newRuntime(t)
		done := make(chan error, 1)
		r.StartBackground("", func() ([]Call, error) {
			return slices.Repeat([]Call{{Input: []byte("{}")}}, 3), nil
		}, func(err error) { done <- err })
		if err := r.Close(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done: // the build ended (built or stopped) before Close returned
		default:
			t.Fatal("Close returned before the build ended")
		}
	})
}

// TestTemplatesPruned: writing a template leaves the keepTemplates most
// recently written template files and no temporary file older than
// staleTemp; other cache files, and a temporary file a writer may still
// be writing, stay.
func TestTemplatesPruned(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	touch := func(name string, age time.Duration) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range keepTemplates + 3 {
		touch(fmt.Sprintf("pinned-template-v1-%02d", i), time.Duration(i)*time.Hour)
	}
	touch("pinned-classes-v1-old", 100*time.Hour)
	touch("pinned-plan-v6-old.wasm", 100*time.Hour)
	touch(".tmp-crashed", 2*staleTemp)
	touch(".tmp-writing", time.Second)
	if err := os.Mkdir(filepath.Join(dir, "wazero-v1"), 0o700); err != nil {
		t.Fatal(err)
	}
	pruneTemplates(dir, keepTemplates, now)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	want := []string{".tmp-writing", "pinned-classes-v1-old", "pinned-plan-v6-old.wasm"}
	for i := range keepTemplates {
		want = append(want, fmt.Sprintf("pinned-template-v1-%02d", i))
	}
	want = append(want, "wazero-v1")
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}
}

// TestReadTemplateTouches: a template read back counts as used now, so
// pruning (by time of last use) keeps the one every start reads over
// templates written since.
func TestReadTemplateTouches(t *testing.T) {
	if !cowSupported {
		t.Skip("the reset pool needs Linux (copy-on-write memory)")
	}
	dir := t.TempDir()
	walkerRuntimeKeyed(t, dir, "k")
	files := templateFiles(t, dir)
	if len(files) != 1 {
		t.Fatalf("template files %v, want one", files)
	}
	old := time.Now().Add(-10 * time.Hour)
	if err := os.Chtimes(files[0], old, old); err != nil {
		t.Fatal(err)
	}
	if got := walkerRuntimeKeyed(t, dir, "k").TemplateFrom(); got != "cache" {
		t.Fatalf("TemplateFrom() = %q, want cache", got)
	}
	st, err := os.Stat(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if !st.ModTime().After(old.Add(time.Hour)) {
		t.Fatalf("the template read back keeps its time %v", st.ModTime())
	}
}

// TestTemplatePathCoversEachInput: the template's file name changes with
// each thing that decides the template (guest, memory limit, key, each
// warm-up input, their number) and only with those; without a key or a
// cache directory there is none.
func TestTemplatePathCoversEachInput(t *testing.T) {
	if hostBuildID() == "" {
		t.Skip("no Go build ID in this binary: no template is kept")
	}
	sum := sha256.Sum256([]byte("guest"))
	warm := []Call{{Input: []byte(`a {"x":1}`)}, {Input: []byte(`b {}`)}}
	base := templatePath("dir", sum, 1<<20, "reg", warm)
	if base == "" || base != templatePath("dir", sum, 1<<20, "reg", []Call{{Input: []byte(`a {"x":1}`)}, {Input: []byte(`b {}`)}}) {
		t.Fatalf("the same inputs give %q and another path", base)
	}
	other := sha256.Sum256([]byte("other guest"))
	for _, tc := range []struct {
		name string
		path string
	}{
		{"guest", templatePath("dir", other, 1<<20, "reg", warm)},
		{"memory limit", templatePath("dir", sum, 2<<20, "reg", warm)},
		{"key", templatePath("dir", sum, 1<<20, "reg2", warm)},
		{"a warm-up input", templatePath("dir", sum, 1<<20, "reg", []Call{{Input: []byte(`a {"x":2}`)}, {Input: []byte(`b {}`)}})},
		{"a warm-up input's bytes moved to the next", templatePath("dir", sum, 1<<20, "reg", []Call{{Input: []byte(`a {"x":1}b`)}, {Input: []byte(` {}`)}})},
		{"one warm-up fewer", templatePath("dir", sum, 1<<20, "reg", warm[:1])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.path == "" || tc.path == base {
				t.Fatalf("path %q: the same file as the base inputs' (or none)", tc.path)
			}
		})
	}
	if p := templatePath("dir", sum, 1<<20, "", warm); p != "" {
		t.Fatalf("no key: path %q, want none", p)
	}
	if p := templatePath("", sum, 1<<20, "reg", warm); p != "" {
		t.Fatalf("no cache directory: path %q, want none", p)
	}
}
