// Package snapshot is the signed registry snapshot: a canonical archive of
// a registry's manifest files (stable order, a SHA-256 per file and one for
// the whole), signed with an Ed25519 key in the minisign format.
//
// A snapshot is what a registry repository publishes and what the broker
// syncs; the binary embeds one (registry/snapshot.json) and names its
// digest. Execution never trusts a snapshot it did not ship with: a synced
// snapshot only feeds the catalog (docs/DESIGN.md, "Trust boundaries").
//
// It imports only package registry (the loader applies the same
// fail-closed rules to a snapshot's manifests) and aead.dev/minisign.
package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/elevenmessenger/pinned/registry"
)

// Format is the value of a snapshot's "format" member.
const Format = "pinned-registry-snapshot/v1"

// MaxBytes is the largest snapshot archive this package reads (16 MiB).
const MaxBytes = 16 << 20

// fileName is what a manifest file in a snapshot may be called.
var fileName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}\.json$`)

// Entry is one manifest file of a snapshot.
type Entry struct {
	// File is the file name ("github.json"): the manifest id and ".json".
	File string
	// SHA256 is the lower-case hex SHA-256 of Content.
	SHA256 string
	// Content is the file's bytes, exactly as reviewed.
	Content []byte
}

// Snapshot is a registry snapshot: every manifest file of a registry,
// sorted by name, with their digests.
type Snapshot struct {
	// Version is the snapshot's sequence number; a publisher increases
	// it with every new content, and a syncing broker refuses a lower one
	// than it holds (a rollback).
	Version uint64
	// Digest is the registry digest of the files ([registry.Registry.Digest]):
	// "sha256:" and the hex SHA-256 of, per file in name order, the name,
	// NUL, the bytes, NUL.
	Digest string
	// Entries are the manifest files, sorted by File, names unique.
	Entries []Entry
}

// Kind says why a snapshot was refused; the broker's metrics and logs
// use it as a label.
type Kind string

// The kinds of [Error].
const (
	KindBadSignature    Kind = "bad_signature"    // the signature does not verify with the trusted public key
	KindMalformed       Kind = "malformed"        // not a canonical snapshot archive (format, JSON, order, names, size)
	KindTampered        Kind = "tampered"         // a manifest's bytes or the whole differ from the digests the archive states
	KindInvalidManifest Kind = "invalid_manifest" // a manifest the loader refuses (docs/MANIFEST.md)
	KindMismatch        Kind = "mismatch"         // a registry folder's files differ from the snapshot
)

// Error is a refused snapshot.
type Error struct {
	Kind Kind
	Msg  string
}

func (e *Error) Error() string { return "registry snapshot: " + string(e.Kind) + ": " + e.Msg }

func fail(k Kind, format string, a ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, a...)}
}

// KindOf returns the kind of a snapshot error, or "" for another error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// Build makes the snapshot of the manifest files ("*.json", directly) in
// fsys at the given version. The files must load as a registry
// ([registry.Load]); its error is returned as is.
func Build(fsys fs.FS, version uint64) (*Snapshot, error) {
	reg, err := registry.Load(fsys)
	if err != nil {
		return nil, err
	}
	names, _ := fs.Glob(fsys, "*.json")
	slices.Sort(names)
	s := &Snapshot{Version: version, Digest: reg.Digest()}
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		if !fileName.MatchString(name) {
			return nil, fail(KindMalformed, "file name %q: want a manifest id and .json", name)
		}
		sum := sha256.Sum256(data)
		s.Entries = append(s.Entries, Entry{File: name, SHA256: hex.EncodeToString(sum[:]), Content: data})
	}
	return s, nil
}

// FS returns the snapshot's manifest files as a file system.
func (s *Snapshot) FS() fs.FS {
	m := memFS{}
	for _, e := range s.Entries {
		m[e.File] = bytes.Clone(e.Content)
	}
	return m
}

// Registry loads the snapshot's manifests with the registry's own loader.
func (s *Snapshot) Registry() (*registry.Registry, error) {
	reg, err := registry.Load(s.FS())
	if err != nil {
		return nil, fail(KindInvalidManifest, "%v", err)
	}
	return reg, nil
}

// Manifest returns the entry of the manifest with the given id.
func (s *Snapshot) Manifest(id string) (Entry, bool) {
	for _, e := range s.Entries {
		if e.File == id+".json" {
			return e, true
		}
	}
	return Entry{}, false
}

// Marshal returns the canonical archive: JSON with members in a fixed
// order, one entry a line, content in standard base64, a final newline.
//
//	{"format":"pinned-registry-snapshot/v1","version":3,"digest":"sha256:…","manifests":[
//	{"file":"asana.json","sha256":"…","size":1234,"content":"…"},
//	…
//	]}
//
// The same snapshot always gives the same bytes, and [Parse] accepts only
// those bytes.
func (s *Snapshot) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString(`{"format":"` + Format + `","version":` + strconv.FormatUint(s.Version, 10) + `,"digest":`)
	b.WriteString(strconv.Quote(s.Digest))
	b.WriteString(`,"manifests":[`)
	for i, e := range s.Entries {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n{\"file\":" + strconv.Quote(e.File) + `,"sha256":` + strconv.Quote(e.SHA256) +
			`,"size":` + strconv.Itoa(len(e.Content)) + `,"content":"` + base64.StdEncoding.EncodeToString(e.Content) + `"}`)
	}
	b.WriteString("\n]}\n")
	return b.Bytes()
}

// wire is the archive's JSON shape.
type wire struct {
	Format    string      `json:"format"`
	Version   uint64      `json:"version"`
	Digest    string      `json:"digest"`
	Manifests []wireEntry `json:"manifests"`
}

type wireEntry struct {
	File    string `json:"file"`
	SHA256  string `json:"sha256"`
	Size    int    `json:"size"`
	Content []byte `json:"content"`
}

// Parse reads a snapshot archive and checks that it is canonical (the
// bytes [Snapshot.Marshal] would write), that every manifest's bytes have
// the SHA-256 and size the archive states, that the whole has its stated
// digest, and that the manifests load ([registry.Load]). It does not check
// a signature: see [Verify]. Errors are *[Error].
func Parse(data []byte) (*Snapshot, error) {
	if len(data) > MaxBytes {
		return nil, fail(KindMalformed, "%d bytes, over the limit of %d", len(data), MaxBytes)
	}
	var w wire
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, fail(KindMalformed, "not a snapshot archive: %v", err)
	}
	if w.Format != Format {
		return nil, fail(KindMalformed, "format %q: want %q", clip(w.Format), Format)
	}
	if len(w.Manifests) == 0 {
		return nil, fail(KindMalformed, "no manifests")
	}
	s := &Snapshot{Version: w.Version, Digest: w.Digest}
	h := sha256.New()
	for i, e := range w.Manifests {
		if !fileName.MatchString(e.File) {
			return nil, fail(KindMalformed, "manifest %d: file name %q: want a manifest id and .json", i, clip(e.File))
		}
		if i > 0 && e.File <= w.Manifests[i-1].File {
			return nil, fail(KindMalformed, "manifest %s: files must be sorted by name and unique", e.File)
		}
		sum := sha256.Sum256(e.Content)
		if got := hex.EncodeToString(sum[:]); got != e.SHA256 || len(e.Content) != e.Size {
			return nil, fail(KindTampered, "%s: its bytes have sha256 %s (%d bytes), the snapshot states %s (%d bytes)", e.File, got, len(e.Content), clip(e.SHA256), e.Size)
		}
		h.Write([]byte(e.File))
		h.Write([]byte{0})
		h.Write(e.Content)
		h.Write([]byte{0})
		s.Entries = append(s.Entries, Entry{File: e.File, SHA256: e.SHA256, Content: e.Content})
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != w.Digest {
		return nil, fail(KindTampered, "the files' digest is %s, the snapshot states %s", got, clip(w.Digest))
	}
	if !bytes.Equal(s.Marshal(), data) {
		return nil, fail(KindMalformed, "not in canonical form (write it with pinned registry snapshot)")
	}
	if _, err := s.Registry(); err != nil {
		return nil, err
	}
	return s, nil
}

// Diff compares the manifest files ("*.json", directly) in fsys with the
// snapshot and returns one line per difference, sorted: a file whose
// bytes differ (with both SHA-256s), one only in the folder, one only in
// the snapshot. None means the folder holds exactly the snapshot's bytes.
func (s *Snapshot) Diff(fsys fs.FS) ([]string, error) {
	names, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		seen[name] = true
		sum := sha256.Sum256(data)
		got := hex.EncodeToString(sum[:])
		e, ok := s.Manifest(strings.TrimSuffix(name, ".json"))
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: not in the snapshot (sha256 %s)", name, got))
		case got != e.SHA256:
			out = append(out, fmt.Sprintf("%s: sha256 %s, the snapshot states %s", name, got, e.SHA256))
		}
	}
	for _, e := range s.Entries {
		if !seen[e.File] {
			out = append(out, fmt.Sprintf("%s: in the snapshot, not in the folder", e.File))
		}
	}
	slices.Sort(out)
	return out, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
