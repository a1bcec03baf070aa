package registry

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/elevenmessenger/pinned/internal/testing/schematest"
)

const schemaID = "https://github.com/elevenmessenger/pinned/registry/manifest.schema.json"

// compileSchema compiles manifest.schema.json; the compiler also checks it
// against the draft 2020-12 metaschema.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	return schematest.Compile(t, schemaID, schemaJSON)
}

func schemaValidate(s *jsonschema.Schema, data []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

func TestSchemaAcceptsShipped(t *testing.T) {
	s := compileSchema(t)
	files := append(shippedFiles(t), "testdata/acme.json")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := schemaValidate(s, data); err != nil {
				t.Errorf("%s does not validate: %v", f, err)
			}
		})
	}
}

func TestSchemaRejects(t *testing.T) {
	s := compileSchema(t)
	tests := []struct {
		name string
		doc  string
	}{
		{"empty object", `{}`},
		{"not an object", `[]`},
		{"unknown field", `{"manifest": 1, "id": "acme", "name": "Acme", "host": "api.acme.example", "auth": {"scheme": "bearer"}, "ops": {"a": {"access": "read", "summary": "s", "method": "GET", "path": "/", "pick": {"fields": {}}}}, "extra": 1}`},
		{"op without pick", `{"manifest": 1, "id": "acme", "name": "Acme", "host": "api.acme.example", "auth": {"scheme": "bearer"}, "ops": {"a": {"access": "read", "summary": "s", "method": "GET", "path": "/"}}}`},
		{"no ops", `{"manifest": 1, "id": "acme", "name": "Acme", "host": "api.acme.example", "auth": {"scheme": "bearer"}, "ops": {}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if schemaValidate(s, []byte(tt.doc)) == nil {
				t.Errorf("schema accepted %s", tt.doc)
			}
		})
	}
}

// TestSchemaAgreesWithParse runs the schema and Parse on documents whose
// verdict the schema can express: both must accept or both must refuse.
func TestSchemaAgreesWithParse(t *testing.T) {
	s := compileSchema(t)
	tests := []struct {
		name   string
		edits  []string
		accept bool
	}{
		{name: "acme", accept: true},
		{name: "root path", edits: []string{`"path": "/v1/me"`, `"path": "/"`}, accept: true},
		{name: "header scheme", edits: []string{`"scheme": "bearer"`, `"scheme": "header", "header": "X-Api-Key"`}, accept: true},
		{name: "literal braces", edits: []string{`"expand[]": "labels"`, `"expand[]": "{ } {} {{limit}} {\"x\""`}, accept: true},
		{name: "sub-delims in path", edits: []string{`"path": "/v1/me"`, `"path": "/v1/me:self/~a,b;c=d@e/..."`}, accept: true},
		{name: "unknown top-level field", edits: []string{`"viewer": "get_viewer",`, `"viewer": "get_viewer", "colour": "red",`}},
		{name: "draft mark", edits: []string{`"viewer": "get_viewer",`, `"viewer": "get_viewer", "draft": {"source": "openapi: acme.yaml"},`}},
		{name: "unknown arg field", edits: []string{`"secret": true`, `"secret": true, "hidden": true`}},
		{name: "manifest 2", edits: []string{`"manifest": 1,`, `"manifest": 2,`}},
		{name: "id syntax", edits: []string{`"id": "acme",`, `"id": "Acme",`}},
		{name: "host with scheme", edits: []string{`"host": "api.acme.example"`, `"host": "https://api.acme.example"`}},
		{name: "host with port", edits: []string{`"host": "api.acme.example"`, `"host": "api.acme.example:443"`}},
		{name: "host IP", edits: []string{`"host": "api.acme.example"`, `"host": "10.0.0.1"`}},
		{name: "host upper case", edits: []string{`"host": "api.acme.example"`, `"host": "Api.acme.example"`}},
		{name: "host single label", edits: []string{`"host": "api.acme.example"`, `"host": "localhost"`}},
		{name: "docs http", edits: []string{`"https://docs.acme.example/api"`, `"http://docs.acme.example/api"`}},
		{name: "scheme basic", edits: []string{`"scheme": "bearer"`, `"scheme": "basic"`}},
		{name: "header scheme without header", edits: []string{`"scheme": "bearer"`, `"scheme": "header"`}},
		{name: "header with bearer", edits: []string{`"scheme": "bearer"`, `"scheme": "bearer", "header": "X-Key"`}},
		{name: "oauth scopes missing", edits: []string{`"scopes": ["items:read"],`, ``}},
		{name: "scope with a space", edits: []string{`"scopes": ["items:read"]`, `"scopes": ["items read"]`}},
		{name: "scope separator", edits: []string{`"refresh": true,`, `"refresh": true, "scope_separator": ";",`}},
		{name: "authorize_params redirect_uri", edits: []string{`{ "prompt": "consent" }`, `{ "redirect_uri": "x" }`}},
		{name: "header Authorization", edits: []string{`"Accept": "application/json"`, `"Authorization": "x"`}},
		{name: "header proxy in odd case", edits: []string{`"Accept": "application/json"`, `"pROXY-Foo": "x"`}},
		{name: "header Expect", edits: []string{`"Accept": "application/json"`, `"Expect": "100-continue"`}},
		{name: "header Forwarded", edits: []string{`"Accept": "application/json"`, `"forwarded": "for=1.2.3.4"`}},
		{name: "header X-Forwarded-For", edits: []string{`"Accept": "application/json"`, `"x-FORWARDED-for": "1.2.3.4"`}},
		{name: "auth header X-Forwarded-Host", edits: []string{`"scheme": "bearer"`, `"scheme": "header", "header": "X-Forwarded-Host"`}},
		{name: "header value placeholder", edits: []string{`"Accept": "application/json"`, `"Accept": "{x}"`}},
		{name: "op name", edits: []string{`"get_viewer": {`, `"Get_viewer": {`, `"viewer": "get_viewer",`, ``}},
		{name: "access", edits: []string{`"access": "write",
      "summary": "Charge`, `"access": "admin",
      "summary": "Charge`}},
		{name: "write without confirm", edits: []string{`"confirm": "Charge {amount} cents?",`, ``}},
		{name: "read with confirm", edits: []string{`"summary": "Who the token belongs to",`, `"summary": "Who the token belongs to", "confirm": "Sure?",`}},
		{name: "summary two lines", edits: []string{`"summary": "Who the token belongs to"`, `"summary": "Who the\ntoken"`}},
		{name: "method", edits: []string{`"method": "GET",
      "path": "/v1/me"`, `"method": "HEAD",
      "path": "/v1/me"`}},
		{name: "path dot segment", edits: []string{`"path": "/v1/me"`, `"path": "/v1/../me"`}},
		{name: "path trailing slash", edits: []string{`"path": "/v1/me"`, `"path": "/v1/me/"`}},
		{name: "placeholder not whole segment", edits: []string{`"path": "/v1/charges"`, `"path": "/v1/charges{amount}"`}},
		{name: "query key", edits: []string{`"expand[]": "labels"`, `"expand labels": "labels"`}},
		{name: "unclosed placeholder in query", edits: []string{`"limit": "{limit}"`, `"limit": "{limit"`}},
		{name: "graphql slip", edits: []string{`nodes { id title }`, `nodes {id title }`}},
		{name: "body_json key placeholder", edits: []string{`"tags": ["bot", null]`, `"{tags}": ["bot", null]`}},
		{name: "body_json on GET", edits: []string{`"pick": { "root": "data", "fields": { "id": "identifier", "title": "text", "labels.name": "text" } }`, `"body_json": {}, "pick": { "root": "data", "fields": { "id": "identifier", "title": "text", "labels.name": "text" } }`}},
		{name: "both bodies", edits: []string{`"body_form": { "amount"`, `"body_json": {}, "body_form": { "amount"`}},
		{name: "body_json array", edits: []string{`"body_json": {
        "query"`, `"body_json": [], "x": {
        "query"`}},
		{name: "arg type", edits: []string{`"type": "boolean"`, `"type": "bool"`}},
		{name: "enum on integer", edits: []string{`"limit": { "type": "integer", "min": 1`, `"limit": { "type": "integer", "enum": ["1"], "min": 1`}},
		{name: "empty enum", edits: []string{`"enum": ["open", "closed"], "default": "open"`, `"enum": []`}},
		{name: "pattern unanchored", edits: []string{`"pattern": "^[a-z0-9-]{1,40}$"`, `"pattern": "[a-z]"`}},
		{name: "max_length 0", edits: []string{`"max_length": 40`, `"max_length": 0`}},
		{name: "min on string", edits: []string{`"title": { "type": "string", "required": true, "max_length": 200 }`, `"title": { "type": "string", "required": true, "min": 1 }`}},
		{name: "default with required", edits: []string{`"amount": { "type": "integer", "required": true, "min": 1 }`, `"amount": { "type": "integer", "required": true, "default": 1 }`}},
		{name: "default wrong type", edits: []string{`"default": false`, `"default": "no"`}},
		{name: "too many args", edits: []string{`"note": { "type": "string", "secret": true }`, `"note": { "type": "string", "secret": true }` + manyArgs(32)}},
		{name: "pick missing", edits: []string{`,
      "pick": { "fields": { "id": "identifier", "name": "text" } }`, ``}},
		{name: "pick fields missing", edits: []string{`"pick": { "fields": { "id": "identifier", "name": "text" } }`, `"pick": { "root": "data" }`}},
		{name: "pick field dot path", edits: []string{`"fields": { "id": "identifier", "name": "text" }`, `"fields": { "id": "identifier", "name.": "text" }`}},
		{name: "pick field without a class", edits: []string{`"fields": { "id": "identifier", "name": "text" }`, `"fields": { "id": "identifier", "name": "" }`}},
		{name: "pick field with an unknown class", edits: []string{`"fields": { "id": "identifier", "name": "text" }`, `"fields": { "id": "identifier", "name": "secret" }`}},
		{name: "pick fields as a list", edits: []string{`"fields": { "id": "identifier", "name": "text" }`, `"fields": ["id", "name"]`}},
		{name: "pick field of each class", edits: []string{`"fields": { "id": "identifier", "name": "text" }`, `"fields": { "a": "identifier", "b": "enum", "c": "number", "d": "boolean", "e": "time", "f": "url", "g": "text" }`}, accept: true},
		{name: "write op target", edits: []string{`"confirm": "Charge {amount} cents?",`, `"confirm": "Charge {amount} cents?", "target": ["amount"],`}, accept: true},
		{name: "target on a read op", edits: []string{`"path": "/v1/me",`, `"path": "/v1/me", "target": [],`}},
		{name: "empty target", edits: []string{`"confirm": "Charge {amount} cents?",`, `"confirm": "Charge {amount} cents?", "target": [],`}},
		{name: "target twice", edits: []string{`"confirm": "Charge {amount} cents?",`, `"confirm": "Charge {amount} cents?", "target": ["amount", "amount"],`}},
		{name: "pick root too deep", edits: []string{`"root": "data.items.nodes"`, `"root": "a.b.c.d.e.f.g.h.i"`}},
		{name: "too many pick fields", edits: []string{`"fields": { "id": "identifier", "name": "text" }`, `"fields": ` + manyFields(65)}},
		{name: "paginate on a write op", edits: []string{`"body_form": { "amount"`, `"paginate": { "style": "cursor", "arg": "note", "cursor": "next", "max_pages": 2 }, "body_form": { "amount"`}},
		{name: "paginate style", edits: []string{`"style": "cursor", "arg": "cursor"`, `"style": "offset", "arg": "cursor"`}},
		{name: "paginate field of another style", edits: []string{`"has_more": "meta.more"`, `"has_more": "meta.more", "total_pages": "meta.pages"`}},
		{name: "paginate cursor path missing", edits: []string{`"cursor": "meta.next", `, ``}},
		{name: "paginate max_pages", edits: []string{`"max_pages": 5`, `"max_pages": 101`}},
		{name: "array args", edits: []string{`"urgent": { "type": "boolean", "default": false },`, `"urgent": { "type": "boolean", "default": false }, "tags": { "type": "array", "items": { "type": "string", "enum": ["a", "b"] }, "max_items": 3 },`, `"tags": ["bot", null]`, `"tags": "{tags}"`}, accept: true},
		{name: "array without items", edits: []string{`"urgent": { "type": "boolean", "default": false },`, `"urgent": { "type": "boolean", "default": false }, "tags": { "type": "array" },`, `"tags": ["bot", null]`, `"tags": "{tags}"`}},
		{name: "items on a string", edits: []string{`"title": { "type": "string", "required": true, "max_length": 200 }`, `"title": { "type": "string", "required": true, "max_length": 200, "items": { "type": "string" } }`}},
		{name: "error_message", edits: []string{`"error_message": "error.message"`, `"error_message": "error..message"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := acme(t, tt.edits...)
			file := "acme.json"
			if strings.Contains(string(data), `"id": "Acme"`) {
				file = "Acme.json"
			}
			_, perr := Parse(file, data)
			serr := schemaValidate(s, data)
			if (perr == nil) != tt.accept || (serr == nil) != tt.accept {
				t.Errorf("want accept=%v; Parse: %v; schema: %v", tt.accept, perr, serr)
			}
		})
	}
}
