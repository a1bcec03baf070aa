package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// node records where a value starts in the file, and its members or
// elements, so that a problem found later can be given a line and column.
type node struct {
	off    int              // byte offset of the value
	keyOff int              // byte offset of its key, for object members
	keys   map[string]*node // object members (the first of duplicates)
	elems  []*node          // array elements
}

// find returns the offset of the value at path (keys joined by ".", array
// indices as "[i]"; a key may itself contain "." or "[", the shortest
// matching key wins) or, when it is absent, of its nearest enclosing
// value; exact reports whether the value itself was found.
func (n *node) find(path string) (off int, exact bool) {
	for path != "" {
		var next *node
		if path[0] == '[' {
			j := strings.IndexByte(path, ']')
			if i, err := strconv.Atoi(path[1:max(j, 1)]); j > 0 && err == nil && i >= 0 && i < len(n.elems) {
				next, path = n.elems[i], path[j+1:]
			}
		} else {
			for i := 1; i <= len(path) && n.keys != nil; i++ {
				if i < len(path) && path[i] != '.' && path[i] != '[' {
					continue
				}
				if c, ok := n.keys[path[:i]]; ok {
					next, path = c, path[i:]
					break
				}
			}
		}
		if next == nil {
			return n.off, false
		}
		n, path = next, strings.TrimPrefix(path, ".")
	}
	return n.off, true
}

// walker reads a manifest once with encoding/json's token stream. On the
// way it builds the position tree, refuses duplicate keys in any object,
// and checks the document's shape against the Go types (Manifest and
// below): known fields only, matched case-sensitively (unlike
// encoding/json), JSON types matching the Go types, integers and numbers
// in range, no null outside body_json and default. A document that passes
// unmarshals into a Manifest without error.
type walker struct {
	p     *parser
	dec   *json.Decoder
	stack []string // path segments of the current value: keys and "[i]"
}

var (
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	pickType       = reflect.TypeFor[Pick]()
	pickShapeType  = reflect.TypeFor[pickShape]()
	fieldsType     = reflect.TypeFor[fieldsShape]()
)

// walk checks the whole document and returns the root of the position
// tree, or nil, after recording the problem, when the text is not JSON or
// has trailing data. Shape problems are recorded and walking goes on.
func (w *walker) walk() *node {
	w.dec = json.NewDecoder(bytes.NewReader(w.p.data))
	w.dec.UseNumber()
	root, err := w.value(reflect.TypeFor[Manifest]())
	if err != nil {
		w.syntax(err)
		return nil
	}
	off := w.start()
	if _, err := w.dec.Token(); err != io.EOF {
		w.p.addAt(off, "", "", "trailing data after the manifest's closing brace: a file holds exactly one JSON object")
		return nil
	}
	return root
}

func (w *walker) syntax(err error) {
	off := int(w.dec.InputOffset())
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		off = int(se.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		off = len(w.p.data)
		err = errors.New("unexpected end of file")
	}
	w.p.addAt(off, "", "", "not valid JSON: "+strings.TrimPrefix(err.Error(), "json: "))
}

// start returns the offset where the next token begins: the decoder's
// offset is the end of the previous token, before any separator.
func (w *walker) start() int {
	off := int(w.dec.InputOffset())
	for off < len(w.p.data) && strings.IndexByte(" \t\r\n,:", w.p.data[off]) >= 0 {
		off++
	}
	return off
}

// value reads one value and checks it against t; t == nil accepts any
// JSON (body_json, default, and the inside of refused values). Only syntax
// errors are returned.
func (w *walker) value(t reflect.Type) (*node, error) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case rawMessageType:
		t = nil
	case pickType:
		t = pickShapeType // Pick encodes its fields as an object (pick.go)
	}
	n := &node{off: w.start()}
	tok, err := w.dec.Token()
	if err != nil {
		return nil, err
	}
	var got string
	switch tok := tok.(type) {
	case json.Delim: // '{' or '['; Token reports a stray '}' or ']' as a syntax error
		if tok == '{' {
			return n, w.object(n, t)
		}
		return n, w.array(n, t)
	case string:
		if t == nil || t.Kind() == reflect.String {
			return n, nil
		}
		got = "a string"
	case json.Number:
		if t == nil {
			return n, nil
		}
		switch t.Kind() {
		case reflect.Int:
			if _, err := strconv.ParseInt(tok.String(), 10, 32); err != nil {
				w.shape(n.off, fmt.Sprintf("want %s (32-bit, no fraction or exponent), got %s", describe(t), tok))
			}
			return n, nil
		case reflect.Float64:
			if f, err := strconv.ParseFloat(tok.String(), 64); err != nil || math.IsInf(f, 0) {
				w.shape(n.off, fmt.Sprintf("want a finite number, got %s", tok))
			}
			return n, nil
		}
		got = "a number"
	case bool:
		if t == nil || t.Kind() == reflect.Bool {
			return n, nil
		}
		got = "a boolean"
	case nil:
		if t == nil {
			return n, nil
		}
		got = "null"
	}
	w.shape(n.off, fmt.Sprintf("want %s, got %s", describe(t), got))
	return n, nil
}

