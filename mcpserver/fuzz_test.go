package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// FuzzParseCompact: a compact dispatcher's arguments come from a model.
// Parsing never panics; what it accepts is one strict JSON object whose op
// is a non-empty string, and its args canonicalize or are refused, never
// read two ways.
func FuzzParseCompact(f *testing.F) {
	for _, s := range []string{
		`{"op":"list_repos","args":{"per_page":2}}`, `{"op":"get_viewer","args":{}}`, `{"op":"x","op":"y","args":{}}`,
		`{"op":"a","args":[1]}`, `{"op":1,"args":{}}`, `{"args":{}}`, `{"op":"a","args":{},"grant":"g"}`, "{\"op\":\"\xff\"}", `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		op, args, ok := parseCompact(raw)
		if !ok {
			return
		}
		if op == "" || !json.Valid(raw) {
			t.Fatalf("accepted %q", raw)
		}
		c1, err1 := grant.CanonicalArgs(args)
		c2, err2 := grant.CanonicalArgs(args)
		if (err1 == nil) != (err2 == nil) || string(c1) != string(c2) {
			t.Fatalf("args %q read two ways", args)
		}
	})
}
