package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// acme returns testdata/acme.json, a valid manifest using every feature,
// with each old→new pair of edits applied. Each old text must occur
// exactly once, so a stale edit fails the test instead of testing nothing.
func acme(t *testing.T, edits ...string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/acme.json")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for i := 0; i+1 < len(edits); i += 2 {
		if n := strings.Count(s, edits[i]); n != 1 {
			t.Fatalf("edit %q occurs %d times in testdata/acme.json, want 1", edits[i], n)
		}
		s = strings.Replace(s, edits[i], edits[i+1], 1)
	}
	return []byte(s)
}

// problems parses and returns the problem lines, failing the test if
// Parse accepts or returns anything but an *Error.
func problems(t *testing.T, file string, data []byte) []string {
	t.Helper()
	m, err := Parse(file, data)
	if err == nil {
		t.Fatalf("Parse accepted %s: %+v", file, m)
	}
	var e *Error
	if !errors.As(err, &e) || len(e.Problems) == 0 {
		t.Fatalf("Parse error %T %v, want a non-empty *Error", err, err)
	}
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
		if p.File != file || p.Msg == "" {
			t.Errorf("problem %+v: want File %q and a message", p, file)
		}
	}
	return lines
}

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		name    string
		file    string   // default "acme.json"
		edits   []string // old, new pairs applied to testdata/acme.json
		doc     string   // the whole document instead of edits
		fixture string   // a file under testdata instead of edits
		want    []string // one problem line must contain all of these
		only    bool     // and it is the only problem
	}{
		{name: "graphql brace slip in a Linear query", fixture: "bad/linear.json",
			want: []string{"linear.json:65:18: ", `op "list_issues": `, "body_json.query: ", `"{nodes" starts a placeholder but "nodes" is not a declared arg`, `"{ nodes"`}},
		{name: "brace slip in acme graphql", edits: []string{"nodes { id title }", "nodes {id title }"},
			want: []string{"acme.json:", `op "search": body_json.query: "{id" starts a placeholder`, "declared args: first"}},
		{name: "draft mark", edits: []string{`"viewer": "get_viewer",`, `"viewer": "get_viewer", "draft": {"source": "openapi: acme.yaml", "text_off": {"get_viewer": ["bio"]}},`},
			want: []string{"acme.json:22:", "draft: this manifest is a draft written by `pinned registry import` and not reviewed yet", `delete "draft"`}, only: true},
		{name: "draft mark of an unknown shape", edits: []string{`"viewer": "get_viewer",`, `"viewer": "get_viewer", "draft": true,`},
			want: []string{"acme.json:22:", "draft: "}},
		{name: "unknown top-level field", edits: []string{`"viewer": "get_viewer",`, `"viewer": "get_viewer", "colour": "red",`},
			want: []string{"acme.json:22:", `colour: unknown field "colour" (allowed: auth, description,`}},
		{name: "paginate on a write op", edits: []string{`"body_form": { "amount"`, `"paginate": { "style": "cursor", "arg": "note", "cursor": "next", "max_pages": 2 }, "body_form": { "amount"`},
			want: []string{`op "add_charge": paginate: only read ops page`}},
		{name: "paginate style unknown", edits: []string{`"style": "cursor", "arg": "cursor"`, `"style": "offset", "arg": "cursor"`},
			want: []string{`op "list_items": paginate.style: "offset" is not a paging style`}},
		{name: "paginate style missing", edits: []string{`"style": "cursor", "arg": "cursor"`, `"arg": "cursor"`},
			want: []string{`op "list_items": paginate.style: required`}},
		{name: "paginate arg undeclared", edits: []string{`"style": "cursor", "arg": "cursor"`, `"style": "cursor", "arg": "after"`},
			want: []string{`op "list_items": paginate.arg: "after" is not a declared arg (declared args: cursor, limit, project, state)`}},
		{name: "paginate arg missing", edits: []string{`"style": "cursor", "arg": "cursor",`, `"style": "cursor",`},
			want: []string{`op "list_items": paginate.arg: required`}},
		{name: "paginate arg required", edits: []string{`"style": "cursor", "arg": "cursor"`, `"style": "cursor", "arg": "project"`},
			want: []string{`paginate.arg: arg "project" is required; the cursor arg is optional`}},
		{name: "paginate arg with default", edits: []string{`"style": "cursor", "arg": "cursor"`, `"style": "cursor", "arg": "state"`},
			want: []string{`paginate.arg: arg "state" has a default`}},
		{name: "paginate arg secret", edits: []string{`"pattern": "^[A-Za-z0-9]+$", "max_length": 64 }`, `"pattern": "^[A-Za-z0-9]+$", "max_length": 64, "secret": true }`},
			want: []string{`paginate.arg: arg "cursor" is secret`}},
		{name: "paginate cursor arg without pattern", edits: []string{`"cursor": { "type": "string", "pattern": "^[A-Za-z0-9]+$", "max_length": 64 }`, `"cursor": { "type": "string", "max_length": 64 }`},
			want: []string{`paginate.arg: arg "cursor" declares no pattern`}},
		{name: "paginate cursor arg of the wrong type", edits: []string{`"cursor": { "type": "string", "pattern": "^[A-Za-z0-9]+$", "max_length": 64 }`, `"cursor": { "type": "integer", "max": 9 }`},
			want: []string{`paginate.arg: arg "cursor" is "integer"; style "cursor" carries a string`}},
		{name: "paginate page_count arg without max", edits: []string{`"cursor": { "type": "string", "pattern": "^[A-Za-z0-9]+$", "max_length": 64 }`, `"cursor": { "type": "integer", "min": 1 }`, `"style": "cursor", "arg": "cursor", "cursor": "meta.next", "has_more": "meta.more"`, `"style": "page_count", "arg": "cursor", "page": "meta.page", "total_pages": "meta.pages"`},
			want: []string{`paginate.arg: arg "cursor" declares no max`}},
		{name: "paginate link arg not a whole query value", edits: []string{`"cursor": "{cursor}" }`, `"cursor": "p{cursor}" }`, `"style": "cursor", "arg": "cursor", "cursor": "meta.next", "has_more": "meta.more"`, `"style": "link", "arg": "cursor"`},
			want: []string{`paginate.arg: with style "link", arg "cursor" must be the whole template of exactly one query key`, "it is of 0"}},
		// Red team (docs/SECURITY.md, "The red team"): a manifest by PR
		// must not let the provider's cursor carry unbounded text or
		// change what is asked.
		{name: "redteam paginate cursor arg without max_length", edits: []string{`"cursor": { "type": "string", "pattern": "^[A-Za-z0-9]+$", "max_length": 64 }`, `"cursor": { "type": "string", "pattern": "^[A-Za-z0-9]+$" }`},
			want: []string{`paginate.arg: arg "cursor" needs a max_length of at most 1024`, "could carry 4096"}},
		{name: "redteam paginate cursor arg with a huge max_length", edits: []string{`"pattern": "^[A-Za-z0-9]+$", "max_length": 64 }`, `"pattern": "^[A-Za-z0-9]+$", "max_length": 65536 }`},
			want: []string{`paginate.arg: arg "cursor" needs a max_length of at most 1024`}},
		{name: "redteam paginate arg spliced into a query value", edits: []string{`"cursor": "{cursor}" }`, `"cursor": "{cursor}", "q": "project:x after:{cursor}" }`},
			want: []string{`op "list_items": query.q: uses paginate arg "cursor" inside "project:x after:{cursor}"`, "whole value"}},
		{name: "redteam paginate arg spliced into a GraphQL variable", edits: []string{
			`"args": { "first": { "type": "integer", "min": 1, "max": 50, "default": 10 } },`, `"args": { "first": { "type": "integer", "min": 1, "max": 50, "default": 10 }, "after": { "type": "string", "pattern": "^[a-z]+$", "max_length": 32 } },`,
			`"variables": { "first": "{first}" }`, `"variables": { "first": "{first}", "filter": "after:{after}" }`,
			`"pick": { "root": "data.items.nodes", "fields": { "id": "identifier", "title": "text" } }`, `"pick": { "root": "data.items.nodes", "fields": { "id": "identifier", "title": "text" } }, "paginate": { "style": "cursor", "arg": "after", "cursor": "data.items.end", "max_pages": 3 }`},
			want: []string{`op "search": body_json.variables.filter: uses paginate arg "after" inside "after:{after}"`}},
		{name: "paginate cursor path missing", edits: []string{`"cursor": "meta.next", `, ``},
			want: []string{`op "list_items": paginate.cursor: required with style "cursor"`}},
		{name: "paginate field of another style", edits: []string{`"has_more": "meta.more"`, `"has_more": "meta.more", "total_pages": "meta.pages"`},
			want: []string{`op "list_items": paginate.total_pages: style "cursor" takes no total_pages`}},
		{name: "paginate last_item without has_more", edits: []string{`"style": "cursor", "arg": "cursor", "cursor": "meta.next", "has_more": "meta.more"`, `"style": "last_item", "arg": "cursor", "last_item": "id"`},
			want: []string{`op "list_items": paginate.has_more: required with style "last_item"`}},
		{name: "paginate bad dot path", edits: []string{`"cursor": "meta.next"`, `"cursor": "meta..next"`},
			want: []string{`op "list_items": paginate.cursor: "meta..next" is not a dot path`}},
		{name: "paginate max_pages missing", edits: []string{`, "max_pages": 5 }`, ` }`},
			want: []string{`op "list_items": paginate.max_pages: required`}},
		{name: "paginate max_pages over the bound", edits: []string{`"max_pages": 5`, `"max_pages": 101`},
			want: []string{`op "list_items": paginate.max_pages: 101 is out of range; want 1 to 100`}},
		{name: "paginate unknown field", edits: []string{`"max_pages": 5`, `"max_pages": 5, "next_url": "x"`},
			want: []string{`op "list_items": paginate.next_url: unknown field "next_url"`}},
		{name: "unknown op field", edits: []string{`"path": "/v1/me",`, `"path": "/v1/me", "timeout": 5,`},
			want: []string{`op "get_viewer": timeout: unknown field "timeout"`, "method, paginate, path, pick"}},
		{name: "field names are case-sensitive", edits: []string{`"summary": "Charge the account"`, `"Summary": "Charge the account"`},
			want: []string{`op "add_charge": Summary: unknown field "Summary"`}},
		{name: "duplicate top-level key", edits: []string{`"name": "Acme",`, `"name": "Acme", "name": "Evil",`},
			want: []string{"acme.json:4:", `name: duplicate key "name" (first at line 4, column 3)`}},
		{name: "duplicate key inside body_json", edits: []string{`"urgent": "{urgent}",`, `"urgent": "{urgent}", "urgent": true,`},
			want: []string{`op "create_item": body_json.flags.urgent: duplicate key "urgent"`}},
		{name: "duplicate key spelled with an escape", edits: []string{`"id": "acme",`, `"id": "acme", "\u0069d": "acme",`},
			want: []string{`id: duplicate key "id"`}},
		{name: "trailing data", edits: []string{"\n  }\n}\n", "\n  }\n}\n{}\n"},
			want: []string{"acme.json:87:1: trailing data after the manifest's closing brace"}},
		{name: "not JSON", edits: []string{`"manifest": 1,`, `"manifest": 1,,`},
			want: []string{"acme.json:2:17: not valid JSON"}},
		{name: "truncated", doc: `{"manifest": 1, "id": "acme"`,
			want: []string{"acme.json:1:29: not valid JSON: unexpected end of file"}},
		{name: "top level not an object", doc: `[]`, want: []string{"acme.json:1:1: want an object, got an array"}},
		{name: "too large", doc: "{" + strings.Repeat(" ", MaxManifestSize) + "}",
			want: []string{"acme.json: file is 262146 bytes; a manifest is at most 262144 bytes"}},
		{name: "not UTF-8", edits: []string{`"name": "Acme"`, "\"name\": \"Acme\xff\""}, want: []string{"acme.json: not valid UTF-8"}},
		{name: "format version", edits: []string{`"manifest": 1,`, `"manifest": 2,`}, want: []string{"acme.json:2:15: manifest: format version 2 is not supported"}},
		{name: "manifest missing", edits: []string{`"manifest": 1,`, ``}, want: []string{`acme.json:1:1: manifest: required: "manifest": 1`}},
		{name: "wrong JSON type", edits: []string{`"min": 1, "max": 100`, `"min": "1", "max": 100`},
			want: []string{`op "list_items": args.limit.min: want a number, got a string`}},
		{name: "integer field with a fraction", edits: []string{`"max_length": 40`, `"max_length": 40.5`},
			want: []string{`op "list_items": args.project.max_length: want an integer (32-bit, no fraction or exponent), got 40.5`}},
		{name: "null outside body_json", edits: []string{`"pick": { "fields": { "id": "identifier", "name": "text" } }`, `"pick": null`},
			want: []string{`op "get_viewer": pick: want an object, got null`}},
		{name: "id differs from file name", file: "testdata/widgets.json", want: []string{`widgets.json:3:9: id: "acme" must equal the file name without .json`}},
		{name: "id syntax", edits: []string{`"id": "acme",`, `"id": "Acme-1",`}, file: "Acme-1.json", want: []string{`id: "Acme-1" must match ^[a-z][a-z0-9]{1,30}$`}},
		{name: "name too long", edits: []string{`"name": "Acme",`, `"name": "` + strings.Repeat("é", 65) + `",`}, want: []string{"name: is 65 characters; at most 64"}},
		{name: "docs not https", edits: []string{`"https://docs.acme.example/api"`, `"http://docs.acme.example/api"`},
			want: []string{`docs: "http://docs.acme.example/api" must be an https:// URL`}},
		{name: "web_hosts with a scheme", edits: []string{`"host": "api.acme.example",`, `"host": "api.acme.example", "web_hosts": ["https://acme.example"],`},
			want: []string{"web_hosts: host 1:", "has a scheme"}},
		{name: "web_hosts twice", edits: []string{`"host": "api.acme.example",`, `"host": "api.acme.example", "web_hosts": ["acme.example", "acme.example"],`},
			want: []string{`web_hosts: "acme.example" is listed twice`}},
		{name: "web_hosts over 8", edits: []string{`"host": "api.acme.example",`, `"host": "api.acme.example", "web_hosts": ["a.ex", "b.ex", "c.ex", "d.ex", "e.ex", "f.ex", "g.ex", "h.ex", "i.ex"],`},
			want: []string{"web_hosts: has 9 hosts; at most 8"}},
		{name: "host with scheme", edits: []string{`"host": "api.acme.example"`, `"host": "https://api.acme.example"`},
			want: []string{"acme.json:7:11: host:", "has a scheme", `write the bare lower-case DNS name`}},
		{name: "host with port", edits: []string{`"host": "api.acme.example"`, `"host": "api.acme.example:8443"`}, want: []string{"host:", "has a port"}},
		{name: "host with path", edits: []string{`"host": "api.acme.example"`, `"host": "api.acme.example/v1"`}, want: []string{"host:", "has a path"}},
		{name: "host with userinfo", edits: []string{`"host": "api.acme.example"`, `"host": "me@api.acme.example"`}, want: []string{"host:", "has userinfo"}},
		{name: "host IPv4 literal", edits: []string{`"host": "api.acme.example"`, `"host": "127.0.0.1"`}, want: []string{"host:", "is an IP literal"}},
		{name: "host IPv6 literal", edits: []string{`"host": "api.acme.example"`, `"host": "[::1]"`}, want: []string{"host:", "is an IP literal"}},
		{name: "host numeric last label", edits: []string{`"host": "api.acme.example"`, `"host": "10.0.0x1.7"`}, want: []string{"host:", "is an IP literal (its last label is numeric)"}},
		{name: "host upper case", edits: []string{`"host": "api.acme.example"`, `"host": "API.acme.example"`}, want: []string{"host:", "is not lower-case"}},
		{name: "host trailing dot", edits: []string{`"host": "api.acme.example"`, `"host": "api.acme.example."`}, want: []string{"host:", "has a trailing dot"}},
		{name: "host single label", edits: []string{`"host": "api.acme.example"`, `"host": "localhost"`}, want: []string{"host:", "has no dot"}},
		{name: "host bad label", edits: []string{`"host": "api.acme.example"`, `"host": "api_x.acme.example"`}, want: []string{"host:", `has the label "api_x"`}},
		{name: "unknown auth scheme", edits: []string{`"scheme": "bearer"`, `"scheme": "digest"`},
			want: []string{`auth.scheme: "digest" is not a scheme; want "bearer", "none", "header", "basic" or "template"`}},
		{name: "basic without its user part", edits: []string{`"scheme": "bearer"`, `"scheme": "basic"`},
			want: []string{`auth.user: required with scheme "basic"`}, only: true},
		{name: "basic user without a label", edits: []string{`"scheme": "bearer"`, `"scheme": "basic", "user": {"label": ""}`},
			want: []string{`auth.user.label: required`}, only: true},
		{name: "basic suffix with a colon", edits: []string{`"scheme": "bearer"`, `"scheme": "basic", "user": {"label": "Email", "suffix": "/token:x"}`},
			want: []string{`auth.user.suffix: "/token:x": a suffix is at most 32 printable ASCII characters without ":"`}, only: true},
		{name: "user part with bearer", edits: []string{`"scheme": "bearer"`, `"scheme": "bearer", "user": {"label": "Email"}`},
			want: []string{`auth.user: only with scheme "basic" or "template"`}, only: true},
		{name: "suffix with template", edits: []string{`"scheme": "bearer"`, `"scheme": "template", "template": "OAuth k=\"{user}\", t=\"{secret}\"", "user": {"label": "Key", "suffix": "/x"}`},
			want: []string{`auth.user.suffix: only with scheme "basic"`}, only: true},
		{name: "template missing", edits: []string{`"scheme": "bearer"`, `"scheme": "template", "user": {"label": "Key"}`},
			want: []string{`auth.template: required with scheme "template"`}, only: true},
		{name: "template without the secret", edits: []string{`"scheme": "bearer"`, `"scheme": "template", "template": "OAuth k={user}", "user": {"label": "Key"}`},
			want: []string{`auth.template: "OAuth k={user}" must hold {user} and {secret} exactly once each`}, only: true},
		{name: "template with another placeholder", edits: []string{`"scheme": "bearer"`, `"scheme": "template", "template": "OAuth k={user}, t={secret}, h={host}", "user": {"label": "Key"}`},
			want: []string{`auth.template: "OAuth k={user}, t={secret}, h={host}": the only placeholders are {user} and {secret}`}},
		{name: "template starting with a placeholder", edits: []string{`"scheme": "bearer"`, `"scheme": "template", "template": "{user}:{secret}", "user": {"label": "Key"}`},
			want: []string{`auth.template: "{user}:{secret}" must start with the scheme's name`}, only: true},
		{name: "template with bearer", edits: []string{`"scheme": "bearer"`, `"scheme": "bearer", "template": "OAuth {user} {secret}"`},
			want: []string{`auth.template: only with scheme "template"`}, only: true},
		{name: "prefix with bearer", edits: []string{`"scheme": "bearer"`, `"scheme": "bearer", "prefix": "Bot "`},
			want: []string{`auth.prefix: only with scheme "none"`}, only: true},
		{name: "prefix glued to the token", edits: []string{`"scheme": "bearer"`, `"scheme": "none", "prefix": "Bot"`},
			want: []string{`auth.prefix: "Bot" must end with a space or "="`}, only: true},
		{name: "prefix that is bearer", edits: []string{`"scheme": "bearer"`, `"scheme": "none", "prefix": "Bearer "`},
			want: []string{`auth.prefix: "Bearer ": use scheme "bearer" or "basic" instead of a prefix`}, only: true},
		{name: "prefix with a quote", edits: []string{`"scheme": "bearer"`, `"scheme": "none", "prefix": "Token t=\""`},
			want: []string{`auth.prefix: "Token t=\"": a prefix is at most 32 printable ASCII characters, without braces, quotes or backslashes`}, only: true},
		{name: "tenant host without tenant", edits: []string{`"host": "api.acme.example"`, `"host": "{tenant}.acme.example"`},
			want: []string{`tenant: required with a per-connection host`}, only: true},
		{name: "tenant under a top-level domain", edits: []string{`"host": "api.acme.example"`, `"host": "{tenant}.example", "tenant": {"label": "Your site"}`},
			want: []string{`host: "{tenant}.example": the tenant's label must sit under a registered domain of at least two labels`}, only: true},
		{name: "tenant placeholder not first", edits: []string{`"host": "api.acme.example"`, `"host": "api.{tenant}.acme.example", "tenant": {"label": "Your site"}`},
			want: []string{`host: "api.{tenant}.acme.example": a per-connection host is written {tenant}.<registered domain>`}},
		{name: "tenant placeholder of another name", edits: []string{`"host": "api.acme.example"`, `"host": "{site}.acme.example", "tenant": {"label": "Your site"}`},
			want: []string{`host: "{site}.acme.example": a per-connection host is written {tenant}.<registered domain>`}},
		{name: "tenant pattern host with a bad rest", edits: []string{`"host": "api.acme.example"`, `"host": "{tenant}.acme_x.example", "tenant": {"label": "Your site"}`},
			want: []string{`host: after {tenant}.: `, `"acme_x"`}, only: true},
		{name: "tenant on a fixed host", edits: []string{`"host": "api.acme.example"`, `"host": "api.acme.example", "tenant": {"label": "Your site"}`},
			want: []string{`tenant: only with a per-connection host`}, only: true},
		{name: "tenant without a label", edits: []string{`"host": "api.acme.example"`, `"host": "{tenant}.acme.example", "tenant": {"label": ""}`},
			want: []string{`tenant.label: required`}, only: true},
		{name: "tenant pattern not anchored", edits: []string{`"host": "api.acme.example"`, `"host": "{tenant}.acme.example", "tenant": {"label": "Your site", "pattern": "[a-z]+"}`},
			want: []string{`tenant.pattern: `}, only: true},
		{name: "array arg in confirm", edits: []string{`"urgent": { "type": "boolean", "default": false },`, `"urgent": { "type": "boolean", "default": false }, "tags": { "type": "array", "items": { "type": "string", "enum": ["a", "b"] } },`, `"tags": ["bot", null]`, `"tags": "{tags}"`, `in {project}?`, `in {project} with {tags}?`},
			want: []string{`op "create_item": confirm: names array arg "tags"`}, only: true},
		{name: "array arg inside a text", edits: []string{`"urgent": { "type": "boolean", "default": false },`, `"urgent": { "type": "boolean", "default": false }, "tags": { "type": "array", "items": { "type": "string", "enum": ["a", "b"] } },`, `"tags": ["bot", null]`, `"tags": "tag:{tags}"`},
			want: []string{`op "create_item": body_json.tags: array arg "tags" is used inside "tag:{tags}"`}, only: true},
		{name: "array arg inside a query text", edits: []string{`"state": { "type": "string", "enum": ["open", "closed"], "default": "open" },`, `"state": { "type": "string", "enum": ["open", "closed"], "default": "open" }, "labels": { "type": "array", "items": { "type": "string", "pattern": "^[a-z]+$", "max_length": 20 } },`, `"expand[]": "labels"`, `"expand[]": "labels", "q": "label:{labels}"`},
			want: []string{`op "list_items": query.q: array arg "labels" is used inside "label:{labels}"`}, only: true},
		{name: "array arg in a form body", edits: []string{`"amount": { "type": "integer", "required": true, "min": 1 }`, `"amount": { "type": "integer", "required": true, "min": 1 }, "tags": { "type": "array", "items": { "type": "string", "enum": ["a"] } }`, `"amount": "{amount}"`, `"amount": "{amount}", "tags": "{tags}"`},
			want: []string{`array arg "tags" cannot go in body_form`}, only: true},
		{name: "array arg in the path", edits: []string{`"project": { "type": "string", "required": true },`, `"project": { "type": "array", "required": true, "items": { "type": "string" } },`},
			want: []string{`op "create_item": args.project: is a path arg of type "array"`}},
		{name: "array without items", edits: []string{`"state": { "type": "string", "enum": ["open", "closed"], "default": "open" },`, `"state": { "type": "string", "enum": ["open", "closed"], "default": "open" }, "labels": { "type": "array" },`, `"expand[]": "labels"`, `"expand[]": "labels", "labels": "{labels}"`},
			want: []string{`op "list_items": args.labels.items: required for an array arg`}, only: true},
		{name: "array of arrays", edits: []string{`"state": { "type": "string", "enum": ["open", "closed"], "default": "open" },`, `"state": { "type": "string", "enum": ["open", "closed"], "default": "open" }, "labels": { "type": "array", "items": { "type": "array", "items": { "type": "string" } } },`, `"expand[]": "labels"`, `"expand[]": "labels", "labels": "{labels}"`},
			want: []string{`op "list_items": args.labels.items.type: an array's items are strings, integers, numbers or booleans, not arrays`}, only: true},
		{name: "array max_items out of range", edits: []string{`"state": { "type": "string", "enum": ["open", "closed"], "default": "open" },`, `"state": { "type": "string", "enum": ["open", "closed"], "default": "open" }, "labels": { "type": "array", "items": { "type": "string", "pattern": "^[a-z]+$", "max_length": 20 }, "max_items": 0 },`, `"expand[]": "labels"`, `"expand[]": "labels", "labels": "{labels}"`},
			want: []string{`op "list_items": args.labels.max_items: 0 is out of range; want 1 to 1000`}, only: true},
		{name: "array with a default", edits: []string{`"state": { "type": "string", "enum": ["open", "closed"], "default": "open" },`, `"state": { "type": "string", "enum": ["open", "closed"], "default": "open" }, "labels": { "type": "array", "items": { "type": "string", "pattern": "^[a-z]+$", "max_length": 20 }, "default": ["a"] },`, `"expand[]": "labels"`, `"expand[]": "labels", "labels": "{labels}"`},
			want: []string{`op "list_items": args.labels.default: an array arg takes no default`}},
		{name: "array with a pattern of its own", edits: []string{`"state": { "type": "string", "enum": ["open", "closed"], "default": "open" },`, `"state": { "type": "string", "enum": ["open", "closed"], "default": "open" }, "labels": { "type": "array", "items": { "type": "string", "pattern": "^[a-z]+$", "max_length": 20 }, "pattern": "^[a-z]+$" },`, `"expand[]": "labels"`, `"expand[]": "labels", "labels": "{labels}"`},
			want: []string{`op "list_items": args.labels.pattern: an array arg declares pattern on its items`}, only: true},
		{name: "item with a description", edits: []string{`"state": { "type": "string", "enum": ["open", "closed"], "default": "open" },`, `"state": { "type": "string", "enum": ["open", "closed"], "default": "open" }, "labels": { "type": "array", "items": { "type": "string", "enum": ["a"], "description": "a label" } },`, `"expand[]": "labels"`, `"expand[]": "labels", "labels": "{labels}"`},
			want: []string{`op "list_items": args.labels.items.description: items take a type and constraints only`}, only: true},
		{name: "array style unknown", edits: []string{`"state": { "type": "string", "enum": ["open", "closed"], "default": "open" },`, `"state": { "type": "string", "enum": ["open", "closed"], "default": "open" }, "labels": { "type": "array", "items": { "type": "string", "pattern": "^[a-z]+$", "max_length": 20 }, "style": "deepObject", "explode": false },`, `"expand[]": "labels"`, `"expand[]": "labels", "labels": "{labels}"`},
			want: []string{`op "list_items": args.labels.style: "deepObject" is not a style`}, only: true},
		{name: "array delimited style exploded", edits: []string{`"state": { "type": "string", "enum": ["open", "closed"], "default": "open" },`, `"state": { "type": "string", "enum": ["open", "closed"], "default": "open" }, "labels": { "type": "array", "items": { "type": "string", "pattern": "^[a-z]+$", "max_length": 20 }, "style": "pipeDelimited" },`, `"expand[]": "labels"`, `"expand[]": "labels", "labels": "{labels}"`},
			want: []string{`op "list_items": args.labels.explode: style "pipeDelimited" joins the values in one pair: it needs "explode": false`}, only: true},
		{name: "array style in a JSON body", edits: []string{`"urgent": { "type": "boolean", "default": false },`, `"urgent": { "type": "boolean", "default": false }, "tags": { "type": "array", "items": { "type": "string", "enum": ["a", "b"] }, "explode": false },`, `"tags": ["bot", null]`, `"tags": "{tags}"`},
			want: []string{`op "create_item": args.tags.style: array arg "tags" is not sent in a query`}, only: true},
		{name: "style on a string arg", edits: []string{`"state": { "type": "string", "enum": ["open", "closed"], "default": "open" },`, `"state": { "type": "string", "enum": ["open", "closed"], "default": "open", "explode": false },`},
			want: []string{`op "list_items": args.state.style: only array args take style and explode`}, only: true},
		{name: "array as a target", edits: []string{`"urgent": { "type": "boolean", "default": false },`, `"urgent": { "type": "boolean", "default": false }, "tags": { "type": "array", "items": { "type": "string", "enum": ["a", "b"] } },`, `"tags": ["bot", null]`, `"tags": "{tags}"`, `"method": "POST",
      "path": "/v1/projects/{project}/items",`, `"method": "POST", "target": ["tags"],
      "path": "/v1/projects/{project}/items",`},
			want: []string{`op "create_item": target[0]: names array arg "tags"`}, only: true},
		{name: "array as a paginate arg", edits: []string{`"cursor": { "type": "string", "pattern": "^[A-Za-z0-9]+$", "max_length": 64 }`, `"cursor": { "type": "array", "items": { "type": "string", "pattern": "^[A-Za-z0-9]+$", "max_length": 64 } }`},
			want: []string{`op "list_items": paginate.arg: `}},
		{name: "op header the host owns", edits: []string{`"path": "/v1/me",`, `"path": "/v1/me", "headers": {"Cookie": "a=b"},`},
			want: []string{`op "get_viewer": headers.Cookie: "Cookie" is set by the host`}, only: true},
		{name: "op header authorization", edits: []string{`"path": "/v1/me",`, `"path": "/v1/me", "headers": {"Authorization": "Basic eA=="},`},
			want: []string{`op "get_viewer": headers.Authorization: "Authorization" is set by the host`}, only: true},
		{name: "op header the manifest has", edits: []string{`"path": "/v1/me",`, `"path": "/v1/me", "headers": {"accept": "text/plain"},`},
			want: []string{`op "get_viewer": headers.accept: "accept" is one of the manifest's headers already`}, only: true},
		{name: "op header with a placeholder", edits: []string{`"path": "/v1/me",`, `"path": "/v1/me", "headers": {"X-Version": "{v}"},`},
			want: []string{`op "get_viewer": headers.X-Version: value "{v}" looks like a placeholder`}, only: true},
		{name: "header scheme without header", edits: []string{`"scheme": "bearer"`, `"scheme": "header"`},
			want: []string{`auth.header: required with scheme "header"`}},
		{name: "header name with bearer scheme", edits: []string{`"scheme": "bearer"`, `"scheme": "bearer", "header": "X-Key"`},
			want: []string{`auth.header: only with scheme "header"`}},
		{name: "auth header is host-owned", edits: []string{`"scheme": "bearer"`, `"scheme": "header", "header": "Cookie"`},
			want: []string{`auth.header: "Cookie" is owned by the host; name the header the provider reads the key from`}},
		{name: "auth header is Authorization", edits: []string{`"scheme": "bearer"`, `"scheme": "header", "header": "authorization"`},
			want: []string{`auth.header: "authorization" is set by the host; for a key in Authorization use scheme "bearer"`}},
		{name: "oauth token_url missing", edits: []string{`"token_url": "https://api.acme.example/oauth/token",`, ``},
			want: []string{"auth.oauth.token_url: required: an https:// URL"}},
		{name: "oauth revoke_url on a foreign host", edits: []string{`"token_url": "https://api.acme.example/oauth/token",`, `"token_url": "https://api.acme.example/oauth/token", "revoke_url": "https://evil.example/oauth/revoke",`},
			want: []string{`auth.oauth.revoke_url: host "evil.example" is neither the API host "api.acme.example" nor the token_url host "api.acme.example"`}, only: true},
		{name: "oauth revoke_url on the authorize host", edits: []string{`"token_url": "https://api.acme.example/oauth/token",`, `"token_url": "https://api.acme.example/oauth/token", "revoke_url": "https://acme.example/oauth/revoke",`},
			want: []string{`auth.oauth.revoke_url: host "acme.example" is neither the API host`}, only: true},
		{name: "oauth revoke_url over http", edits: []string{`"token_url": "https://api.acme.example/oauth/token",`, `"token_url": "https://api.acme.example/oauth/token", "revoke_url": "http://api.acme.example/oauth/revoke",`},
			want: []string{`auth.oauth.revoke_url: "http://api.acme.example/oauth/revoke" must be an https:// URL`}},
		{name: "oauth revoke_url with a port", edits: []string{`"token_url": "https://api.acme.example/oauth/token",`, `"token_url": "https://api.acme.example/oauth/token", "revoke_url": "https://api.acme.example:8443/oauth/revoke",`},
			want: []string{`auth.oauth.revoke_url: "https://api.acme.example:8443/oauth/revoke" names a port`}, only: true},
		{name: "oauth revoke_url with userinfo", edits: []string{`"token_url": "https://api.acme.example/oauth/token",`, `"token_url": "https://api.acme.example/oauth/token", "revoke_url": "https://api.acme.example@evil.example/r",`},
			want: []string{`auth.oauth.revoke_url: `}},
		{name: "oauth scopes missing", edits: []string{`"scopes": ["items:read"],`, ``},
			want: []string{"auth.oauth.scopes: required: an array of the provider scopes"}},
		{name: "oauth scope with a space", edits: []string{`"scopes": ["items:read"]`, `"scopes": ["items read"]`},
			want: []string{`auth.oauth.scopes[0]: "items read" is not an OAuth scope token`}},
		{name: "oauth bad separator", edits: []string{`"refresh": true,`, `"refresh": true, "scope_separator": ";",`},
			want: []string{`auth.oauth.scope_separator: ";" is not a scope separator`}},
		{name: "authorize_params overrides redirect_uri", edits: []string{`{ "prompt": "consent" }`, `{ "redirect_uri": "https://evil.example/cb" }`},
			want: []string{`auth.oauth.authorize_params.redirect_uri: "redirect_uri" is set by the broker`}},
		{name: "forbidden header", edits: []string{`"Accept": "application/json"`, `"Accept": "application/json", "authorization": "Bearer x"`},
			want: []string{`headers.authorization: "authorization" is set by the host`}},
		{name: "forbidden proxy header", edits: []string{`"Accept": "application/json"`, `"Proxy-Authorization": "x"`},
			want: []string{`headers.Proxy-Authorization: "Proxy-Authorization" is set by the host`}},
		{name: "header named twice in different case", edits: []string{`"Accept": "application/json"`, `"Accept": "application/json", "accept": "text/plain"`},
			want: []string{`headers.accept: "Accept" and "accept" name the same header`}},
		{name: "header value with placeholder", edits: []string{`"Accept": "application/json"`, `"Accept": "{accept}"`},
			want: []string{`headers.Accept: value "{accept}" looks like a placeholder; headers are static`}},
		{name: "header name not a token", edits: []string{`"Accept": "application/json"`, `"X Key": "1"`},
			want: []string{`headers.X Key: "X Key" is not an HTTP header name`}},
		{name: "error_message not a dot path", edits: []string{`"error_message": "error.message"`, `"error_message": "error..message"`},
			want: []string{`error_message: "error..message" is not a dot path`}},
		{name: "viewer missing op", edits: []string{`"viewer": "get_viewer"`, `"viewer": "whoami"`}, want: []string{`viewer: names op "whoami", which does not exist`}},
		{name: "viewer is a write op", edits: []string{`"viewer": "get_viewer"`, `"viewer": "add_charge"`}, want: []string{`viewer: names op "add_charge", whose access is "write"; the viewer must be a read op`}},
		{name: "viewer needs args", edits: []string{`"viewer": "get_viewer"`, `"viewer": "list_items"`}, want: []string{`viewer: names op "list_items", which requires arg "project"`}},
		{name: "no ops", doc: `{"manifest": 1, "id": "acme", "name": "Acme", "host": "api.acme.example", "auth": {"scheme": "bearer"}, "ops": {}}`,
			want: []string{"acme.json:1:", "ops: required: at least one op"}},
		{name: "op name syntax", edits: []string{`"get_viewer": {`, `"Get-Viewer": {`, `"viewer": "get_viewer",`, ``},
			want: []string{`op "Get-Viewer": op name must match ^[a-z][a-z0-9_]{0,47}$`}},
		{name: "arg name syntax", edits: []string{`"note": { "type": "string", "secret": true }`, `"Note": { "type": "string", "secret": true }`, `"{note}"`, `"{Note}"`},
			want: []string{`op "add_charge": args.Note: arg name must match ^[a-z][a-z0-9_]{0,47}$`}},
		{name: "bad access", edits: []string{`"access": "write",
      "summary": "Charge`, `"access": "admin",
      "summary": "Charge`}, want: []string{`op "add_charge": access: "admin" is not an access level; want "read" or "write"`}},
		{name: "write op without confirm", edits: []string{`"confirm": "Charge {amount} cents?",`, ``},
			want: []string{`op "add_charge": confirm: required on a write op`}},
		{name: "read op with confirm", edits: []string{`"summary": "Who the token belongs to",`, `"summary": "Who the token belongs to", "confirm": "Sure?",`},
			want: []string{`op "get_viewer": confirm: only write ops ask for confirmation`}},
		{name: "summary too long", edits: []string{`"summary": "Who the token belongs to"`, `"summary": "` + strings.Repeat("x", 201) + `"`},
			want: []string{`op "get_viewer": summary: is 201 characters; at most 200`}},
		{name: "summary on two lines", edits: []string{`"summary": "Who the token belongs to"`, `"summary": "Who the\ntoken belongs to"`},
			want: []string{`op "get_viewer": summary: contains the control character U+000A`}},
		{name: "bad method", edits: []string{`"method": "GET",
      "path": "/v1/me"`, `"method": "HEAD",
      "path": "/v1/me"`}, want: []string{`op "get_viewer": method: "HEAD" is not allowed; want GET, POST, PUT, PATCH or DELETE`}},
		{name: "path without leading slash", edits: []string{`"path": "/v1/me"`, `"path": "v1/me"`}, want: []string{`op "get_viewer": path: "v1/me" must start with /`}},
		{name: "path with query", edits: []string{`"path": "/v1/me"`, `"path": "/v1/me?x=1"`}, want: []string{`op "get_viewer": path: "/v1/me?x=1" contains ? or #`}},
		{name: "path dot segment", edits: []string{`"path": "/v1/me"`, `"path": "/v1/../me"`}, want: []string{`op "get_viewer": path: "/v1/../me" has the segment ".."`}},
		{name: "path empty segment", edits: []string{`"path": "/v1/me"`, `"path": "/v1//me"`}, want: []string{`op "get_viewer": path: "/v1//me" has an empty segment`}},
		{name: "path percent-encoding", edits: []string{`"path": "/v1/me"`, `"path": "/v1/m%65"`}, want: []string{`op "get_viewer": path:`, `segment "m%65": literal segments use only`}},
		{name: "placeholder not a whole segment", edits: []string{`"path": "/v1/projects/{project}/items",
      "args": {
        "project": { "type": "string", "required": true, "pattern"`, `"path": "/v1/projects/{project}.json/items",
      "args": {
        "project": { "type": "string", "required": true, "pattern"`},
			want: []string{`op "list_items": path:`, `segment "{project}.json": a placeholder fills a whole segment`}},
		{name: "undeclared path placeholder", edits: []string{`"path": "/v1/me"`, `"path": "/v1/{who}"`},
			want: []string{`op "get_viewer": path: "/v1/{who}": "who" is not a declared arg (the op declares no args)`}},
		{name: "path arg not required", edits: []string{`"project": { "type": "string", "required": true },`, `"project": { "type": "string" },`},
			want: []string{`op "create_item": args.project: is a path arg, so it must be required`}},
		{name: "path arg boolean", edits: []string{`"project": { "type": "string", "required": true },`, `"project": { "type": "boolean", "required": true },`},
			want: []string{`op "create_item": args.project: is a path arg of type "boolean"; path args are string or integer`}},
		{name: "query key syntax", edits: []string{`"expand[]": "labels"`, `"expand labels": "labels"`},
			want: []string{`op "list_items": query.expand labels: "expand labels" is not a query key`}},
		{name: "undeclared query placeholder", edits: []string{`"expand[]": "labels"`, `"expand[]": "{expand}"`},
			want: []string{`op "list_items": query.expand[]: "{expand" starts a placeholder but "expand" is not a declared arg`, "declared args: cursor, limit, project, state"}},
		{name: "unclosed placeholder of a declared arg", edits: []string{`"limit": "{limit}"`, `"limit": "{limit"`},
			want: []string{`op "list_items": query.limit: "{limit" starts a placeholder but is not closed: write "{limit}" for the arg, or "{ limit" for a literal brace`}},
		{name: "undeclared confirm placeholder", edits: []string{`"Charge {amount} cents?"`, `"Charge {amount} cents to {card}?"`},
			want: []string{`op "add_charge": confirm: "{card" starts a placeholder but "card" is not a declared arg`}},
		{name: "optional arg without default in confirm", edits: []string{`"Charge {amount} cents?"`, `"Charge {amount} cents to {memo}?"`, `"note": { "type": "string", "secret": true }`, `"note": { "type": "string", "secret": true }, "memo": { "type": "string" }`},
			want: []string{`op "add_charge": confirm: names optional arg "memo" without a default`}},
		{name: "secret arg in confirm", edits: []string{`"Charge {amount} cents?"`, `"Charge {amount} cents ({note})?"`},
			want: []string{`op "add_charge": confirm: shows secret arg "note"`}},
		{name: "body_json on GET", edits: []string{`"pick": { "root": "data", "fields": { "id": "identifier", "title": "text", "labels.name": "text" } }`, `"body_json": {}, "pick": { "root": "data", "fields": { "id": "identifier", "title": "text", "labels.name": "text" } }`},
			want: []string{`op "list_items": body_json: a GET request has no body; body_json goes only with POST, PUT or PATCH`}},
		{name: "lower-case method is one problem", edits: []string{`"method": "POST",
      "path": "/v1/charges"`, `"method": "post",
      "path": "/v1/charges"`}, want: []string{`op "add_charge": method: "post" must be written in upper case: "POST"`}, only: true},
		{name: "body_form on DELETE", edits: []string{`"method": "POST",
      "path": "/v1/charges"`, `"method": "DELETE",
      "path": "/v1/charges"`}, want: []string{`op "add_charge": body_form: a DELETE request has no body`}},
		{name: "both bodies", edits: []string{`"body_form": { "amount"`, `"body_json": {}, "body_form": { "amount"`},
			want: []string{`op "add_charge": body_form: an op has one body: body_json or body_form, never both`}},
		{name: "empty body_form", edits: []string{`"body_form": { "amount": "{amount}", "metadata[note]": "{note}" }`, `"body_form": {}, "query": { "amount": "{amount}", "note": "{note}" }`},
			want: []string{`op "add_charge": body_form: is empty; leave it out for no body`}},
		{name: "body_json not an object", edits: []string{`"body_json": { "title": "{title}", "flags": { "urgent": "{urgent}", "weight": "{weight}" }, "tags": ["bot", null] }`, `"body_json": ["{title}", "{urgent}", "{weight}"]`},
			want: []string{`op "create_item": body_json: must be a JSON object (the request body), got an array`}},
		{name: "body_json key reads like a placeholder", edits: []string{`"tags": ["bot", null]`, `"{title}": ["bot", null]`},
			want: []string{`op "create_item": body_json.{title}: key "{title}" reads like a placeholder; body_json keys are not templates`}},
		{name: "body_json slip inside an array", edits: []string{`"tags": ["bot", null]`, `"tags": ["bot", "{label}"]`},
			want: []string{`op "create_item": body_json.tags[1]: "{label" starts a placeholder but "label" is not a declared arg`}},
		{name: "form key syntax", edits: []string{`"metadata[note]"`, `"metadata note"`}, want: []string{`op "add_charge": body_form.metadata note: "metadata note" is not a form key`}},
		{name: "unknown arg type", edits: []string{`"urgent": { "type": "boolean", "default": false }`, `"urgent": { "type": "bool", "default": false }`},
			want: []string{`op "create_item": args.urgent.type: "bool" is not a type`}},
		{name: "enum on an integer", edits: []string{`"limit": { "type": "integer", "min": 1`, `"limit": { "type": "integer", "enum": ["1"], "min": 1`},
			want: []string{`op "list_items": args.limit.enum: only string args take an enum; this arg is "integer"`}},
		{name: "empty enum", edits: []string{`"enum": ["open", "closed"], "default": "open"`, `"enum": []`}, want: []string{`op "list_items": args.state.enum: is empty`}},
		{name: "duplicate enum value", edits: []string{`"enum": ["open", "closed"]`, `"enum": ["open", "open"]`}, want: []string{`op "list_items": args.state.enum[1]: "open" is listed twice`}},
		{name: "enum value breaks pattern", edits: []string{`"enum": ["open", "closed"]`, `"pattern": "^[a-z]+$", "enum": ["open", "Closed"]`},
			want: []string{`op "list_items": args.state.enum[1]: "Closed" does not match the pattern "^[a-z]+$"`}},
		{name: "pattern on a boolean", edits: []string{`"urgent": { "type": "boolean", "default": false }`, `"urgent": { "type": "boolean", "pattern": "^t$" }`},
			want: []string{`op "create_item": args.urgent.pattern: only string args take a pattern`}},
		{name: "pattern not anchored", edits: []string{`"pattern": "^[a-z0-9-]{1,40}$"`, `"pattern": "[a-z0-9-]{1,40}"`},
			want: []string{`op "list_items": args.project.pattern: "[a-z0-9-]{1,40}" must be anchored: start with ^ and end with $`}},
		{name: "pattern anchors only one alternative", edits: []string{`"pattern": "^[a-z0-9-]{1,40}$"`, `"pattern": "^a|b$"`},
			want: []string{`op "list_items": args.project.pattern: "^a|b$" must match the whole value`, `"^(?:a|b)$"`}},
		{name: "pattern with escaped dollar", edits: []string{`"pattern": "^[a-z0-9-]{1,40}$"`, `"pattern": "^a\\$"`},
			want: []string{`op "list_items": args.project.pattern: "^a\\$" must match the whole value`}},
		{name: "pattern not RE2", edits: []string{`"pattern": "^[a-z0-9-]{1,40}$"`, `"pattern": "^(?=a)b$"`},
			want: []string{`op "list_items": args.project.pattern: "^(?=a)b$" is not an RE2 pattern`}},
		{name: "min above max", edits: []string{`"min": 1, "max": 100`, `"min": 100, "max": 1`}, want: []string{`op "list_items": args.limit.min: min 100 is greater than max 1`}},
		{name: "fractional bound on an integer", edits: []string{`"min": 1, "max": 100`, `"min": 1, "max": 99.5`},
			want: []string{`op "list_items": args.limit.max: 99.5 is not a whole number`}},
		{name: "min on a string", edits: []string{`"title": { "type": "string", "required": true, "max_length": 200 }`, `"title": { "type": "string", "required": true, "min": 1 }`},
			want: []string{`op "create_item": args.title.min: only integer and number args take min and max`}},
		{name: "max_length zero", edits: []string{`"max_length": 40`, `"max_length": 0`}, want: []string{`op "list_items": args.project.max_length: 0 is out of range; want 1 to 65536`}},
		{name: "max_length on an integer", edits: []string{`"amount": { "type": "integer", "required": true, "min": 1 }`, `"amount": { "type": "integer", "required": true, "max_length": 5 }`},
			want: []string{`op "add_charge": args.amount.max_length: only string args take max_length`}},
		{name: "default with required", edits: []string{`"amount": { "type": "integer", "required": true, "min": 1 }`, `"amount": { "type": "integer", "required": true, "default": 5 }`},
			want: []string{`op "add_charge": args.amount.default: a required arg is always passed, so it takes no default`}},
		{name: "default of the wrong type", edits: []string{`"default": false`, `"default": "no"`}, want: []string{`op "create_item": args.urgent.default: "no" is not true or false`}},
		{name: "default not in enum", edits: []string{`"default": "open"`, `"default": "all"`}, want: []string{`op "list_items": args.state.default: "all" is not in the enum [open, closed]`}},
		{name: "default breaks pattern", edits: []string{`"max_length": 40 },`, `"max_length": 40 }, "owner": { "type": "string", "pattern": "^[a-z]+$", "default": "Bob" },`, `"expand[]": "labels"`, `"owner": "{owner}"`},
			want: []string{`op "list_items": args.owner.default: "Bob" does not match the pattern "^[a-z]+$"`}},
		{name: "default longer than max_length", edits: []string{`"max_length": 40 },`, `"max_length": 40 }, "owner": { "type": "string", "max_length": 2, "default": "Bob" },`, `"expand[]": "labels"`, `"owner": "{owner}"`},
			want: []string{`op "list_items": args.owner.default: "Bob" is longer than max_length (2 code points)`}},
		{name: "default above max", edits: []string{`"default": 20`, `"default": 200`}, want: []string{`op "list_items": args.limit.default: 200 is outside min/max [1, 100]`}},
		{name: "default integer with fraction", edits: []string{`"default": 20`, `"default": 2e1`}, want: []string{`op "list_items": args.limit.default: 2e1 is not an integer`}},
		{name: "default null", edits: []string{`"default": 20`, `"default": null`}, want: []string{`op "list_items": args.limit.default: null is not an integer`}},
		{name: "unused arg", edits: []string{`"urgent": { "type": "boolean", "default": false },`, `"urgent": { "type": "boolean", "default": false }, "spare": { "type": "string" },`},
			want: []string{`op "create_item": args.spare: is declared but no template uses it`}},
		{name: "too many args", edits: []string{`"note": { "type": "string", "secret": true }`, `"note": { "type": "string", "secret": true }` + manyArgs(32)},
			want: []string{`op "add_charge": args: has 34 args; at most 32`}},
		{name: "pick missing", edits: []string{`,
      "pick": { "fields": { "id": "identifier", "name": "text" } }`, ``}, want: []string{`op "get_viewer": pick: required`}},
		{name: "pick fields missing", edits: []string{`"pick": { "fields": { "id": "identifier", "name": "text" } }`, `"pick": { "root": "data" }`}, want: []string{`op "get_viewer": pick.fields: required`}},
		{name: "pick field not a dot path", edits: []string{`"fields": { "id": "identifier", "name": "text" }`, `"fields": { "id": "identifier", "name.": "text", "a b": "text" }`},
			want: []string{`op "get_viewer": pick.fields.name.: "name." is not a dot path`}},
		{name: "pick field twice", edits: []string{`"fields": { "id": "identifier", "name": "text" }`, `"fields": { "id": "identifier", "id": "text" }`}, want: []string{`op "get_viewer": pick.fields.id: duplicate key "id"`}},
		{name: "pick field without a class", edits: []string{`"fields": { "id": "identifier", "name": "text" }`, `"fields": { "id": "identifier", "name": "" }`},
			want: []string{`op "get_viewer": pick.fields.name: declares no data-flow class; say what "name" is: one of identifier, enum, number, boolean, time, url, text`}},
		{name: "pick field with an unknown class", edits: []string{`"fields": { "id": "identifier", "name": "text" }`, `"fields": { "id": "identifier", "name": "secret" }`},
			want: []string{`op "get_viewer": pick.fields.name: "secret" is not a data-flow class`}},
		{name: "pick field class not a string", edits: []string{`"fields": { "id": "identifier", "name": "text" }`, `"fields": { "id": "identifier", "name": true }`},
			want: []string{`op "get_viewer": pick.fields.name: want a string, got a boolean`}},
		{name: "pick fields as a list without classes", edits: []string{`"fields": { "id": "identifier", "name": "text" }`, `"fields": ["id", "name"]`},
			want: []string{`op "get_viewer": pick.fields: want an object of dot path → class (identifier, enum, number, boolean, time, url, text)`}},
		{name: "target on a read op", edits: []string{`"path": "/v1/me",`, `"path": "/v1/me", "target": [],`}, want: []string{`op "get_viewer": target: only write ops have a target`}},
		{name: "empty target", edits: []string{`"confirm": "Charge {amount} cents?",`, `"confirm": "Charge {amount} cents?", "target": [],`}, want: []string{`op "add_charge": target: is empty`}},
		{name: "target not an arg", edits: []string{`"confirm": "Charge {amount} cents?",`, `"confirm": "Charge {amount} cents?", "target": ["amount", "nope"],`}, want: []string{`op "add_charge": target[1]: names "nope", which is not a declared arg`}},
		{name: "target a secret arg", edits: []string{`"confirm": "Charge {amount} cents?",`, `"confirm": "Charge {amount} cents?", "target": ["note"],`}, want: []string{`op "add_charge": target[0]: names secret arg "note"`}},
		{name: "target twice", edits: []string{`"confirm": "Charge {amount} cents?",`, `"confirm": "Charge {amount} cents?", "target": ["amount", "amount"],`}, want: []string{`op "add_charge": target[1]: "amount" is listed twice`}},
		{name: "pick root too deep", edits: []string{`"root": "data.items.nodes"`, `"root": "a.b.c.d.e.f.g.h.i"`},
			want: []string{`op "search": pick.root: "a.b.c.d.e.f.g.h.i" has 9 segments; at most 8`}},
		{name: "too many pick fields", edits: []string{`"fields": { "id": "identifier", "name": "text" }`, `"fields": ` + manyFields(65)},
			want: []string{`op "get_viewer": pick.fields: has 65 fields; at most 64`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := tt.file
			var data []byte
			switch {
			case tt.fixture != "":
				file = filepath.Join("testdata", tt.fixture)
				var err error
				if data, err = os.ReadFile(file); err != nil {
					t.Fatal(err)
				}
			case tt.doc != "":
				data = []byte(tt.doc)
			default:
				data = acme(t, tt.edits...)
			}
			if file == "" {
				file = "acme.json"
			}
			lines := problems(t, file, data)
			if tt.only && len(lines) != 1 {
				t.Errorf("%d problems, want only one:\n%s", len(lines), strings.Join(lines, "\n"))
			}
			for _, l := range lines {
				if containsAll(l, tt.want) {
					return
				}
			}
			t.Errorf("no problem contains all of %q; got:\n%s", tt.want, strings.Join(lines, "\n"))
		})
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func manyArgs(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(`, "a` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `": { "type": "string" }`)
	}
	return b.String()
}

