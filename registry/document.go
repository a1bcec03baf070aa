package registry

import (
	"bytes"
	"encoding/json"
)

// Document is the one JSON shape in which pinned serves a registry: the
// sidecar's GET /v1/registry, the broker's GET /registry and
// `pinned registry list --json` all answer it (docs/API.md, "The registry
// document"):
//
//	{"digest": "sha256:…", "services": [<manifest>, …]}
//
// Digest is [Registry.Digest]; Services are the manifests exactly as
// parsed from their files (compacted, key order kept), sorted by id.
type Document struct {
	Digest   string            `json:"digest"`
	Services []json.RawMessage `json:"services"`
}

// Document returns r's registry document.
func (r *Registry) Document() Document {
	d := Document{Digest: r.digest, Services: make([]json.RawMessage, 0, len(r.ids))}
	for _, id := range r.ids {
		d.Services = append(d.Services, json.RawMessage(r.raw[id]))
	}
	return d
}

// DocumentJSON is r's registry document as compact JSON, without HTML
// escaping ("<" stays "<"), with no trailing newline.
func (r *Registry) DocumentJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r.Document()); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
