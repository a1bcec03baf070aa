package registry

import (
	"bytes"
	"encoding/json"
)

// document is the registry document (see [Registry.DocumentJSON]).
type document struct {
	Digest   string            `json:"digest"`
	Services []json.RawMessage `json:"services"`
	// ManifestSHA256 maps each id to [Registry.ManifestSHA256].
	ManifestSHA256 map[string]string `json:"manifest_sha256"`
}

// DocumentJSON returns the registry document, the one JSON shape in which
// pinned serves a registry: the sidecar's GET /v1/registry, the broker's
// GET /registry and `pinned registry list --json` all answer it
// (docs/API.md, "GET /v1/registry"):
//
//	{"digest": "sha256:…", "services": [<manifest>, …], "manifest_sha256": {"<id>": "<hex>", …}}
//
// digest is [Registry.Digest]; manifest_sha256 is each manifest file's
// SHA-256 ([Registry.ManifestSHA256]), which a grant or request may name
// to refuse drift; services are the manifests exactly as
// parsed from their files (compacted, key order kept), sorted by id. The
// JSON is compact, without HTML escaping ("<" stays "<"), with no trailing
// newline, in a new slice the caller owns. The error is only ever an
// encoding failure of a manifest the registry parsed, so in practice nil.
func (r *Registry) DocumentJSON() ([]byte, error) {
	d := document{Digest: r.digest, Services: make([]json.RawMessage, 0, len(r.ids)), ManifestSHA256: map[string]string{}}
	for _, id := range r.ids {
		d.Services = append(d.Services, json.RawMessage(r.raw[id]))
		d.ManifestSHA256[id] = r.ManifestSHA256(id)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
