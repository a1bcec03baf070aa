// Package openapi compares manifests with a provider's OpenAPI
// description (2.0, 3.0 or 3.1, JSON or YAML, read with kin-openapi).
// [Import] writes a draft manifest for chosen operations; [Lint] checks a
// manifest's ops against the description.
//
// It is a tool for manifest authors and registry CI: nothing that runs an
// op imports it. It imports the registry and kin-openapi only.
package openapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v4"
)

// MaxDescriptionSize bounds the description Load reads, in bytes (32 MiB:
// the largest published descriptions are a few MiB).
const MaxDescriptionSize = 32 << 20

// Description is a loaded OpenAPI description, converted to 3.x.
type Description struct {
	// Name is where the description came from (a file name), for messages.
	Name string
	// Version is the "openapi" or "swagger" version it declared.
	Version string
	// Source is the description's "x-source" note, if any (where a
	// trimmed copy was taken from).
	Source string

	doc   *openapi3.T
	host  string // of the first server
	base  string // the first server's path, without a trailing slash
	paths []*path
}

// path is one path template of the description, split for matching.
type path struct {
	template string   // as the description writes it, base path included
	segs     []string // split at "/", without the leading empty one
	item     *openapi3.PathItem
}

// Load reads an OpenAPI description: a 2.0 ("swagger") description is
// converted to 3.0 first. References must be local ("#/..."): Load never
// reads another file or URL. name is used in messages.
func Load(name string, data []byte) (d *Description, err error) {
	defer func() {
		// A library reading hostile text may panic; that is a refusal.
		if r := recover(); r != nil {
			d, err = nil, fmt.Errorf("%s: the description cannot be read (%v)", name, r)
		}
	}()
	if len(data) > MaxDescriptionSize {
		return nil, fmt.Errorf("%s: %d bytes; a description is at most %d", name, len(data), MaxDescriptionSize)
	}
	var head struct {
		OpenAPI string `json:"openapi" yaml:"openapi"`
		Swagger string `json:"swagger" yaml:"swagger"`
		Source  any    `json:"x-source" yaml:"x-source"`
	}
	js := data
	if err := json.Unmarshal(data, &head); err != nil {
		var y any
		if yerr := yaml.Unmarshal(data, &y); yerr != nil {
			return nil, fmt.Errorf("%s: neither JSON nor YAML: %v", name, yerr)
		}
		b, jerr := json.Marshal(jsonable(y))
		if jerr != nil {
			return nil, fmt.Errorf("%s: YAML that has no JSON form: %v", name, jerr)
		}
		js = b
		if err := json.Unmarshal(js, &head); err != nil {
			return nil, fmt.Errorf("%s: not an OpenAPI description: %v", name, err)
		}
	}
	js, err = lenient(js)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	d = &Description{Name: name, Source: sourceNote(head.Source)}
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	switch {
	case strings.HasPrefix(head.Swagger, "2."):
		d.Version = head.Swagger
		var doc2 openapi2.T
		if err := json.Unmarshal(js, &doc2); err != nil {
			return nil, fmt.Errorf("%s: OpenAPI 2.0: %v", name, err)
		}
		doc, err := openapi2conv.ToV3WithLoader(&doc2, loader, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: converting OpenAPI 2.0 to 3.0: %v", name, err)
		}
		d.doc = doc
	case strings.HasPrefix(head.OpenAPI, "3."):
		d.Version = head.OpenAPI
		doc, err := loader.LoadFromData(js)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		d.doc = doc
	default:
		return nil, fmt.Errorf("%s: not an OpenAPI description: no \"openapi\": \"3.x\" or \"swagger\": \"2.0\" at the top", name)
	}
	if err := loader.ResolveRefsIn(d.doc, nil); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if err := d.index(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return d, nil
}

// lenient rewrites what published descriptions write but OpenAPI does
// not allow, so they load: an "items" that is an array of schemas (JSON
// Schema draft 4's tuple form, which Slack's description uses for
// alternatives) becomes one schema with the union of their properties:
// the items' schema under "type": "array", the schema itself elsewhere.
func lenient(js []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	changed := false
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			if alts, ok := x["items"].([]any); ok {
				changed = true
				if x["type"] == "array" {
					x["items"] = union(alts)
				} else { // no array: the tuple lists what the value may be
					delete(x, "items")
					for k, e := range union(alts).(map[string]any) {
						if _, seen := x[k]; !seen {
							x[k] = e
						}
					}
				}
			}
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	v = walk(v)
	if !changed {
		return js, nil
	}
	return compactJSON(v), nil
}

// union merges alternative schemas into one: the first's members, then
// every property any of them declares.
func union(alts []any) any {
	out := map[string]any{}
	props := map[string]any{}
	for _, a := range alts {
		m, ok := a.(map[string]any)
		if !ok {
			continue
		}
		for k, e := range m {
			if k == "properties" {
				if pm, ok := e.(map[string]any); ok {
					for pk, pe := range pm {
						if _, seen := props[pk]; !seen {
							props[pk] = pe
						}
					}
				}
				continue
			}
			if k == "required" {
				continue // a property one alternative requires another may lack
			}
			if _, seen := out[k]; !seen {
				out[k] = e
			}
		}
	}
	if len(props) > 0 {
		out["properties"] = props
	}
	return out
}

// jsonable turns what a YAML decoder returns into values encoding/json
// can write (YAML maps may have non-string keys).
func jsonable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = jsonable(e)
		}
		return v
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[fmt.Sprint(k)] = jsonable(e)
		}
		return out
	case []any:
		for i, e := range v {
			v[i] = jsonable(e)
		}
	}
	return v
}

