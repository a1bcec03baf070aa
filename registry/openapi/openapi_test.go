package openapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/registry"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func load(t *testing.T, file string) *Description {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Load(file, data)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// undraft deletes the draft mark, as a reviewer does last.
func undraft(t *testing.T, draft []byte) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(draft, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["draft"]; !ok {
		t.Fatal("the draft has no draft mark")
	}
	delete(m, "draft")
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var acmeOps = []string{"getCurrentUser", "listNotebooks", "GET /notebooks/{notebook_id}/notes", "createNote"}

// TestImportDraft: a description the project never saw (testdata, in the
// shape of a published one) becomes a draft the loader refuses for its
// mark alone, and accepts once the mark is gone; what the draft proposes
// is what docs/MANIFEST.md promises.
func TestImportDraft(t *testing.T) {
	d := load(t, "acmenotes.yaml")
	draft, err := Import(d, ImportOptions{Ops: acmeOps, ID: "acmenotes"})
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "acmenotes.draft.json")
	if *update {
		if err := os.WriteFile(golden, draft, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(draft, want) {
		t.Errorf("the draft differs from %s (go test -run TestImportDraft -update rewrites it):\n%s", golden, draft)
	}

	_, err = registry.Parse("acmenotes.json", draft)
	var perr *registry.Error
	if !errors.As(err, &perr) || len(perr.Problems) != 1 || perr.Problems[0].Field != "draft" {
		t.Fatalf("the loader's verdict on the draft: %v; want one problem, the draft mark", err)
	}
	m, warns, err := registry.Check("acmenotes.json", undraft(t, draft))
	if err != nil {
		t.Fatalf("the draft without its mark is refused: %v", err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}

	checks := []struct {
		name string
		ok   bool
	}{
		{"host from the server", m.Host == "api.acmenotes.example"},
		{"base path in every path", m.Ops["list_notes"].Path == "/v2/notebooks/{notebook_id}/notes"},
		{"viewer found", m.Viewer == "get_current_user"},
		{"error message path", m.ErrorMessage == "error.message"},
		{"oauth read scopes", m.Auth.OAuth != nil && slices.Equal(m.Auth.OAuth.Scopes, []string{"notes.read", "profile"})},
		{"oauth write scopes", m.Auth.OAuth != nil && slices.Contains(m.Auth.OAuth.ScopesWrite, "notes.write")},
		{"GET is read", m.Ops["list_notebooks"].Access == registry.AccessRead},
		{"POST is write", m.Ops["create_note"].Access == registry.AccessWrite},
		{"path arg pattern from the description", m.Ops["list_notes"].Args["notebook_id"].Pattern == "^nb_[A-Za-z0-9]{12}$"},
		{"integer bounds", *m.Ops["list_notebooks"].Args["limit"].Max == 100},
		{"enum and default", slices.Equal(m.Ops["list_notes"].Args["state"].Enum, []string{"draft", "published", "all"}) && string(m.Ops["list_notes"].Args["state"].Default) == `"published"`},
		{"body member required", m.Ops["create_note"].Args["title"].Required},
		{"body max length", *m.Ops["create_note"].Args["body"].MaxLength == 20000},
		{"body kind json", m.Ops["create_note"].BodyKind() == "json"},
		{"cursor paging with has_more", m.Ops["list_notebooks"].Paginate != nil && m.Ops["list_notebooks"].Paginate.Style == registry.PaginateCursor && m.Ops["list_notebooks"].Paginate.HasMore == "has_more"},
		{"page-counted paging", m.Ops["list_notes"].Paginate != nil && m.Ops["list_notes"].Paginate.Style == registry.PaginatePageCount},
		{"list root", m.Ops["list_notebooks"].Pick.Root == "data"},
		{"classes proposed", m.Ops["list_notebooks"].Pick.Class("id") == registry.ClassIdentifier && m.Ops["list_notebooks"].Pick.Class("updated_at") == registry.ClassTime &&
			m.Ops["list_notebooks"].Pick.Class("url") == registry.ClassURL && m.Ops["list_notebooks"].Pick.Class("archived") == registry.ClassBoolean &&
			m.Ops["list_notebooks"].Pick.Class("note_count") == registry.ClassNumber && m.Ops["get_current_user"].Pick.Class("plan") == registry.ClassEnum},
		{"allOf answers read as one", m.Ops["list_notes"].Pick.Class("notebook_id") == registry.ClassIdentifier && m.Ops["list_notes"].Pick.Class("priority") == registry.ClassEnum},
		{"no free text picked", !slices.ContainsFunc(m.OpNames(), func(n string) bool {
			return slices.Contains(slices.Collect(maps.Values(m.Ops[n].Pick.Classes)), registry.ClassText)
		})},
		{"no credential picked", m.Ops["get_current_user"].Pick.Class("api_token") == ""},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: not so in the draft", c.name)
		}
	}
	var mark struct{ Draft registry.Draft }
	if err := json.Unmarshal(draft, &mark); err != nil {
		t.Fatal(err)
	}
	if got := mark.Draft.TextOff["list_notebooks"]; !slices.Equal(got, []string{"title"}) {
		t.Errorf("text_off of list_notebooks = %v, want [title]", got)
	}
	if !strings.Contains(mark.Draft.Source, "acmenotes.yaml") {
		t.Errorf("source %q does not name the file", mark.Draft.Source)
	}
	// The confirm sentence names every arg the request always carries.
	c := m.Ops["create_note"].Confirm
	for _, a := range []string{"{notebook_id}", "{title}", "{priority}"} {
		if !strings.Contains(c, a) {
			t.Errorf("confirm %q does not name %s", c, a)
		}
	}
	// A reviewed draft agrees with its own description.
	if fs := Lint(d, m); len(fs) != 0 {
		t.Errorf("lint of the imported draft: %v", fs)
	}
}

func TestImportRefuses(t *testing.T) {
	d := load(t, "acmenotes.yaml")
	tests := []struct {
		name string
		ops  []string
		want string
	}{
		{"no ops", nil, "no operations given"},
		{"unknown operationId", []string{"listNotebok"}, `did you mean "listNotebooks"?`},
		{"unknown method and path", []string{"DELETE /notebooks"}, "no operation DELETE /notebooks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Import(d, ImportOptions{Ops: tt.ops})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	swagger := []byte(`{"swagger": "2.0", "info": {"title": "Old", "version": "1"}, "host": "api.old.example", "basePath": "/v1",
		"paths": {"/things/{id}.json": {"get": {"operationId": "getThing", "parameters": [{"name": "id", "in": "path", "required": true, "type": "string"}], "responses": {"200": {"description": "ok"}}}},
		"/things/": {"get": {"operationId": "listThings", "responses": {"200": {"description": "ok"}}}}}}`)
	sd, err := Load("old.json", swagger)
	if err != nil {
		t.Fatal(err)
	}
	for op, want := range map[string]string{"getThing": "puts text beside a placeholder", "listThings": `the path ends in "/"`} {
		if _, err := Import(sd, ImportOptions{Ops: []string{op}}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", op, err, want)
		}
	}
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name, doc, want string // want: an error fragment, "" for success
		host            string
	}{
		{name: "openapi 3.1 json", doc: `{"openapi": "3.1.0", "info": {"title": "T", "version": "1"}, "servers": [{"url": "https://api.t.example/v1/"}], "paths": {"/a": {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": ["object", "null"], "properties": {"id": {"type": "string"}}}}}}}}}}}`, host: "api.t.example"},
		{name: "swagger 2.0 converted", doc: `{"swagger": "2.0", "info": {"title": "T", "version": "1"}, "host": "api.old.example", "basePath": "/api", "paths": {"/a": {"get": {"responses": {"200": {"description": "ok"}}}}}}`, host: "api.old.example"},
		{name: "yaml", doc: "openapi: 3.0.0\ninfo: {title: T, version: '1'}\nservers: [{url: 'https://y.example'}]\npaths:\n  /a:\n    get:\n      responses:\n        '200': {description: ok}\n", host: "y.example"},
		{name: "server variables take their defaults", doc: `{"openapi": "3.0.0", "info": {"title": "T", "version": "1"}, "servers": [{"url": "https://{region}.v.example", "variables": {"region": {"default": "us"}}}], "paths": {"/a": {"get": {"responses": {"200": {"description": "ok"}}}}}}`, host: "us.v.example"},
		{name: "tuple items read as their union", doc: `{"swagger": "2.0", "info": {"title": "T", "version": "1"}, "host": "s.example", "paths": {"/a": {"get": {"responses": {"200": {"description": "ok", "schema": {"type": "object", "properties": {"u": {"items": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"type": "object", "properties": {"b": {"type": "string"}}}]}}}}}}}}}`, host: "s.example"},
		{name: "external reference refused", doc: `{"openapi": "3.0.0", "info": {"title": "T", "version": "1"}, "paths": {"/a": {"get": {"responses": {"200": {"$ref": "https://evil.example/r.json"}}}}}}`, want: "external"},
		{name: "not openapi", doc: `{"hello": "world"}`, want: "not an OpenAPI description"},
		{name: "not json or yaml", doc: "{[", want: "neither JSON nor YAML"},
		{name: "no paths", doc: `{"openapi": "3.0.0", "info": {"title": "T", "version": "1"}, "paths": {}}`, want: "no paths"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Load("x", []byte(tt.doc))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Load: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tt.want))):
				t.Fatalf("Load: err = %v, want %q", err, tt.want)
			case tt.want == "" && d.Host() != tt.host:
				t.Errorf("host %q, want %q", d.Host(), tt.host)
			}
		})
	}
}

// FuzzLoad: any text is a description or an error, never a panic, and an
// accepted one lists and imports without one either.
func FuzzLoad(f *testing.F) {
	for _, name := range []string{"acmenotes.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"swagger": "2.0", "info": {"title": "T", "version": "1"}, "host": "h.example", "paths": {"/a/{b}": {"get": {"parameters": [{"name": "b", "in": "path", "required": true, "type": "integer"}], "responses": {"200": {"description": "ok", "schema": {"items": [{"type": "object"}]}}}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Load("f", data)
		if err != nil {
			return
		}
		var ops []string
		for _, o := range d.Operations() {
			ops = append(ops, o.Method+" "+o.Path)
		}
		if len(ops) > 0 {
			_, _ = Import(d, ImportOptions{Ops: ops[:1]})
		}
	})
}
