package openapi

import (
	"fmt"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/registry"
)

// TestImportArrays: a list parameter or body member of scalar values
// becomes an array arg with its items' constraints, maxItems and the
// description's style and explode; the reviewed draft passes the loader
// and the lint. A list of objects and a deepObject parameter are left
// out with a note.
func TestImportArrays(t *testing.T) {
	desc := []byte(`{"openapi": "3.0.3", "info": {"title": "Tagger", "version": "1"}, "servers": [{"url": "https://api.tagger.example"}],
"components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}}, "security": [{"bearer": []}],
"paths": {
 "/items": {
  "get": {"operationId": "listItems", "parameters": [
    {"name": "tag", "in": "query", "schema": {"type": "array", "maxItems": 5, "items": {"type": "string", "enum": ["red", "blue"]}}},
    {"name": "ids", "in": "query", "style": "pipeDelimited", "explode": false, "schema": {"type": "array", "items": {"type": "integer", "minimum": 1}}},
    {"name": "fields", "in": "query", "explode": false, "schema": {"type": "array", "items": {"type": "string", "pattern": "^[a-z_]+$", "maxLength": 30}}},
    {"name": "filter", "in": "query", "style": "deepObject", "schema": {"type": "array", "items": {"type": "string", "enum": ["x"]}}},
    {"name": "where", "in": "query", "schema": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}}],
   "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}}}}}}}}},
  "post": {"operationId": "createItem", "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["name", "tags"],
    "properties": {"name": {"type": "string", "maxLength": 80}, "tags": {"type": "array", "maxItems": 3000, "items": {"type": "string", "maxLength": 20}}, "owners": {"type": "array", "items": {"type": "object"}}}}}}},
   "responses": {"201": {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "properties": {"id": {"type": "integer"}}}}}}}}
 }}}`)
	d, err := Load("tagger.json", desc)
	if err != nil {
		t.Fatal(err)
	}
	draft, err := Import(d, ImportOptions{Ops: []string{"listItems", "createItem"}, ID: "tagger"})
	if err != nil {
		t.Fatal(err)
	}
	for _, note := range []string{`style "deepObject" is not one a manifest sends`, `"where" left out: a list of an object`, `"owners" left out: a list of an object`} {
		if !strings.Contains(string(draft), strings.ReplaceAll(note, `"`, `\"`)) { // as JSON text
			t.Errorf("the draft lacks the note %q:\n%s", note, draft)
		}
	}
	m, err := registry.Parse("tagger.json", review(t, draft))
	if err != nil {
		t.Fatalf("the reviewed draft: %v\n%s", err, draft)
	}
	list, _ := m.Op("list_items")
	if a := list.Args["tag"]; a == nil || a.Type != registry.TypeArray || a.Items.Enum[1] != "blue" || *a.MaxItems != 5 || a.Delimiter() != 0 || list.Query["tag"] != "{tag}" {
		t.Errorf("tag = %+v", a)
	}
	if a := list.Args["ids"]; a == nil || a.Items.Type != registry.TypeInteger || *a.Items.Min != 1 || a.Delimiter() != '|' {
		t.Errorf("ids = %+v", a)
	}
	if a := list.Args["fields"]; a == nil || a.Items.Pattern != "^[a-z_]+$" || *a.Items.MaxLength != 30 || a.Delimiter() != ',' {
		t.Errorf("fields = %+v", a)
	}
	if _, ok := list.Args["filter"]; ok {
		t.Errorf("a deepObject parameter was imported")
	}
	create, _ := m.Op("create_item")
	if a := create.Args["tags"]; a == nil || a.Type != registry.TypeArray || !a.Required || *a.MaxItems != 1000 || *a.Items.MaxLength != 20 {
		t.Errorf("tags = %+v", a)
	}
	if strings.Contains(create.Confirm, "{tags}") || !strings.Contains(string(create.BodyJSON), `"tags":"{tags}"`) {
		t.Errorf("confirm %q, body %s", create.Confirm, create.BodyJSON)
	}
	if probs := Lint(d, m); len(probs) > 0 {
		t.Errorf("lint: %v", probs)
	}
	f := false
	list.Args["tag"].Explode = &f // joined where the description repeats the key
	list.Args["ids"].Style = registry.StyleSpaceDelimited
	probs := fmt.Sprint(Lint(d, m))
	for _, want := range []string{`query.tag: query parameter tag is style form, explode true; arg "{tag}" is style form, explode false`,
		`query.ids: query parameter ids is style pipeDelimited, explode false; arg "{ids}" is style spaceDelimited, explode false`} {
		if !strings.Contains(probs, want) {
			t.Errorf("lint %s lacks %q", probs, want)
		}
	}
}
