package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/internal/testing/schematest"
)

// branches walks the tool schema's if/then/else chains and returns the
// op branches ("then" objects) by "service.op".
func branches(t *testing.T, schema json.RawMessage) map[string]map[string]any {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for svc := root; svc != nil; {
		then, _ := svc["then"].(map[string]any)
		if then == nil {
			break
		}
		for op := then; op != nil; {
			b, _ := op["then"].(map[string]any)
			if b == nil {
				break
			}
			out[b["title"].(string)] = b
			if op["else"] != false {
				op, _ = op["else"].(map[string]any)
			} else {
				op = nil
			}
		}
		if svc["else"] != false {
			svc, _ = svc["else"].(map[string]any)
		} else {
			svc = nil
		}
	}
	return out
}

// TestServiceOpToolCoversRegistry: every op of every manifest appears in
// the schema (with its args schema) and in the description, write ops
// carry their confirm template, and the top level has no oneOf, anyOf or
// allOf (the Anthropic API refuses them there).
func TestServiceOpToolCoversRegistry(t *testing.T) {
	r := Default()
	tool := ServiceOpTool(r)
	if tool.Name != "service_op" {
		t.Fatalf("name %q", tool.Name)
	}
	var top map[string]any
	if err := json.Unmarshal(tool.InputSchema, &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"oneOf", "anyOf", "allOf"} {
		if _, ok := top[k]; ok {
			t.Errorf("input_schema has %s at the top level", k)
		}
	}
	if top["type"] != "object" {
		t.Errorf("input_schema type %v, want object", top["type"])
	}
	got := branches(t, tool.InputSchema)
	ops := ToolOps(r)
	n := 0
	for _, m := range r.Services() {
		for _, name := range m.OpNames() {
			n++
			key := m.ID + "." + name
			op := m.Ops[name]
			t.Run(key, func(t *testing.T) {
				b, ok := got[key]
				if !ok {
					t.Fatalf("no branch for %s", key)
				}
				args, _ := json.Marshal(b["properties"].(map[string]any)["args"])
				var want, have any
				_ = json.Unmarshal(ArgsSchema(op), &want)
				_ = json.Unmarshal(args, &have)
				if fmt.Sprint(want) != fmt.Sprint(have) {
					t.Errorf("branch args schema %s, want %s", args, ArgsSchema(op))
				}
				desc := b["description"].(string)
				if !strings.HasPrefix(desc, "["+op.Access+"] ") {
					t.Errorf("branch description %q does not start with its access", desc)
				}
				line := "- " + key + " [" + op.Access + "] "
				if !strings.Contains(tool.Description, line) {
					t.Errorf("tool description lacks %q", line)
				}
				if op.Access == AccessWrite {
					confirm := fmt.Sprintf("Confirm: %q", op.Confirm)
					if op.Confirm == "" || !strings.Contains(desc, confirm) || !strings.Contains(tool.Description, confirm) {
						t.Errorf("write op %s: confirm template %q missing (branch %q)", key, op.Confirm, desc)
					}
				} else if strings.Contains(desc, "Confirm:") {
					t.Errorf("read op %s carries a confirm line", key)
				}
				if pages := op.Paginate != nil && strings.Contains(desc, "Pages: the result's next"); pages != (op.Paginate != nil) {
					t.Errorf("op %s: paginate %v, but its description %q", key, op.Paginate != nil, desc)
				}
			})
		}
	}
	if len(got) != n || len(ops) != n {
		t.Fatalf("%d branches and %d ToolOps for %d ops", len(got), len(ops), n)
	}
	mcp, _ := json.Marshal(tool.MCP())
	if !bytes.Contains(mcp, []byte(`"inputSchema":{"type":"object"`)) || bytes.Contains(mcp, []byte("input_schema")) {
		t.Fatalf("MCP shape: %.200s", mcp)
	}
}

