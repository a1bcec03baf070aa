package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// shippedFS is registry/manifests as a MapFS, for edits.
func shippedFS(t *testing.T) fstest.MapFS {
	t.Helper()
	fsys := fstest.MapFS{}
	for _, f := range shippedFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fsys[filepath.Base(f)] = &fstest.MapFile{Data: data}
	}
	return fsys
}

func TestDefault(t *testing.T) {
	r := Default()
	if Default() != r {
		t.Error("Default() parsed twice")
	}
	var ids []string
	for _, m := range r.Services() {
		ids = append(ids, m.ID)
		got, ok := r.Service(m.ID)
		if !ok || got == m || !reflect.DeepEqual(got, m) || !r.Has(m.ID) {
			t.Errorf("Service(%q) = %p, %v; want a copy equal to Services()' %p (Has %v)", m.ID, got, ok, m, r.Has(m.ID))
		}
		onDisk, err := os.ReadFile(filepath.Join("manifests", m.ID+".json"))
		if err != nil || !bytes.Equal(r.Raw(m.ID), onDisk) {
			t.Errorf("Raw(%q) differs from manifests/%s.json (%v)", m.ID, m.ID, err)
		}
	}
	var want []string
	for _, f := range shippedFiles(t) {
		want = append(want, strings.TrimSuffix(filepath.Base(f), ".json"))
	}
	if !slices.Equal(ids, want) {
		t.Errorf("Services() ids = %q, want %q (sorted, every shipped manifest)", ids, want)
	}
	if got := r.IDs(); !slices.Equal(got, want) {
		t.Errorf("IDs() = %q, want %q", got, want)
	}
	if m, ok := r.Service("nope"); ok || m != nil || r.Has("nope") || r.Raw("nope") != nil {
		t.Error(`Service/Raw("nope") found something`)
	}
}

func TestDigest(t *testing.T) {
	fsys := shippedFS(t)
	// The digest as documented, computed independently.
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(fsys)) {
		h.Write([]byte(name + "\x00"))
		h.Write(fsys[name].Data)
		h.Write([]byte("\x00"))
	}
	want := "sha256:" + hex.EncodeToString(h.Sum(nil))

	r1, err := Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Digest() != want {
		t.Errorf("Digest = %s, want %s", r1.Digest(), want)
	}
	if Default().Digest() != want {
		t.Errorf("Default().Digest = %s, want %s (embedded differs from manifests/?)", Default().Digest(), want)
	}
	r2, err := Load(fsys)
	if err != nil || r2.Digest() != r1.Digest() {
		t.Fatalf("Digest not stable: %s vs %s (%v)", r1.Digest(), r2.Digest(), err)
	}

	// One byte changed (a letter of the name), still a valid manifest.
	name := slices.Sorted(maps.Keys(fsys))[0]
	edited := bytes.Clone(fsys[name].Data)
	i := bytes.Index(edited, []byte(`"name": "`)) + len(`"name": "`)
	edited[i] ^= 0x20 // flip the case of the first letter
	fsys[name] = &fstest.MapFile{Data: edited}
	r3, err := Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Digest() == r1.Digest() {
		t.Error("Digest did not change when a byte changed")
	}
}

// TestWith: a manifest beside a registry is what Load gives for the
// registry's files and it, digest included; it adds a service or
// replaces one, and leaves the registry as it was.
func TestWith(t *testing.T) {
	acme, err := os.ReadFile("testdata/acme.json")
	if err != nil {
		t.Fatal(err)
	}
	base := Default()
	tests := []struct {
		name string
		id   string
		data []byte
	}{
		{name: "adds a service", id: "acme", data: acme},
		{name: "replaces a service", id: base.IDs()[0], data: bytes.Replace(base.Raw(base.IDs()[0]), []byte(`"name": "`), []byte(`"name": "New `), 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := base.Digest()
			got, err := base.With("dir/"+tt.id+".json", tt.data)
			if err != nil {
				t.Fatal(err)
			}
			fsys := shippedFS(t)
			fsys[tt.id+".json"] = &fstest.MapFile{Data: tt.data}
			want, err := Load(fsys)
			if err != nil {
				t.Fatal(err)
			}
			if got.Digest() != want.Digest() || !slices.Equal(got.IDs(), want.IDs()) || !bytes.Equal(got.Raw(tt.id), tt.data) {
				t.Errorf("With: digest %s ids %q; Load: digest %s ids %q", got.Digest(), got.IDs(), want.Digest(), want.IDs())
			}
			if base.Digest() != before || (tt.id == "acme" && base.Has("acme")) || bytes.Equal(base.Raw(tt.id), tt.data) {
				t.Error("With changed the registry it was called on")
			}
		})
	}
	_, err = base.With("dir/x.json", []byte(`{"manifest": 1, "id": "x"}`))
	var e *Error
	if !errors.As(err, &e) || len(e.Problems) == 0 || e.Problems[0].File != "dir/x.json" {
		t.Errorf("a bad manifest: %v, want an *Error naming dir/x.json", err)
	}
}