func manyFields(n int) string {
	f := make([]string, n)
	for i := range f {
		f[i] = `"f` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `"`
	}
	return "{" + strings.Join(f, `: "number", `) + `: "number"}`
}

// TestParseCollectsAll checks that independent problems are all reported,
// in file order, not just the first.
func TestParseCollectsAll(t *testing.T) {
	data := acme(t,
		`"host": "api.acme.example"`, `"host": "api.acme.example:443"`,
		`"method": "GET",
      "path": "/v1/me"`, `"method": "get",
      "path": "/v1/me"`,
		`nodes { id title }`, `nodes {id title }`,
		`"confirm": "Charge {amount} cents?",`, ``,
	)
	lines := problems(t, "acme.json", data)
	want := []string{
		"acme.json:7:11: host:",
		`acme.json:27:17: op "get_viewer": method:`,
		`op "search": body_json.query:`,
		`op "add_charge": confirm: required`,
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
	for i := range want {
		if !strings.Contains(lines[i], want[i]) {
			t.Errorf("problem %d = %q, want it to contain %q", i, lines[i], want[i])
		}
	}
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name  string
		edits []string
		check func(t *testing.T, m *Manifest)
	}{
		{name: "acme as is", check: func(t *testing.T, m *Manifest) {
			if got := m.OpNames(); !reflect.DeepEqual(got, []string{"add_charge", "create_item", "get_viewer", "list_items", "search"}) {
				t.Errorf("OpNames = %q", got)
			}
		}},
		{name: "root path and empty body_json", edits: []string{`"method": "GET",
      "path": "/v1/me"`, `"method": "POST", "body_json": {},
      "path": "/"`}, check: func(t *testing.T, m *Manifest) {
			if op, _ := m.Op("get_viewer"); op.Path != "/" || string(op.BodyJSON) != "{}" || op.BodyKind() != BodyKindJSON {
				t.Errorf("get_viewer = %+v", op)
			}
		}},
		{name: "grouped alternation pattern and sub-delims in path", edits: []string{`"pattern": "^[a-z0-9-]{1,40}$"`, `"pattern": "^(?:ab|cd)$"`, `"path": "/v1/me"`, `"path": "/v1/me:self/~a,b;c=d@e"`}},
		{name: "literal braces everywhere", edits: []string{`"expand[]": "labels"`, `"expand[]": "{ } {} {{limit}} {\"x\""`}},
		{name: "header scheme", edits: []string{`"scheme": "bearer"`, `"scheme": "header", "header": "X-Api-Key"`}},
		{name: "empty maps are normalized away", edits: []string{`"path": "/v1/me",`, `"path": "/v1/me", "args": {}, "query": {},`, `"Accept": "application/json"`, ``},
			check: func(t *testing.T, m *Manifest) {
				if op, _ := m.Op("get_viewer"); op.Args != nil || op.Query != nil || m.Headers != nil {
					t.Errorf("empty maps kept: %+v %+v", op, m.Headers)
				}
			}},
		{name: "array args", edits: []string{`"state": { "type": "string", "enum": ["open", "closed"], "default": "open" },`, `"state": { "type": "string", "enum": ["open", "closed"], "default": "open" }, "labels": { "type": "array", "items": { "type": "string", "pattern": "^[a-z]+$", "max_length": 20 }, "max_items": 5, "style": "pipeDelimited", "explode": false },`, `"expand[]": "labels"`, `"expand[]": "labels", "labels[]": "{labels}"`, `"urgent": { "type": "boolean", "default": false },`, `"urgent": { "type": "boolean", "default": false }, "tags": { "type": "array", "items": { "type": "string", "enum": ["a", "b"] } },`, `"tags": ["bot", null]`, `"tags": "{tags}"`},
			check: func(t *testing.T, m *Manifest) {
				op, _ := m.Op("list_items")
				if a := op.Args["labels"]; a.Type != TypeArray || a.Items.Pattern != "^[a-z]+$" || *a.MaxItems != 5 || a.Delimiter() != '|' {
					t.Errorf("labels = %+v", a)
				}
				op, _ = m.Op("create_item")
				if a := op.Args["tags"]; a.Type != TypeArray || a.Items.Enum[1] != "b" || a.MaxItems != nil || a.Delimiter() != 0 {
					t.Errorf("tags = %+v", a)
				}
			}},
		{name: "body_json compacted", check: func(t *testing.T, m *Manifest) {
			op, _ := m.Op("create_item")
			if want := `{"title":"{title}","flags":{"urgent":"{urgent}","weight":"{weight}"},"tags":["bot",null]}`; string(op.BodyJSON) != want {
				t.Errorf("BodyJSON = %s, want %s", op.BodyJSON, want)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse("acme.json", acme(t, tt.edits...))
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				tt.check(t, m)
			}
			roundTrip(t, "acme.json", m)
		})
	}
}

