package openapi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/registry"
)

// reviewed returns testdata/acmenotes.json (the reviewed import of
// acmenotes.yaml) with the edits applied (old, new pairs), parsed.
func reviewed(t *testing.T, edits ...string) *registry.Manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "acmenotes.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(s, edits[i]) {
			t.Fatalf("edit %q: not in the manifest", edits[i])
		}
		s = strings.Replace(s, edits[i], edits[i+1], 1)
	}
	m, err := registry.Parse("acmenotes.json", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLint: each disagreement with the description is found, named by op
// and field; the reviewed manifest has none.
func TestLint(t *testing.T) {
	d := load(t, "acmenotes.yaml")
	if fs := Lint(d, reviewed(t)); len(fs) != 0 {
		t.Fatalf("the reviewed manifest: %v", fs)
	}
	tests := []struct {
		name  string
		edits []string
		want  []string // one finding holds all of these
	}{
		{name: "wrong method", edits: []string{`"method": "GET",
      "path": "/v2/notebooks",`, `"method": "DELETE",
      "path": "/v2/notebooks",`},
			want: []string{`op "list_notebooks": method: DELETE is not described for /v2/notebooks (it has GET)`}},
		{name: "path typo", edits: []string{`"path": "/v2/notebooks",`, `"path": "/v2/notebook",`},
			want: []string{`op "list_notebooks": path: "/v2/notebook" is not a path of the description (nearest: "/v2/notebooks")`}},
		{name: "undeclared query key", edits: []string{`"query": { "archived": "{archived}"`, `"query": { "archive": "{archived}"`},
			want: []string{`op "list_notebooks": query.archive: "archive" is not a query parameter of GET /v2/notebooks (it declares: archived, cursor, limit)`}},
		{name: "type mismatch", edits: []string{`"limit": { "type": "integer", "description": "Notebooks per page", "default": 20, "min": 1, "max": 100 }`, `"limit": { "type": "string", "description": "Notebooks per page", "pattern": "^[0-9]+$", "max_length": 3 }`},
			want: []string{`query.limit: type mismatch: query parameter limit is an integer, arg "limit" is string`}},
		{name: "picked field absent from the answer", edits: []string{`"note_count": "number"`, `"notes_count": "number"`},
			want: []string{`op "list_notebooks": pick.fields.notes_count: "notes_count" is not in the 2xx answer's schema: no "notes_count" (it declares: archived, id, note_count, title, updated_at, url)`}},
		{name: "picked path under an object", edits: []string{`"author.id": "identifier"`, `"author.login": "identifier"`},
			want: []string{`pick.fields.author.login: "author.login" is not in the 2xx answer's schema: no "login" (it declares: display_name, id)`}},
		{name: "pick root absent", edits: []string{`"root": "notes",`, `"root": "items",`},
			want: []string{`op "list_notes": pick.root: "items" is not in the 2xx answer's schema`}},
		{name: "body member undeclared", edits: []string{`"pinned": "{pinned}" }`, `"pin": "{pinned}" }`},
			want: []string{`op "create_note": body_json.pin: "pin" is not a member the description declares here (it declares: body, pinned, priority, title)`}},
		{name: "body member of the wrong type", edits: []string{`"pinned": { "type": "boolean", "description": "Pin the note to the top" }`, `"pinned": { "type": "string", "description": "Pin the note to the top", "enum": ["yes", "no"] }`},
			want: []string{`body_json.pinned: type mismatch: member pinned is a boolean, arg "pinned" is string`}},
		{name: "enum value the description lacks", edits: []string{`"enum": ["low", "normal", "high"]`, `"enum": ["low", "normal", "urgent"]`},
			want: []string{`body_json.priority: arg "priority"'s enum value "urgent" is not one member priority allows (low, normal, high)`}},
		{name: "string arg without the enum the description has", edits: []string{`"state": { "type": "string", "description": "Which notes", "default": "published", "enum": ["draft", "published", "all"] }`, `"state": { "type": "string", "description": "Which notes", "max_length": 20 }`},
			want: []string{`query.state: query parameter state allows only draft, published, all; declare them as arg "state"'s enum`}},
		{name: "bound wider than the description's", edits: []string{`"default": 25, "min": 1, "max": 50`, `"default": 25, "min": 1, "max": 500`},
			want: []string{`query.per_page: query parameter per_page is at most 50; arg "per_page" allows more`}},
		{name: "required body member not sent", edits: []string{`"body_json": { "title": "{title}",`, `"body_json": {`, `"confirm": "Create a note titled \"{title}\" in`, `"confirm": "Create a note in`, `"title": { "type": "string", "required": true, "description": "Note title", "max_length": 200 },`, ``},
			want: []string{`op "create_note": body_json: the description requires member "title", which the template does not send`}},
		{name: "literal query value outside the enum", edits: []string{`"state": "{state}" }`, `"state": "archived" }`, `"state": { "type": "string", "description": "Which notes", "default": "published", "enum": ["draft", "published", "all"] }`, `"q": { "type": "string", "pattern": "^x$" }`, `"query": { "page"`, `"query": { "q": "{q}", "page"`},
			want: []string{`query.state: "archived" for query parameter state: the description allows only draft, published, all`}},
		{name: "paginate cursor path absent", edits: []string{`"cursor": "next_cursor"`, `"cursor": "paging.next"`},
			want: []string{`op "list_notebooks": paginate.cursor: "paging.next" is not in the 2xx answer's schema`}},
		{name: "paginate has_more of the wrong type", edits: []string{`"has_more": "has_more"`, `"has_more": "next_cursor"`},
			want: []string{`paginate.has_more: "next_cursor" is a string in the description; paging reads boolean there`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, f := range Lint(d, reviewed(t, tt.edits...)) {
				got = append(got, f.String())
			}
			for _, g := range got {
				ok := true
				for _, w := range tt.want {
					ok = ok && strings.Contains(g, w)
				}
				if ok {
					return
				}
			}
			t.Errorf("no finding holds %q; findings:\n%s", tt.want, strings.Join(got, "\n"))
		})
	}
}

// TestLintHost: a manifest whose host is under another domain than the
// description's server is a finding of the manifest as a whole.
func TestLintHost(t *testing.T) {
	d := load(t, "acmenotes.yaml")
	fs := Lint(d, reviewed(t, `"host": "api.acmenotes.example"`, `"host": "api.acmenotes.test"`))
	if len(fs) == 0 || fs[0].Field != "host" || fs[0].Op != "" {
		t.Fatalf("findings %v, want a host finding first", fs)
	}
}
