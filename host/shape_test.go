package host

import (
	"testing"

	"github.com/elevenmessenger/pinned/internal/jsonv"
	"github.com/elevenmessenger/pinned/registry"
)

func TestGlob(t *testing.T) {
	tests := []struct {
		tmpl, s string
		want    bool
	}{
		{"open", "open", true},
		{"open", "opened", false},
		{"open", "", false},
		{"{a}", "", true},
		{"{a}", "anything at all", true},
		{"is:{q}", "is:open", true},
		{"is:{q}", "is:", true},
		{"is:{q}", "xis:open", false},
		{"{a}/{b}", "x/y/z", true},
		{"{a}-x-{b}-y", "1-x-2-x-3-y", true},
		{"{a}-x-{b}-y", "1-x-2-y-3", false},
		{"query { viewer { id } }", "query { viewer { id } }", true},
		{"query { viewer { id } }", "mutation { viewer { id } }", false},
		{"query { viewer { id } }", "query { viewer { id } } ", false},
		{"a{x}b{y}c", "abc", true},
		{"a{x}b{y}c", "aXbYc", true},
		{"a{x}b{y}c", "aXbYcZ", false},
		{"{x}{y}", "ab", true},
	}
	for _, tt := range tests {
		g, err := newGlob(tt.tmpl)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.match(tt.s); got != tt.want {
			t.Errorf("glob(%q).match(%q) = %v, want %v", tt.tmpl, tt.s, got, tt.want)
		}
	}
}

func TestShape(t *testing.T) {
	args := map[string]*registry.Arg{
		"title": {Type: "string"}, "first": {Type: "integer"}, "team": {Type: "string"}, "ok": {Type: "boolean"},
	}
	tmpl := `{"query":"query Issues($first: Int) { issues(first: $first) { nodes { id } } }","variables":{"first":"{first}","team":"{team}"},"flag":true,"note":"Title: {title}","list":["{title}","x"]}`
	tv, err := jsonv.Parse([]byte(tmpl))
	if err != nil {
		t.Fatal(err)
	}
	sh, err := newShape(&tv, args)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, body string
		want       bool
	}{
		{"rendered", `{"query":"query Issues($first: Int) { issues(first: $first) { nodes { id } } }","variables":{"first":5,"team":"ENG"},"flag":true,"note":"Title: hi","list":["hi","x"]}`, true},
		{"optional members left out", `{"query":"query Issues($first: Int) { issues(first: $first) { nodes { id } } }","variables":{},"flag":true,"list":["x"]}`, true},
		{"a mutation instead of the query", `{"query":"mutation { issueCreate(input: {}) { success } }","variables":{},"flag":true,"list":["x"]}`, false},
		{"an alias added to the query", `{"query":"query Issues($first: Int) { issues(first: $first) { nodes { id: title } } }","variables":{},"flag":true,"list":["x"]}`, false},
		{"an extra member", `{"query":"query Issues($first: Int) { issues(first: $first) { nodes { id } } }","variables":{},"flag":true,"list":["x"],"operationName":"X"}`, false},
		{"an extra variable", `{"query":"query Issues($first: Int) { issues(first: $first) { nodes { id } } }","variables":{"evil":1},"flag":true,"list":["x"]}`, false},
		{"a literal changed", `{"query":"query Issues($first: Int) { issues(first: $first) { nodes { id } } }","variables":{},"flag":false,"list":["x"]}`, false},
		{"a literal member missing", `{"query":"query Issues($first: Int) { issues(first: $first) { nodes { id } } }","variables":{},"list":["x"]}`, false},
		{"wrong type for a typed arg", `{"query":"query Issues($first: Int) { issues(first: $first) { nodes { id } } }","variables":{"first":"5"},"flag":true,"list":["x"]}`, false},
		{"fraction for an integer", `{"query":"query Issues($first: Int) { issues(first: $first) { nodes { id } } }","variables":{"first":1.5},"flag":true,"list":["x"]}`, false},
		{"interpolated text keeps its literal", `{"query":"query Issues($first: Int) { issues(first: $first) { nodes { id } } }","variables":{},"flag":true,"note":"Other: hi","list":["x"]}`, false},
		{"an extra array element", `{"query":"query Issues($first: Int) { issues(first: $first) { nodes { id } } }","variables":{},"flag":true,"list":["a","x","y"]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := jsonv.Parse([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if got := sh.match(&v); got != tt.want {
				t.Fatalf("match = %v, want %v", got, tt.want)
			}
		})
	}
}
