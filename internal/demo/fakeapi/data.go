package fakeapi

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The fake's data: the embedded fixtures of testdata/<service>/, the JSON
// tree they are read into (objects keep their members' order), and the
// templates answers are filled from.

//go:embed testdata
var dataFS embed.FS

// kv is one member of an ordered JSON object.
type kv struct {
	k string
	v any
}

// ordered is a JSON object that keeps its members' order, as providers
// answer (GitHub, Linear: a fixed, non-alphabetical order).
type ordered []kv

// MarshalJSON implements json.Marshaler.
func (o ordered) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, m := range o {
		k, err1 := marshal(m.k)
		v, err2 := marshal(m.v)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// get1 returns the value of member k, or nil.
func (o ordered) get1(k string) (any, bool) {
	if i := slices.IndexFunc(o, func(m kv) bool { return m.k == k }); i >= 0 {
		return o[i].v, true
	}
	return nil, false
}

// set replaces member k, or appends it.
func (o ordered) set(k string, v any) ordered {
	if i := slices.IndexFunc(o, func(m kv) bool { return m.k == k }); i >= 0 {
		o[i].v = v
		return o
	}
	return append(o, kv{k, v})
}

// decodeTree reads one JSON value: objects as ordered, numbers as
// json.Number (ids keep every digit), and a duplicate key is an error.
func decodeTree(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := treeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the value")
	}
	return v, nil
}

func treeValue(dec *json.Decoder) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('{'):
		o := ordered{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			if _, dup := o.get1(k.(string)); dup {
				return nil, fmt.Errorf("key %q twice in an object", k)
			}
			v, err := treeValue(dec)
			if err != nil {
				return nil, err
			}
			o = append(o, kv{k.(string), v})
		}
		_, err := dec.Token()
		return o, err
	case json.Delim('['):
		a := []any{}
		for dec.More() {
			v, err := treeValue(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token()
		return a, err
	}
	return t, nil
}

// jsonTemplate is a JSON template read as a tree (see fill).
type jsonTemplate struct{ tree any }

// UnmarshalJSON implements json.Unmarshaler.
func (t *jsonTemplate) UnmarshalJSON(b []byte) error {
	v, err := decodeTree(b)
	t.tree = v
	return err
}

// fixtures is one service's fixture directory, merged: every *.json file
// is an object whose members (provider, templates, collections, ops,
// about) are joined; a member named in two files is an error.
type fixtures struct {
	Provider    *provider
	Templates   map[string]jsonTemplate
	Collections map[string]jsonTemplate
	Ops         map[string]*opFixture
}

// loadFixtures reads the *.json files directly in dir of fsys.
func loadFixtures(fsys fs.FS, dir string) (*fixtures, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no *.json fixtures", dir)
	}
	slices.Sort(names)
	f := &fixtures{Templates: map[string]jsonTemplate{}, Collections: map[string]jsonTemplate{}, Ops: map[string]*opFixture{}}
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		if _, err := decodeTree(b); err != nil { // duplicate keys are refused here
			return nil, fmt.Errorf("%s: %v", n, err)
		}
		var part struct {
			About       any
			Provider    *provider
			Templates   map[string]jsonTemplate
			Collections map[string]jsonTemplate
			Ops         map[string]*opFixture
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&part); err != nil {
			return nil, fmt.Errorf("%s: %v", n, err)
		}
		if part.Provider != nil {
			if f.Provider != nil {
				return nil, fmt.Errorf("%s: a second provider", n)
			}
			f.Provider = part.Provider
		}
		for what, pair := range map[string][2]map[string]jsonTemplate{"template": {f.Templates, part.Templates}, "collection": {f.Collections, part.Collections}} {
			for k, v := range pair[1] {
				if _, dup := pair[0][k]; dup {
					return nil, fmt.Errorf("%s: %s %q is also in another file", n, what, k)
				}
				pair[0][k] = v
			}
		}
		for k, v := range part.Ops {
			if _, dup := f.Ops[k]; dup {
				return nil, fmt.Errorf("%s: op %q is also in another file", n, k)
			}
			f.Ops[k] = v
		}
	}
	if f.Provider == nil {
		return nil, fmt.Errorf("%s: no provider", dir)
	}
	return f, nil
}