func shippedFiles(t testing.TB) []string {
	files, err := filepath.Glob("manifests/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped manifests: %v", err)
	}
	return files
}

func TestShippedManifestsParse(t *testing.T) {
	for _, f := range shippedFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Parse(f, data)
			if err != nil {
				t.Fatal(err)
			}
			roundTrip(t, f, m)
		})
	}
}

// roundTrip checks that m, encoded with encoding/json, parses back to an
// equal Manifest.
func roundTrip(t *testing.T, file string, m *Manifest) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		t.Fatalf("encode: %v", err)
	}
	m2, err := Parse(file, b.Bytes())
	if err != nil {
		t.Fatalf("re-encoded manifest refused: %v\n%s", err, b.Bytes())
	}
	if !reflect.DeepEqual(m, m2) {
		t.Fatalf("round trip changed the manifest:\n%+v\n%+v", m, m2)
	}
}

func TestAccessors(t *testing.T) {
	m, err := Parse("acme.json", acme(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Op("nope"); ok {
		t.Error(`Op("nope") found an op`)
	}
	li, ok := m.Op("list_items")
	if !ok {
		t.Fatal(`Op("list_items") not found`)
	}
	if got := li.ArgNames(); !reflect.DeepEqual(got, []string{"cursor", "limit", "project", "state"}) {
		t.Errorf("ArgNames = %q", got)
	}
	if got := li.QueryKeys(); !reflect.DeepEqual(got, []string{"cursor", "expand[]", "limit", "state"}) {
		t.Errorf("QueryKeys = %q", got)
	}
	if got := li.PageQueryKey(); got != "" {
		t.Errorf("PageQueryKey of a cursor-style op = %q, want \"\"", got)
	}
	ac, _ := m.Op("add_charge")
	if got := ac.FormKeys(); !reflect.DeepEqual(got, []string{"amount", "metadata[note]"}) {
		t.Errorf("FormKeys = %q", got)
	}
	for op, want := range map[string]string{"list_items": BodyKindNone, "create_item": BodyKindJSON, "add_charge": BodyKindForm} {
		if o, _ := m.Op(op); o.BodyKind() != want {
			t.Errorf("%s BodyKind = %q, want %q", op, o.BodyKind(), want)
		}
	}
	if got := m.ErrorMessagePath(); got != "error.message" {
		t.Errorf("ErrorMessagePath = %q", got)
	}
	for _, tt := range []struct {
		graphql bool
		want    string
	}{{false, "message"}, {true, "errors.message"}} {
		m := &Manifest{GraphQL: tt.graphql}
		if got := m.ErrorMessagePath(); got != tt.want {
			t.Errorf("ErrorMessagePath(graphql=%v) = %q, want %q", tt.graphql, got, tt.want)
		}
	}
}

func TestProblemString(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    Problem
		want string
	}{
		{"full", Problem{File: "a.json", Line: 3, Col: 7, Op: "x", Field: "path", Msg: "bad"}, `a.json:3:7: op "x": path: bad`},
		{"top level", Problem{File: "a.json", Line: 1, Col: 2, Field: "host", Msg: "bad"}, `a.json:1:2: host: bad`},
		{"file level", Problem{File: "a.json", Msg: "too big"}, `a.json: too big`},
		{"op itself", Problem{File: "a.json", Line: 9, Col: 5, Op: "X", Msg: "bad name"}, `a.json:9:5: op "X": bad name`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
	e := &Error{Problems: []Problem{{File: "a", Msg: "x"}, {File: "b", Msg: "y"}}}
	if got := e.Error(); got != "a: x\nb: y" {
		t.Errorf("Error() = %q", got)
	}
}

func FuzzParse(f *testing.F) {
	// Seeds: testdata/fuzz/FuzzParse (the shipped manifests, acme and
	// small edge cases) plus the current shipped manifests.
	for _, file := range shippedFiles(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse("fuzz", data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || len(e.Problems) == 0 {
				t.Fatalf("error %T %v, want a non-empty *Error", err, err)
			}
			return
		}
		roundTrip(t, "fuzz", m)
	})
}

func TestParseCapsProblems(t *testing.T) {
	var fs []string
	for i := range 300 {
		fs = append(fs, fmt.Sprintf(`"a..%d": "text"`, i))
	}
	lines := problems(t, "acme.json", acme(t, `"fields": { "id": "identifier", "name": "text" }`, `"fields": {`+strings.Join(fs, ", ")+`}`))
	if len(lines) != maxProblems+1 {
		t.Fatalf("got %d problems, want %d and a last line saying more were found", len(lines), maxProblems+1)
	}
	if !strings.Contains(lines[0], `op "get_viewer": pick.fields: has 300 fields; at most 64`) {
		t.Errorf("first problem = %q", lines[0])
	}
	if want := "acme.json: more problems not shown (at most 200 are reported)"; !strings.HasPrefix(lines[maxProblems], want) {
		t.Errorf("last line = %q, want prefix %q", lines[maxProblems], want)
	}
}

func TestParseClipsLongValues(t *testing.T) {
	long := strings.Repeat("v", 5000)
	lines := problems(t, "acme.json", acme(t, `"Accept": "application/json"`, `"Accept": "{`+long+`}"`))
	if len(lines) != 1 {
		t.Fatalf("got %d problems, want 1:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if l := lines[0]; len(l) > 700 || !strings.Contains(l, " … ") || !strings.HasSuffix(l, "headers are static and take no {arg}") {
		t.Errorf("problem not clipped to its ends (%d bytes): %.200q…", len(l), l)
	}
}
