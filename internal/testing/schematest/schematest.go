// Package schematest compiles and applies JSON Schema documents in tests
// (draft 2020-12, github.com/santhosh-tekuri/jsonschema), for the packages
// that publish schemas: the registry's tool and args schemas, and the
// sidecar's /v1/tools.
package schematest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Compile compiles one schema document under url (draft 2020-12 unless
// the document says otherwise; the compiler checks it against the
// metaschema). It fails the test when doc is not JSON or not a schema.
func Compile(t testing.TB, url string, doc []byte) *jsonschema.Schema {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("%s: not JSON: %v", url, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(url, v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s does not compile: %v", url, err)
	}
	return s
}

// Accepts reports whether s validates doc. It fails the test when doc is
// not JSON.
func Accepts(t testing.TB, s *jsonschema.Schema, doc string) bool {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		t.Fatalf("sample %s is not JSON: %v", doc, err)
	}
	return s.Validate(v) == nil
}