// sourceNote renders an x-source note (a string or an object) as one line.
func sourceNote(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case map[string]any:
		var parts []string
		for _, k := range []string{"repo", "path", "commit", "url"} {
			if s, ok := v[k].(string); ok && s != "" {
				parts = append(parts, k+" "+s)
			}
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Sprint(v)
}

// index reads the server and splits the path templates.
func (d *Description) index() error {
	if d.doc.Paths == nil || d.doc.Paths.Len() == 0 {
		return errors.New("the description has no paths")
	}
	if len(d.doc.Servers) > 0 && d.doc.Servers[0] != nil {
		s := d.doc.Servers[0]
		raw := s.URL
		for name, v := range s.Variables {
			if v != nil {
				raw = strings.ReplaceAll(raw, "{"+name+"}", v.Default)
			}
		}
		if u, err := url.Parse(raw); err == nil {
			d.host = strings.ToLower(u.Hostname())
			d.base = strings.TrimSuffix(u.Path, "/")
		}
	}
	for _, t := range d.doc.Paths.InMatchingOrder() {
		full := d.base + t
		p := &path{template: full, item: d.doc.Paths.Value(t)}
		p.segs = strings.Split(strings.TrimPrefix(full, "/"), "/")
		d.paths = append(d.paths, p)
	}
	sort.SliceStable(d.paths, func(i, j int) bool { return d.paths[i].template < d.paths[j].template })
	return nil
}

// Host is the host of the description's first server ("" when it names
// none).
func (d *Description) Host() string { return d.host }

// Title is the description's info.title.
func (d *Description) Title() string {
	if d.doc.Info == nil {
		return ""
	}
	return d.doc.Info.Title
}

// Operation is one operation of a description.
type Operation struct {
	// Method is upper case ("GET"); Path is the template with the server's
	// base path ("/api/v4/projects/{id}").
	Method, Path string
	// ID is the operationId ("" when the description gives none).
	ID string
	op *openapi3.Operation
	p  *path
}

// Operations lists the description's operations, sorted by path, then
// method.
func (d *Description) Operations() []Operation {
	var out []Operation
	for _, p := range d.paths {
		ops := p.item.Operations()
		methods := make([]string, 0, len(ops))
		for m := range ops {
			methods = append(methods, m)
		}
		slices.Sort(methods)
		for _, m := range methods {
			out = append(out, Operation{Method: strings.ToUpper(m), Path: p.template, ID: ops[m].OperationID, op: ops[m], p: p})
		}
	}
	return out
}

// Find returns the operation named by ref: an operationId, or a method and
// a path template ("GET /users/{id}", the server's base path optional).
func (d *Description) Find(ref string) (Operation, error) {
	ops := d.Operations()
	if method, p, ok := strings.Cut(strings.TrimSpace(ref), " "); ok && strings.HasPrefix(strings.TrimSpace(p), "/") {
		method, p = strings.ToUpper(method), strings.TrimSpace(p)
		for _, o := range ops {
			if o.Method == method && (o.Path == p || o.Path == d.base+p) {
				return o, nil
			}
		}
		return Operation{}, fmt.Errorf("%s: no operation %s %s", d.Name, method, p)
	}
	for _, o := range ops {
		if o.ID == ref {
			return o, nil
		}
	}
	var ids []string
	for _, o := range ops {
		if o.ID != "" {
			ids = append(ids, o.ID)
		}
	}
	return Operation{}, fmt.Errorf("%s: no operation with operationId %q (%s)", d.Name, ref, nearest(ref, ids))
}

// nearest suggests the closest of names to s, for messages.
func nearest(s string, names []string) string {
	best, bestD := "", 1<<30
	for _, n := range names {
		if d := distance(strings.ToLower(s), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" || bestD > max(3, len(s)/3) {
		return "see pinned registry import openapi FILE --list"
	}
	return fmt.Sprintf("did you mean %q?", best)
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// parameters returns the operation's parameters, the path item's first
// and the operation's overriding them (OpenAPI 3.1, "Path Item Object").
func (o Operation) parameters() []*openapi3.Parameter {
	var out []*openapi3.Parameter
	add := func(ps openapi3.Parameters) {
		for _, r := range ps {
			if r == nil || r.Value == nil {
				continue
			}
			p := r.Value
			out = slices.DeleteFunc(out, func(q *openapi3.Parameter) bool { return q.In == p.In && strings.EqualFold(q.Name, p.Name) })
			out = append(out, p)
		}
	}
	add(o.p.item.Parameters)
	add(o.op.Parameters)
	return out
}

// parameter returns the parameter named name in in ("query", "header",
// "path"), or nil. Header names compare case-insensitively.
func (o Operation) parameter(in, name string) *openapi3.Parameter {
	for _, p := range o.parameters() {
		if p.In == in && (p.Name == name || in == "header" && strings.EqualFold(p.Name, name)) {
			return p
		}
	}
	return nil
}

// success returns the schema of the first 2xx JSON answer, and whether
// the operation has a 2xx answer at all.
func (o Operation) success() (*openapi3.Schema, bool) {
	if o.op.Responses == nil {
		return nil, false
	}
	m := o.op.Responses.Map()
	codes := make([]string, 0, len(m))
	for c := range m {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	found := false
	for _, c := range codes {
		if !(len(c) == 3 && c[0] == '2' || strings.EqualFold(c, "2XX")) {
			continue
		}
		found = true
		r := m[c]
		if r == nil || r.Value == nil {
			continue
		}
		if s := jsonSchema(r.Value.Content); s != nil {
			return s, true
		}
	}
	return nil, found
}

// successHeaders returns the names of the headers the 2xx answers declare.
func (o Operation) successHeaders() []string {
	var out []string
	if o.op.Responses == nil {
		return nil
	}
	for c, r := range o.op.Responses.Map() {
		if len(c) != 3 || c[0] != '2' || r == nil || r.Value == nil {
			continue
		}
		for h := range r.Value.Headers {
			out = append(out, h)
		}
	}
	return out
}

// jsonSchema returns the schema of the content's JSON media type (any
// "application/json" or "+json" type), or nil.
func jsonSchema(c openapi3.Content) *openapi3.Schema {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		mt, _, _ := strings.Cut(strings.ToLower(k), ";")
		if mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "*/*" {
			if m := c[k]; m != nil && m.Schema != nil && m.Schema.Value != nil {
				return m.Schema.Value
			}
		}
	}
	return nil
}

// requestBody returns the schema of the operation's body in the given
// media type ("application/json" or "application/x-www-form-urlencoded"),
// or nil.
func (o Operation) requestBody(media string) *openapi3.Schema {
	if o.op.RequestBody == nil || o.op.RequestBody.Value == nil {
		return nil
	}
	for k, m := range o.op.RequestBody.Value.Content {
		mt, _, _ := strings.Cut(strings.ToLower(k), ";")
		if (mt == media || media == "application/json" && strings.HasSuffix(mt, "+json")) && m != nil && m.Schema != nil {
			return m.Schema.Value
		}
	}
	return nil
}

// bodyMedia lists the request body's media types.
func (o Operation) bodyMedia() []string {
	if o.op.RequestBody == nil || o.op.RequestBody.Value == nil {
		return nil
	}
	var out []string
	for k := range o.op.RequestBody.Value.Content {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// typeOf returns a schema's JSON type, "" when it declares none, ignoring
// "null" (OpenAPI 3.1 writes nullable types as ["string", "null"]).
func typeOf(s *openapi3.Schema) string {
	if s == nil || s.Type == nil {
		if s != nil {
			switch {
			case len(s.Properties) > 0:
				return "object"
			case s.Items != nil:
				return "array"
			}
			for _, sub := range append(append(slices.Clone(s.AllOf), s.OneOf...), s.AnyOf...) {
				if sub != nil && sub.Value != nil {
					if t := typeOf(sub.Value); t != "" {
						return t
					}
				}
			}
		}
		return ""
	}
	for _, t := range s.Type.Slice() {
		if t != "null" {
			return t
		}
	}
	return ""
}

// compactJSON is json.Marshal without HTML escaping.
func compactJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