// TestArgsSchemasCompile compiles every op's args schema and the whole
// input schema with a JSON Schema (2020-12) implementation and checks
// generic samples: {} passes exactly when nothing is required, an
// undeclared arg fails, every default passes, a value of the wrong type
// fails.
func TestArgsSchemasCompile(t *testing.T) {
	r := Default()
	tool := schematest.Compile(t, "https://pinned.example/service_op.json", ServiceOpTool(r).InputSchema)
	for _, o := range ToolOps(r) {
		t.Run(o.Service+"."+o.Op, func(t *testing.T) {
			s := schematest.Compile(t, "https://pinned.example/"+o.Service+"/"+o.Op+".json", o.ArgsSchema)
			m, _ := r.Service(o.Service)
			op := m.Ops[o.Op]
			required := false
			for _, a := range op.Args {
				required = required || a.Required
			}
			if got := schematest.Accepts(t, s, `{}`); got == required {
				t.Errorf("{} validates: %v, but the op has required args: %v", got, required)
			}
			if schematest.Accepts(t, s, `{"zz_undeclared": 1}`) {
				t.Error("an undeclared arg validates")
			}
			if schematest.Accepts(t, s, `[]`) {
				t.Error("an array validates as args")
			}
			if !required {
				call := fmt.Sprintf(`{"service":%q,"op":%q,"args":{}}`, o.Service, o.Op)
				if !schematest.Accepts(t, tool, call) {
					t.Errorf("tool input %s does not validate", call)
				}
			}
			for name, a := range op.Args {
				if len(a.Default) > 0 && !required {
					if doc := fmt.Sprintf(`{%q: %s}`, name, a.Default); !schematest.Accepts(t, s, doc) {
						t.Errorf("the default %s does not validate", doc)
					}
				}
				wrong := `"x"`
				if a.Type == TypeString {
					wrong = `1`
				}
				if schematest.Accepts(t, s, fmt.Sprintf(`{%q: %s}`, name, wrong)) {
					t.Errorf("arg %s of type %s accepts %s", name, a.Type, wrong)
				}
			}
		})
	}
}

