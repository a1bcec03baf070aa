// Package jsonenc is the one JSON writer of pinned's answers: the
// sidecar's and the broker's HTTP bodies and the CLI's JSON output.
// It is encoding/json with HTML escaping off, so "<", ">" and "&" are
// written as themselves (plain UTF-8, RFC 8259) rather than \u003c,
// \u003e and \u0026: the answers are JSON for programs and terminals,
// never inlined into HTML, and a confirm sentence or "Bearer <token>"
// must read as written. json.RawMessage values inside (the embedded
// manifests, projected results) are compacted under the same rule.
//
// It imports only the standard library and may be imported by any layer.
package jsonenc

import (
	"bytes"
	"encoding/json"
)

// Marshal is json.Marshal without HTML escaping and without the trailing
// newline json.Encoder adds.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// MarshalIndent is json.MarshalIndent without HTML escaping.
func MarshalIndent(v any, prefix, indent string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
