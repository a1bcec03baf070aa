package registry

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
)

// embedded holds the manifests built into the binary. Execution trusts
// only this snapshot (see DESIGN.md, "Trust boundaries").
//
//go:embed manifests/*.json
var embedded embed.FS

// Registry is a set of parsed manifests, unique by id, together with the
// bytes they were parsed from. A Registry is immutable and safe for
// concurrent use: every manifest, slice and byte it hands out is a copy
// the caller owns, so no caller can change what another one sees.
type Registry struct {
	byID   map[string]*Manifest
	raw    map[string][]byte // by id: the file's bytes
	ids    []string          // sorted
	digest string
}

// Load parses every "*.json" file in the root of fsys (subdirectories and
// other files are ignored) with [Parse], using the file name in problems
// (so each id must equal its file name). Ids must be unique and there must
// be at least one manifest. On failure the error is an *[Error] with the
// problems of every file; a file that cannot be read is a problem too.
func Load(fsys fs.FS) (*Registry, error) {
	names, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return nil, err // unreachable: the pattern is valid
	}
	files := make([]manifestFile, len(names))
	for i, name := range names {
		files[i].name = name
		files[i].data, files[i].err = fs.ReadFile(fsys, name)
	}
	return load(files)
}

// With returns a new registry: r's manifests and the manifest in data,
// which adds a service or replaces r's manifest of the same id. data is
// parsed as [Parse] parses a file named file (its id must be file's base
// name); the result is what [Load] gives for r's files and data as
// "<id>.json", its digest included. r is unchanged. On failure the error
// is an *[Error].
//
// It is for trying a manifest beside a snapshot (`pinned op --manifest`);
// execution trusts only an embedded registry.
func (r *Registry) With(file string, data []byte) (*Registry, error) {
	m, err := Parse(file, data)
	if err != nil {
		return nil, err
	}
	files := []manifestFile{{name: m.ID + ".json", data: data}}
	for _, id := range r.ids {
		if id != m.ID {
			files = append(files, manifestFile{name: id + ".json", data: r.raw[id]})
		}
	}
	return load(files)
}

// Only returns a new registry of r's manifests with the given ids, as
// [Load] gives for their files (its digest included); r is unchanged. An
// engine built on it compiles and warms one service's ops, not the
// catalog's. An id r does not hold is an *[Error].
func (r *Registry) Only(ids ...string) (*Registry, error) {
	files := make([]manifestFile, 0, len(ids))
	for _, id := range ids {
		data, ok := r.raw[id]
		if !ok {
			return nil, &Error{Problems: []Problem{{File: id + ".json", Msg: fmt.Sprintf("no service %q in %s", id, r)}}}
		}
		files = append(files, manifestFile{name: id + ".json", data: data})
	}
	return load(files)
}

// manifestFile is one manifest file of a registry: its name, and its
// bytes or the error reading them.
type manifestFile struct {
	name string
	data []byte
	err  error
}

// load parses files (in name order) into a registry, as Load documents.
func load(files []manifestFile) (*Registry, error) {
	slices.SortFunc(files, func(a, b manifestFile) int { return strings.Compare(a.name, b.name) })
	r := &Registry{byID: map[string]*Manifest{}, raw: map[string][]byte{}}
	var problems []Problem
	h := sha256.New()
	for _, f := range files {
		if f.err != nil {
			problems = append(problems, Problem{File: f.name, Msg: "cannot read: " + f.err.Error()})
			continue
		}
		h.Write([]byte(f.name))
		h.Write([]byte{0})
		h.Write(f.data)
		h.Write([]byte{0})
		m, err := Parse(f.name, f.data)
		if err != nil {
			problems = append(problems, err.(*Error).Problems...)
			continue
		}
		if _, dup := r.byID[m.ID]; dup {
			problems = append(problems, Problem{File: f.name, Line: 1, Col: 1, Field: "id", Msg: fmt.Sprintf("%q is also the id of another manifest; ids are unique", m.ID)})
			continue
		}
		r.byID[m.ID] = m
		r.raw[m.ID] = f.data
		r.ids = append(r.ids, m.ID)
	}
	if len(files) == 0 {
		problems = append(problems, Problem{File: ".", Msg: "no manifests (*.json) found"})
	}
	if len(problems) > 0 {
		return nil, &Error{Problems: problems}
	}
	slices.Sort(r.ids)
	r.digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return r, nil
}

var loadDefault = sync.OnceValue(func() *Registry {
	sub, err := fs.Sub(embedded, "manifests")
	if err != nil {
		panic("registry: " + err.Error())
	}
	r, err := Load(sub)
	if err != nil {
		panic("registry: the embedded registry is invalid:\n" + err.Error())
	}
	return r
})

// Default returns the registry embedded in the binary
// (registry/manifests/*.json at build time), parsed on first use. It
// panics if an embedded manifest is invalid; a test guards that this never
// ships.
func Default() *Registry { return loadDefault() }

// Services returns the manifests sorted by id, each a deep copy
// ([Manifest.Clone]) in a new slice: the caller owns them and may change
// them without changing the registry. Each call copies every manifest
// again; a caller that looks manifests up often keeps its own.
func (r *Registry) Services() []*Manifest {
	out := make([]*Manifest, len(r.ids))
	for i, id := range r.ids {
		out[i] = r.byID[id].Clone()
	}
	return out
}

// Service returns a deep copy ([Manifest.Clone]) of the manifest with the
// given id and whether it exists (nil, false if not). The caller owns the
// copy.
func (r *Registry) Service(id string) (*Manifest, bool) {
	m, ok := r.byID[id]
	if !ok {
		return nil, false
	}
	return m.Clone(), true
}

// Has reports whether the registry holds a manifest with the given id,
// without copying it.
func (r *Registry) Has(id string) bool {
	_, ok := r.byID[id]
	return ok
}

// IDs returns the ids of the registry's manifests, sorted, in a new slice.
func (r *Registry) IDs() []string { return slices.Clone(r.ids) }

// Raw returns a copy of the bytes the manifest with the given id was
// parsed from, or nil if there is none.
func (r *Registry) Raw(id string) []byte { return bytes.Clone(r.raw[id]) }

// Digest identifies the registry's content: "sha256:" followed by the
// lower-case hex SHA-256 of, for each file in sorted name order, the file
// name, a NUL byte, the file's bytes and a NUL byte. Any change to a byte
// or a file name changes it.
func (r *Registry) Digest() string { return r.digest }

// String describes the registry for logs: its services and digest.
func (r *Registry) String() string {
	return fmt.Sprintf("registry[%s] %s", strings.Join(r.ids, ","), r.digest)
}

// schemaJSON is registry/manifest.schema.json, the JSON Schema (draft
// 2020-12) of the manifest format for editors. It checks shape only;
// [Parse] is the authority, and schema_test.go holds the two together.
//
//go:embed manifest.schema.json
var schemaJSON []byte

// shared returns the registry's own manifests sorted by id, uncopied: for
// this package's readers only, which never change them.
func (r *Registry) shared() []*Manifest {
	out := make([]*Manifest, len(r.ids))
	for i, id := range r.ids {
		out[i] = r.byID[id]
	}
	return out
}