func (w *walker) object(n *node, t reflect.Type) error {
	var fields map[string]reflect.Type
	switch {
	case t == nil:
	case t.Kind() == reflect.Struct:
		fields = jsonFields(t)
	case t.Kind() == reflect.Map:
	default:
		w.shape(n.off, fmt.Sprintf("want %s, got an object", describe(t)))
		t = nil
	}
	n.keys = map[string]*node{}
	for w.dec.More() {
		koff := w.start()
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		key := tok.(string) // inside an object, Token returns keys as strings
		w.stack = append(w.stack, key)
		first, dup := n.keys[key]
		if dup && !w.p.full() {
			line, col := lineCol(w.p.data, first.keyOff)
			w.shape(koff, fmt.Sprintf("duplicate key %q (first at line %d, column %d): a key may appear once per object", key, line, col))
		}
		var ct reflect.Type
		switch {
		case fields != nil:
			var ok bool
			if ct, ok = fields[key]; !ok {
				w.shape(koff, fmt.Sprintf("unknown field %q (allowed: %s)", key, strings.Join(slices.Sorted(maps.Keys(fields)), ", ")))
			}
		case t != nil:
			ct = t.Elem()
		}
		c, err := w.value(ct)
		if err != nil {
			return err
		}
		if !dup {
			c.keyOff = koff
			n.keys[key] = c
		}
		w.stack = w.stack[:len(w.stack)-1]
	}
	_, err := w.dec.Token() // '}'
	return err
}

func (w *walker) array(n *node, t reflect.Type) error {
	if t != nil && t.Kind() != reflect.Slice {
		w.shape(n.off, fmt.Sprintf("want %s, got an array", describe(t)))
		t = nil
	}
	var et reflect.Type
	if t != nil {
		et = t.Elem()
	}
	for i := 0; w.dec.More(); i++ {
		w.stack = append(w.stack, "["+strconv.Itoa(i)+"]")
		c, err := w.value(et)
		if err != nil {
			return err
		}
		n.elems = append(n.elems, c)
		w.stack = w.stack[:len(w.stack)-1]
	}
	_, err := w.dec.Token() // ']'
	return err
}

// shape records a shape problem at the current value; Parse's later
// checks stay quiet at and below its path.
func (w *walker) shape(off int, msg string) {
	if w.p.full() {
		return
	}
	l := locOf(w.stack)
	w.p.bad[l.path()] = true
	w.p.addAt(off, l.op, l.field, msg)
}

// loc is where a value sits: the op it belongs to (if any) and its field
// path, relative to the op.
type loc struct{ op, field string }

// locOf builds the loc of the value at path segments segs.
func locOf(segs []string) loc {
	var l loc
	if len(segs) >= 2 && segs[0] == "ops" {
		l.op, segs = segs[1], segs[2:]
	}
	var b strings.Builder
	for _, s := range segs {
		if b.Len() > 0 && !strings.HasPrefix(s, "[") {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	l.field = b.String()
	return l
}

// path is the loc as one dot path from the document root.
func (l loc) path() string {
	switch {
	case l.op == "":
		return l.field
	case l.field == "":
		return "ops." + l.op
	}
	return "ops." + l.op + "." + l.field
}

// jsonFields maps the JSON names of t's fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	m := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && name != "" && name != "-" {
			m[name] = f.Type
		}
	}
	return m
}

// describe names the JSON that fits t, for messages.
func describe(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	article := func(s string) string { return strings.TrimPrefix(strings.TrimPrefix(s, "a "), "an ") }
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "an array of " + article(describe(t.Elem())) + "s"
	case reflect.Map:
		if t == fieldsType {
			return `an object of dot path → class (` + strings.Join(Classes(), ", ") + `), e.g. {"id": "identifier", "title": "text"}`
		}
		return "an object of " + article(describe(t.Elem())) + "s"
	}
	return "an object"
}

// lineCol converts a byte offset into a 1-based line and byte column;
// a negative offset (the file as a whole) gives 0, 0.
func lineCol(data []byte, off int) (line, col int) {
	if off < 0 {
		return 0, 0
	}
	off = min(off, len(data))
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	return line, off - (bytes.LastIndexByte(data[:off], '\n') + 1) + 1
}