// TestServiceOpToolSamples checks concrete calls against the whole input
// schema: listed pairs with valid args pass; everything else fails.
func TestServiceOpToolSamples(t *testing.T) {
	s := schematest.Compile(t, "https://pinned.example/service_op.json", ServiceOpTool(Default()).InputSchema)
	tests := []struct {
		name string
		doc  string
		want bool
	}{
		{name: "create_issue", want: true, doc: `{"service":"github","op":"create_issue","args":{"owner":"pinned-tester","repo":"notes","title":"Hi","body":"text"}}`},
		{name: "list_repos defaults", want: true, doc: `{"service":"github","op":"list_repos","args":{}}`},
		{name: "list_repos per_page", want: true, doc: `{"service":"github","op":"list_repos","args":{"per_page":100,"sort":"pushed"}}`},
		{name: "dnsimple register", want: true, doc: `{"service":"dnsimple","op":"register_domain","args":{"account":1385,"domain":"example.com","registrant_id":7,"auto_renew":true}}`},
		{name: "linear create", want: true, doc: `{"service":"linear","op":"create_issue","args":{"team_id":"0b4f5e2c-1a2b-4c3d-8e9f-001122334455","title":"Bug"}}`},
		{name: "stripe list", want: true, doc: `{"service":"stripe","op":"list_customers","args":{"limit":3,"starting_after":"cus_abc"}}`},
		{name: "pages on a paging op", want: true, doc: `{"service":"github","op":"list_repos","args":{},"pages":3}`},
		{name: "pages at the op's max", want: true, doc: `{"service":"linear","op":"list_issues","args":{},"pages":10}`},
		{name: "pages over the op's max", doc: `{"service":"github","op":"list_repos","args":{},"pages":11}`},
		{name: "pages zero", doc: `{"service":"github","op":"list_repos","args":{},"pages":0}`},
		{name: "pages on an op that does not page", doc: `{"service":"github","op":"get_viewer","args":{},"pages":1}`},
		{name: "missing title", doc: `{"service":"github","op":"create_issue","args":{"owner":"pinned-tester","repo":"notes"}}`},
		{name: "undeclared arg", doc: `{"service":"github","op":"create_issue","args":{"owner":"a","repo":"b","title":"c","labels":"x"}}`},
		{name: "per_page too big", doc: `{"service":"github","op":"list_repos","args":{"per_page":500}}`},
		{name: "per_page zero", doc: `{"service":"github","op":"list_repos","args":{"per_page":0}}`},
		{name: "per_page fraction", doc: `{"service":"github","op":"list_repos","args":{"per_page":1.5}}`},
		{name: "enum", doc: `{"service":"github","op":"list_repos","args":{"sort":"stars"}}`},
		{name: "pattern", doc: `{"service":"github","op":"get_repo","args":{"owner":"no/slash","repo":"notes"}}`},
		{name: "too long", doc: `{"service":"github","op":"create_issue","args":{"owner":"a","repo":"b","title":"` + strings.Repeat("x", 257) + `"}}`},
		{name: "wrong type", doc: `{"service":"dnsimple","op":"list_domains","args":{"account":"1385"}}`},
		{name: "boolean as string", doc: `{"service":"dnsimple","op":"register_domain","args":{"account":1,"domain":"example.com","registrant_id":7,"auto_renew":"yes"}}`},
		{name: "op of another service", doc: `{"service":"github","op":"list_teams","args":{}}`},
		{name: "unknown service", doc: `{"service":"githb","op":"get_viewer","args":{}}`},
		{name: "unknown op", doc: `{"service":"github","op":"delete_repo","args":{}}`},
		{name: "missing args", doc: `{"service":"github","op":"get_viewer"}`},
		{name: "missing op", doc: `{"service":"github","args":{}}`},
		{name: "extra member", doc: `{"service":"github","op":"get_viewer","args":{},"grant":"x"}`},
		{name: "args not an object", doc: `{"service":"github","op":"get_viewer","args":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := schematest.Accepts(t, s, tt.doc); got != tt.want {
				t.Fatalf("validates = %v, want %v: %s", got, tt.want, tt.doc)
			}
		})
	}
}

func TestArgsSchemaFields(t *testing.T) {
	one, hundred, ten := 1.0, 100.0, 10
	op := &Op{Args: map[string]*Arg{
		"n":   {Type: TypeInteger, Description: "count", Min: &one, Max: &hundred, Default: json.RawMessage(`30`)},
		"s":   {Type: TypeString, Required: true, Enum: []string{"a", "b"}, MaxLength: &ten},
		"p":   {Type: TypeString, Pattern: "^[a-z]+$"},
		"k":   {Type: TypeString, Secret: true, Description: "api key"},
		"ok":  {Type: TypeBoolean},
		"amt": {Type: TypeNumber, Min: &one},
		"ls":  {Type: TypeArray, Description: "labels", Items: &Arg{Type: TypeString, Enum: []string{"a", "b"}}, MaxItems: &ten},
		"ids": {Type: TypeArray, Items: &Arg{Type: TypeInteger, Min: &one}},
	}}
	want := `{"type":"object","properties":{` +
		`"amt":{"type":"number","minimum":1},` +
		`"ids":{"type":"array","items":{"type":"integer","minimum":1},"maxItems":100},` +
		`"k":{"type":"string","description":"api key (secret: never logged or shown)","maxLength":4096},` +
		`"ls":{"type":"array","description":"labels","items":{"type":"string","enum":["a","b"],"maxLength":4096},"maxItems":10},` +
		`"n":{"type":"integer","description":"count","minimum":1,"maximum":100,"default":30},` +
		`"ok":{"type":"boolean"},` +
		`"p":{"type":"string","pattern":"^[a-z]+$","maxLength":4096},` +
		`"s":{"type":"string","enum":["a","b"],"maxLength":10}},` +
		`"required":["s"],"additionalProperties":false}`
	if got := string(ArgsSchema(op)); got != want {
		t.Fatalf("ArgsSchema =\n%s\nwant\n%s", got, want)
	}
	if got := string(ArgsSchema(&Op{})); got != `{"type":"object","properties":{},"additionalProperties":false}` {
		t.Fatalf("ArgsSchema of an op without args = %s", got)
	}
}

// oldObject encodes an object as it was before appendJSON: each member
// through encoding/json, nested objects included (quadratic, but plainly
// what encoding/json makes of the members in order).
type oldObject object

func (o oldObject) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, mustJSON(m.k)...)
		b = append(b, ':')
		b = append(b, mustJSON(asOld(m.v))...)
	}
	return append(b, '}'), nil
}

func asOld(v any) any {
	switch v := v.(type) {
	case object:
		o := make(oldObject, len(v))
		for i, m := range v {
			o[i] = member{m.k, asOld(m.v)}
		}
		return o
	case []object:
		if v == nil {
			return []oldObject(nil)
		}
		out := make([]oldObject, len(v))
		for i, x := range v {
			out[i] = asOld(x).(oldObject)
		}
		return out
	}
	return v
}

// TestObjectJSONAsEncodingJSON: the tool schemas appendJSON writes in
// place are byte for byte what encoding/json writes for the same members,
// for every op's args and the whole service_op schema of the registry,
// and for odd values (HTML characters, U+2028, invalid UTF-8, raw JSON
// with spaces, nil objects, objects inside maps and []any). The bytes
// MarshalJSON returns are compared as well as their encoding, which
// compacts them and would hide a raw value written uncompacted.
func TestObjectJSONAsEncodingJSON(t *testing.T) {
	r := Default()
	cases := []struct {
		name string
		v    object
	}{
		{name: "service_op", v: toolSchema(r)},
		{name: "empty", v: object{}},
		{name: "nested slices", v: object{{"a", []object{{{"b", object{{"c", "<&>"}}}}, {}}}, {"n", []object(nil)}, {"raw", json.RawMessage(`{ "x" : 1 }`)}}},
		// What a manifest string may hold (HTML characters, line and
		// paragraph separators, invalid UTF-8, control characters), in
		// keys and values, raw and nested; nil and empty objects; objects
		// inside values encoding/json walks itself (a map, []any, a
		// pointer).
		{name: "odd strings", v: object{
			{"<k&>\u2028\u2029", "a\u2028b\u2029c<script>&amp;\x00\x1f\x7f"},
			{"bad\xff\xfeutf8", "\xc3\x28 \xed\xa0\x80 \xf0\x28\x8c\xbc"},
			{"\"quoted\\", []string{"\u2028", "<>", "\xff", ""}},
			{"nested", object{{"enum", []any{"\u2029", 1.5e300, math.Copysign(0, -1), 1e-7, int64(-1 << 63), uint64(1<<64 - 1), true, nil}}}},
		}},
		{name: "odd raw", v: object{
			{"default", json.RawMessage("\t\"a\u2028b<&>\" ")},
			{"obj", json.RawMessage(`{"z":[1, 2.50, "\u003c"], "a" : {}}`)},
			{"num", json.RawMessage(`1E+2`)},
		}},
		{name: "nil and empty", v: object{
			{"nil", object(nil)}, {"empty", object{}}, {"nils", []object{nil, {}}}, {"none", []object{}},
			{"ptr", (*object)(nil)}, {"nilany", nil}, {"nilraw", json.RawMessage(nil)},
		}},
		{name: "objects in other values", v: object{
			{"map", map[string]any{"b<": object{{"x", "\u2028"}}, "a": []object{{{"y", 1}}}}},
			{"any", []any{object{{"k", "<"}}, []object{nil}}},
			{"ptr", &object{{"p", "&"}}},
		}},
	}
	for _, m := range r.shared() {
		for _, name := range m.OpNames() {
			cases = append(cases, struct {
				name string
				v    object
			}{m.ID + "." + name, argsSchema(m.Ops[name])})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, want := mustJSON(c.v), mustJSON(asOld(c.v))
			if !bytes.Equal(got, want) {
				t.Fatalf("appendJSON differs from encoding/json:\n got %.300s\nwant %.300s", got, want)
			}
			// The bytes MarshalJSON returns, before encoding/json compacts
			// them: equal too, not only once compacted.
			if raw, _ := c.v.MarshalJSON(); !bytes.Equal(raw, want) {
				t.Fatalf("MarshalJSON differs from encoding/json before compaction:\n got %.300s\nwant %.300s", raw, want)
			}
			if !json.Valid(got) {
				t.Fatalf("not JSON: %.300s", got)
			}
		})
	}
}