// env is what a template's placeholders name: top-level names (args,
// row, page, a find's or insert's "as" name, header, query) and, for a
// bare name, the generated values (now, uuid, ...) and then the members
// of row.
type env map[string]any

// lookup resolves a dot path in e; "path|text" is the value's text (a
// number as a string).
func (e env) lookup(name string) (any, bool) {
	if p, ok := strings.CutSuffix(name, "|text"); ok {
		v, ok := e.lookup(p)
		if !ok {
			return nil, false
		}
		return text(v), true
	}
	head, rest, _ := strings.Cut(name, ".")
	v, ok := e[head]
	if !ok {
		if g, ok := generated(head); ok && rest == "" {
			return g, true
		}
		if row, ok := e["row"]; ok {
			return dig(row, name)
		}
		return nil, false
	}
	if rest == "" {
		return v, true
	}
	return dig(v, rest)
}

// generated are values made afresh for each answer.
func generated(name string) (any, bool) {
	now := time.Now().UTC()
	switch name {
	case "now":
		return now.Format(time.RFC3339), true
	case "now_milli":
		return now.Format("2006-01-02T15:04:05.000Z"), true
	case "today":
		return now.Format("2006-01-02"), true
	case "unix":
		return json.Number(strconv.FormatInt(now.Unix(), 10)), true
	case "unix_ms":
		return json.Number(strconv.FormatInt(now.UnixMilli(), 10)), true
	case "uuid":
		return mint([]any{"", "uuid", 0.0}), true
	case "hex8":
		return mint([]any{"", "hex", 8.0}), true
	case "hex24":
		return mint([]any{"", "hex", 24.0}), true
	case "alnum14":
		return mint([]any{"", "alnum", 14.0}), true
	}
	return nil, false
}

// dig follows a dot path through objects and, by index, arrays.
func dig(v any, p string) (any, bool) {
	for _, seg := range strings.Split(p, ".") {
		switch x := v.(type) {
		case ordered:
			var ok bool
			if v, ok = x.get1(seg); !ok {
				return nil, false
			}
		case map[string]any:
			var ok bool
			if v, ok = x[seg]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

var tmplVar = regexp.MustCompile(`\$\{([A-Za-z0-9_.\-]+(?:\|text)?)\}`)

// placeholderName returns the name of a template string that is exactly
// one placeholder, "${name}".
func placeholderName(s string) (string, bool) {
	m := tmplVar.FindStringSubmatchIndex(s)
	if m == nil || m[0] != 0 || m[1] != len(s) {
		return "", false
	}
	return s[m[2]:m[3]], true
}

// text is a value as it reads in a string: numbers as written, null as
// "".
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	b, _ := marshal(v)
	return string(b)
}

// expand fills each ${name} of s with the text of its value ("" when
// absent).
func expand(s string, e env) string {
	if !strings.Contains(s, "${") {
		return s
	}
	return tmplVar.ReplaceAllStringFunc(s, func(m string) string {
		v, _ := e.lookup(m[2 : len(m)-1])
		return text(v)
	})
}

// truthy says whether a template value counts as present for $if: not
// absent, null, false, "" or an empty list.
func truthy(v any, ok bool) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	}
	return ok
}

// filler fills templates of one service.
type filler struct {
	tmpl map[string]jsonTemplate
	data func(coll string) []any // a collection's rows, for $lookup
}

