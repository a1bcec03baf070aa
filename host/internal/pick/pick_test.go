package pick

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestProject(t *testing.T) {
	tests := []struct {
		name   string
		root   string
		fields []string
		doc    string
		want   string // "" means an error
	}{
		{"array of objects", "", []string{"number", "user.login", "labels.name"},
			`[{"number":1,"title":"x","user":{"login":"a","id":9},"labels":[{"name":"bug","color":"f00"},{"name":"ui"}]},{"number":2,"user":null,"labels":[]}]`,
			`[{"number":1,"user":{"login":"a"},"labels":[{"name":"bug"},{"name":"ui"}]},{"number":2,"labels":[]}]`},
		{"root descends envelopes", "data.viewer", []string{"name"}, `{"data":{"viewer":{"id":"x","name":"Ada"}}}`, `{"name":"Ada"}`},
		{"root missing yields null", "data.viewer", []string{"name"}, `{"errors":[]}`, `null`},
		{"root through a scalar yields null", "data.viewer", []string{"name"}, `{"data":5}`, `null`},
		{"empty fields yield null", "", nil, `{"secret":"x"}`, `null`},
		{"document order kept, keys canonical", "", []string{"b", "a"}, `{"a":1,"\u0062":2,"c":3}`, `{"a":1,"b":2}`},
		{"values canonical, without white space", "", []string{"a"}, `{"a" : { "x" : [ 1 , "é\u00e9\n\/\u0007", -0.5E+2 ] , "\u0079": true } }`, `{"a":{"x":[1,"éé\n/\u0007",-0.5E+2],"y":true}}`},
		{"duplicate key inside a kept value refused", "", []string{"title"}, `{"title":{"a":1,"a":2}}`, ""},
		{"duplicate escaped key inside a kept value refused", "", []string{"title"}, `{"title":[{"a":1,"\u0061":2}]}`, ""},
		{"escaped lone surrogate in a kept value refused", "", []string{"title"}, `{"title":"\ud800"}`, ""},
		{"escaped lone low surrogate refused", "", []string{"title"}, `{"title":"a\udc00b"}`, ""},
		{"escaped surrogate pair kept", "", []string{"title"}, `{"title":"\ud83d\ude00"}`, `{"title":"😀"}`},
		{"escaped lone surrogate in a kept key refused", "", []string{"t"}, `{"t":{"\udfff":1}}`, ""},
		{"a number out of range refused", "", []string{"id"}, `{"id":1e400}`, ""},
		{"a 400-digit integer refused", "", []string{"id"}, `{"id":` + strings.Repeat("9", 400) + `}`, ""},
		{"a 5000-digit integer refused", "", []string{"t"}, `{"t":[` + strings.Repeat("1", 5000) + `]}`, ""},
		{"a huge number where dropped is fine", "", []string{"a"}, `{"a":1,"id":1e400}`, `{"a":1}`},
		{"prefix field keeps the whole value", "", []string{"user", "user.login"}, `{"user":{"login":"a","id":1}}`, `{"user":{"login":"a","id":1}}`},
		{"scalar where fields expected is omitted", "", []string{"user.login"}, `{"user":"plain"}`, `{}`},
		{"scalars in arrays are dropped", "", []string{"name"}, `[1,{"name":"a"},"x",null,[{"name":"b"}]]`, `[{"name":"a"},[{"name":"b"}]]`},
		{"missing fields omitted", "", []string{"a", "b.c"}, `{"z":1}`, `{}`},
		{"top-level scalar", "", []string{"a"}, `"x"`, `null`},
		{"empty containers", "", []string{"a"}, `{"a":[],"b":{}}`, `{"a":[]}`},
		{"duplicate picked key refused", "", []string{"a"}, `{"a":1,"a":2}`, ""},
		{"duplicate root key refused", "data", []string{"a"}, `{"data":{},"data":{"a":1}}`, ""},
		{"duplicate unpicked key allowed", "", []string{"a"}, `{"a":1,"b":2,"b":3}`, `{"a":1}`},
		{"invalid JSON refused even where dropped", "", []string{"a"}, `{"a":1,"b":[1,}`, ""},
		{"trailing data refused", "", []string{"a"}, `{"a":1} x`, ""},
		{"invalid UTF-8 refused", "", []string{"a"}, "{\"a\":\"\xff\"}", ""},
		{"nesting past the limit refused", "", []string{"a"}, `{"b":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := New(tt.root, tt.fields).Project(nil, []byte(tt.doc))
			if tt.want == "" {
				if err == nil {
					t.Fatalf("accepted: %s", got)
				}
				if !errors.Is(err, errProjection) {
					t.Fatalf("error %v does not wrap errProjection", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
			ref, err := referenceProject([]byte(tt.doc), tt.root, tt.fields)
			if err != nil || string(ref) != tt.want {
				t.Fatalf("reference disagrees: %s %v", ref, err)
			}
		})
	}
}

// referenceProject is the simple projection the fast one is checked
// against: encoding/json reads the document into ordered raw members, and
// the rules of docs/MANIFEST.md ("Pick") are applied recursively.
func referenceProject(doc []byte, root string, fields []string) ([]byte, error) {
	if !json.Valid(doc) {
		return nil, errors.New("invalid")
	}
	v := json.RawMessage(bytes.TrimSpace(doc))
	if len(fields) == 0 {
		return []byte("null"), nil
	}
	if root != "" {
		for _, seg := range strings.Split(root, ".") {
			ms, ok, err := refMembers(v)
			if err != nil {
				return nil, err
			}
			if !ok {
				return []byte("null"), nil
			}
			var next json.RawMessage
			seen := false
			for _, m := range ms {
				if m.key == seg {
					if seen {
						return nil, errors.New("duplicate root key")
					}
					seen, next = true, m.val
				}
			}
			if !seen {
				return []byte("null"), nil
			}
			v = next
		}
	}
	tree := map[string]any{}
	for _, f := range fields {
		n := tree
		segs := strings.Split(f, ".")
		for i, s := range segs {
			if c, ok := n[s]; ok && c == nil {
				break // a prefix already keeps the whole value
			}
			if i == len(segs)-1 {
				n[s] = nil
				break
			}
			c, ok := n[s].(map[string]any)
			if !ok {
				c = map[string]any{}
				n[s] = c
			}
			n = c
		}
	}
	var out bytes.Buffer
	if err := refProjectValue(&out, v, tree); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

type refMember struct {
	key string
	val json.RawMessage
}

func refMembers(v json.RawMessage) ([]refMember, bool, error) {
	if len(v) == 0 || v[0] != '{' {
		return nil, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.Token() // {
	var ms []refMember
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, false, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false, err
		}
		ms = append(ms, refMember{k.(string), raw})
	}
	return ms, true, nil
}

func refProjectValue(out *bytes.Buffer, v json.RawMessage, node map[string]any) error {
	if node == nil {
		return refCanonical(out, v)
	}
	switch v[0] {
	case '{':
		ms, _, err := refMembers(v)
		if err != nil {
			return err
		}
		out.WriteByte('{')
		seen := map[string]bool{}
		wrote := false
		for _, m := range ms {
			child, ok := node[m.key]
			if !ok {
				continue
			}
			if seen[m.key] {
				return errors.New("duplicate")
			}
			seen[m.key] = true
			sub, _ := child.(map[string]any)
			if sub != nil && m.val[0] != '{' && m.val[0] != '[' {
				continue
			}
			if wrote {
				out.WriteByte(',')
			}
			kb, _ := json.Marshal(m.key)
			out.Write(kb)
			out.WriteByte(':')
			if err := refProjectValue(out, m.val, sub); err != nil {
				return err
			}
			wrote = true
		}
		out.WriteByte('}')
	case '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(v, &elems); err != nil {
			return err
		}
		out.WriteByte('[')
		wrote := false
		for _, e := range elems {
			if e[0] != '{' && e[0] != '[' {
				continue
			}
			if wrote {
				out.WriteByte(',')
			}
			if err := refProjectValue(out, e, node); err != nil {
				return err
			}
			wrote = true
		}
		out.WriteByte(']')
	default:
		out.WriteString("null")
	}
	return nil
}

// refCanonical writes a kept value as Project documents it, with
// encoding/json reading it: strings decoded and written with only the
// escapes JSON needs, numbers as written; a duplicate key, an escaped
// lone surrogate or a number over 64 characters or out of float64 range
// refused.
func refCanonical(out *bytes.Buffer, v json.RawMessage) error {
	if refLoneSurrogate(v) {
		return errors.New("lone surrogate")
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var walk func() error
	walk = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '[' {
				out.WriteByte('[')
				for n := 0; dec.More(); n++ {
					if n > 0 {
						out.WriteByte(',')
					}
					if err := walk(); err != nil {
						return err
					}
				}
				dec.Token()
				out.WriteByte(']')
				return nil
			}
			out.WriteByte('{')
			seen := map[string]bool{}
			for n := 0; dec.More(); n++ {
				k, _ := dec.Token()
				if seen[k.(string)] {
					return errors.New("duplicate key")
				}
				seen[k.(string)] = true
				if n > 0 {
					out.WriteByte(',')
				}
				refString(out, k.(string))
				out.WriteByte(':')
				if err := walk(); err != nil {
					return err
				}
			}
			dec.Token()
			out.WriteByte('}')
		case string:
			refString(out, t)
		case json.Number:
			if len(t) > 64 {
				return errors.New("long number")
			}
			if _, err := t.Float64(); err != nil {
				return err
			}
			out.WriteString(string(t))
		case bool:
			fmt.Fprint(out, t)
		case nil:
			out.WriteString("null")
		}
		return nil
	}
	return walk()
}

func refString(out *bytes.Buffer, s string) {
	out.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			out.WriteByte('\\')
			out.WriteRune(r)
		case r == '\n':
			out.WriteString(`\n`)
		case r == '\r':
			out.WriteString(`\r`)
		case r == '\t':
			out.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(out, `\u%04x`, r)
		default:
			out.WriteRune(r)
		}
	}
	out.WriteByte('"')
}

// refLoneSurrogate finds an escaped lone surrogate anywhere in v, read
// with a regular expression over the escapes (a backslash occurs only
// inside strings).
func refLoneSurrogate(v []byte) bool {
	locs := escapeRE.FindAllIndex(v, -1)
	hex := func(i int) (uint64, bool) {
		if locs[i][1]-locs[i][0] != 6 {
			return 0, false
		}
		h, _ := strconv.ParseUint(string(v[locs[i][0]+2:locs[i][1]]), 16, 16)
		return h, true
	}
	for i := 0; i < len(locs); i++ {
		h, ok := hex(i)
		switch {
		case !ok:
		case h >= 0xDC00 && h < 0xE000:
			return true
		case h >= 0xD800 && h < 0xDC00:
			if i+1 >= len(locs) || locs[i+1][0] != locs[i][1] {
				return true
			}
			if l, ok := hex(i + 1); !ok || l < 0xDC00 || l >= 0xE000 {
				return true
			}
			i++
		}
	}
	return false
}

var escapeRE = regexp.MustCompile(`\\(u[0-9a-fA-F]{4}|.)`)

// FuzzPick is differential: the streaming projection and the reference
// agree byte for byte on every document both accept, and the streaming one
// never panics. The streaming projection may refuse what encoding/json
// accepts only for invalid UTF-8 or nesting past MaxDepth.
func FuzzPick(f *testing.F) {
	f.Add([]byte(`[{"number":1,"user":{"login":"a"},"labels":[{"name":"b"}]}]`), "", "number,user.login,labels.name")
	f.Add([]byte(`{"data":{"viewer":{"name":"x","id":1}}}`), "data.viewer", "name")
	f.Add([]byte(`{"a":{"b":[{"c":1},2,[{"c":3}]]},"a2":"\u0041"}`), "", "a.b.c,a2")
	f.Add([]byte(`{"results":[{"id":"1","properties":{"email":"e"}}],"paging":{}}`), "results", "id,properties.email")
	f.Fuzz(func(t *testing.T, doc []byte, root, fieldList string) {
		var fields []string
		if fieldList != "" {
			fields = strings.Split(fieldList, ",")
		}
		for _, f := range fields {
			for _, s := range strings.Split(f, ".") {
				if s == "" {
					return // the loader refuses empty path segments
				}
			}
		}
		if root != "" {
			for _, s := range strings.Split(root, ".") {
				if s == "" {
					return
				}
			}
		}
		got, err := New(root, fields).Project(nil, doc)
		want, rerr := referenceProject(doc, root, fields)
		switch {
		case err == nil && rerr == nil:
			if !bytes.Equal(got, want) {
				t.Fatalf("projection differs:\nfast %s\nref  %s", got, want)
			}
			if !json.Valid(got) {
				t.Fatalf("output is not JSON: %s", got)
			}
		case err == nil && rerr != nil:
			t.Fatalf("fast accepted what the reference refused (%v): %s", rerr, got)
		case err != nil && rerr == nil:
			if utf8.Valid(doc) && depth(doc) < MaxDepth-2 {
				t.Fatalf("fast refused a valid document: %v", err)
			}
		}
	})
}

func depth(doc []byte) int {
	dec := json.NewDecoder(bytes.NewReader(doc))
	d, max := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF || err != nil {
			return max
		}
		if delim, ok := tok.(json.Delim); ok {
			if delim == '{' || delim == '[' {
				d++
				if d > max {
					max = d
				}
			} else {
				d--
			}
		}
	}
}