// TestOnly: a registry of some of r's services is what Load gives for
// their files, digest included; an id r lacks is an *Error; r is unchanged.
func TestOnly(t *testing.T) {
	base := Default()
	ids := base.IDs()
	tests := []struct {
		name string
		ids  []string
	}{
		{name: "one service", ids: ids[:1]},
		{name: "two services, out of order", ids: []string{ids[2], ids[0]}},
		{name: "every service", ids: ids},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := base.Only(tt.ids...)
			if err != nil {
				t.Fatal(err)
			}
			fsys := fstest.MapFS{}
			for _, id := range tt.ids {
				fsys[id+".json"] = &fstest.MapFile{Data: base.Raw(id)}
			}
			want, err := Load(fsys)
			if err != nil {
				t.Fatal(err)
			}
			if got.Digest() != want.Digest() || !slices.Equal(got.IDs(), want.IDs()) || len(got.IDs()) != len(tt.ids) {
				t.Errorf("Only: digest %s ids %q; Load: digest %s ids %q", got.Digest(), got.IDs(), want.Digest(), want.IDs())
			}
		})
	}
	if len(base.IDs()) != len(ids) {
		t.Error("Only changed the registry it was called on")
	}
	for _, bad := range [][]string{{"nosuch"}, {ids[0], ids[0]}, {}} {
		var e *Error
		if _, err := base.Only(bad...); !errors.As(err, &e) || len(e.Problems) == 0 {
			t.Errorf("Only(%q) = %v, want an *Error", bad, err)
		}
	}
}

func TestRawIsACopy(t *testing.T) {
	r := Default()
	id := r.Services()[0].ID
	raw := r.Raw(id)
	raw[0] = 'X'
	if r.Raw(id)[0] == 'X' {
		t.Error("modifying Raw's result changed the registry")
	}
}

func TestLoadRefuses(t *testing.T) {
	good := shippedFS(t)
	tests := []struct {
		name string
		fsys fstest.MapFS
		want []string // each must appear in the error
	}{
		{name: "empty", fsys: fstest.MapFS{"README.md": {Data: []byte("hi")}}, want: []string{"no manifests"}},
		{name: "one bad file among good ones", fsys: with(good, "acme.json", []byte(`{"manifest": 1}`)),
			want: []string{"acme.json:1:1: id: required", "acme.json:1:1: ops: required"}},
		{name: "id differs from file name", fsys: with(good, "copy.json", good["github.json"].Data),
			want: []string{`copy.json:3:9: id: "github" must equal the file name`}},
		{name: "unreadable", fsys: with(good, "dir.json", nil), want: []string{"dir.json: cannot read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Load(tt.fsys)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Load = %v, %v; want an *Error", r, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

// with returns a copy of fsys with name set to data (a directory when data
// is nil).
func with(fsys fstest.MapFS, name string, data []byte) fstest.MapFS {
	out := fstest.MapFS{}
	for k, v := range fsys {
		out[k] = v
	}
	if data == nil {
		out[name] = &fstest.MapFile{Mode: fs.ModeDir}
	} else {
		out[name] = &fstest.MapFile{Data: data}
	}
	return out
}

func TestLoadIgnoresOtherFiles(t *testing.T) {
	fsys := with(shippedFS(t), "notes.txt", []byte("not json"))
	fsys["sub/x.json"] = &fstest.MapFile{Data: []byte("garbage")}
	r, err := Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Services()) != len(shippedFiles(t)) {
		t.Errorf("Load read %d manifests, want %d", len(r.Services()), len(shippedFiles(t)))
	}
}

// BenchmarkLoad is parsing and checking the embedded manifests, which
// every start of the sidecar does beside compiling the guest.
func BenchmarkLoad(b *testing.B) {
	sub, err := fs.Sub(embedded, "manifests")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(sub); err != nil {
			b.Fatal(err)
		}
	}
}