// fill instantiates template t in e. A string "${name}" becomes the value
// (any JSON type; an object member whose value is absent is dropped), a
// longer string has each ${name} replaced by its text, other literals
// stay. An object may carry directives:
//
//	"$if": "${x}"            the member holding this object is dropped unless x is present and not null, false, "" or []
//	"$use": "t" or ["t","u"] the named templates, filled, then this object's other members
//	"$row": "${x}"           fill the $use templates (or $each element) with row = x
//	"$each": "${list}"       an array: the object filled once per element, as row (and item)
//	"$lookup": "collection", "$key": "field", "$value": "${x}"   row = the first row whose field is x (null when none)
func (f *filler) fill(t any, e env) (any, bool) {
	switch x := t.(type) {
	case ordered:
		return f.object(x, e)
	case []any:
		out := []any{}
		for _, el := range x {
			if v, ok := f.fill(el, e); ok {
				out = append(out, v)
			}
		}
		return out, true
	case string:
		if name, ok := placeholderName(x); ok {
			return e.lookup(name)
		}
		return expand(x, e), true
	}
	return t, true
}

func (f *filler) object(x ordered, e env) (any, bool) {
	dir := map[string]any{}
	var rest ordered
	for _, m := range x {
		if strings.HasPrefix(m.k, "$") {
			dir[m.k] = m.v
		} else {
			rest = append(rest, m)
		}
	}
	if len(dir) == 0 {
		out := ordered{}
		for _, m := range x {
			if v, ok := f.fill(m.v, e); ok {
				out = append(out, kv{m.k, v})
			}
		}
		return out, true
	}
	if c, ok := dir["$if"]; ok {
		v, present := f.fill(c, e)
		if !truthy(v, present) {
			return nil, false
		}
	}
	if list, ok := dir["$each"]; ok {
		v, _ := f.fill(list, e)
		items, _ := v.([]any)
		out := []any{}
		inner := slices.DeleteFunc(slices.Clone(x), func(m kv) bool { return m.k == "$each" || m.k == "$if" })
		if len(inner) == 0 { // {"$each": list}: the elements as they are
			return items, true
		}
		for _, it := range items {
			sub := withRow(e, it)
			sub["item"] = it
			if v, ok := f.object(inner, sub); ok {
				out = append(out, v)
			}
		}
		return out, true
	}
	if coll, ok := dir["$lookup"].(string); ok {
		key, _ := dir["$key"].(string)
		want, _ := f.fill(dir["$value"], e)
		var row any
		for _, r := range f.data(coll) {
			if v, ok := dig(r, key); ok && text(v) == text(want) {
				row = r
				break
			}
		}
		if row == nil {
			return nil, true
		}
		e = withRow(e, row)
		if _, ok := dir["$use"]; !ok && len(rest) == 0 {
			return row, true
		}
	}
	if r, ok := dir["$row"]; ok {
		v, present := f.fill(r, e)
		if !present || v == nil {
			return nil, true
		}
		e = withRow(e, v)
	}
	out := ordered{}
	if use, ok := dir["$use"]; ok {
		var names []string
		switch u := use.(type) {
		case string:
			names = []string{u}
		case []any:
			for _, n := range u {
				names = append(names, text(n))
			}
		}
		for _, n := range names {
			t, ok := f.tmpl[n]
			if !ok {
				panic(fmt.Sprintf("fakeapi: no template %q", n))
			}
			v, _ := f.fill(t.tree, e)
			switch v := v.(type) {
			case ordered:
				out = append(out, v...)
			default:
				if len(names) == 1 && len(rest) == 0 {
					return v, true
				}
			}
		}
	}
	for _, m := range rest {
		if v, ok := f.fill(m.v, e); ok {
			out = out.set(m.k, v)
		}
	}
	return out, true
}

// withRow is a copy of e with row set.
func withRow(e env, row any) env {
	out := make(env, len(e)+1)
	for k, v := range e {
		out[k] = v
	}
	out["row"] = row
	return out
}

// writeJSON answers with v as JSON. Encoding errors are programming errors
// in the fake and panic (net/http recovers and logs them).
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fakeapi: encoding response: %v", err))
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// marshal encodes v like the providers do: no HTML escaping of <, >, &.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
