package fakeapi

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// The fake's data: the embedded files of testdata/, the recorded-shape
// templates they hold, how templates are filled, and the JSON the answers
// are written in.

//go:embed testdata
var dataFS embed.FS

// obj is a recorded-shape JSON object of the fake's data.
type obj = map[string]any

// loadData decodes one embedded data file (testdata/<provider>/<name>);
// the files are part of the fake, so an error is a programming error.
func loadData(path string, v any) {
	b, err := dataFS.ReadFile("testdata/" + path)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		panic(fmt.Sprintf("fakeapi: data file %s: %v", path, err))
	}
}

// jsonTemplate is a recorded-shape JSON template, kept as its text (walked
// in document order by gjson, so every object keeps its members' order).
type jsonTemplate struct{ gjson.Result }

// UnmarshalJSON implements json.Unmarshaler.
func (t *jsonTemplate) UnmarshalJSON(b []byte) error {
	t.Result = gjson.ParseBytes(b)
	return nil
}

// loadTemplates returns the members of an embedded template file
// (testdata/<path>, a JSON object).
func loadTemplates(path string) map[string]gjson.Result {
	var t jsonTemplate
	loadData(path, &t)
	return t.Map()
}

// fill instantiates a template: a string "${name}" becomes vals[name] (any
// value; an object member whose name is not in vals is dropped), ${name}
// inside a longer string becomes its text, and any other literal stays as
// the template writes it.
func fill(t gjson.Result, vals map[string]any) any {
	switch {
	case t.IsObject():
		out := ordered{}
		t.ForEach(func(k, v gjson.Result) bool {
			name, isVar := placeholderName(v)
			if _, filled := vals[name]; !isVar || filled {
				out = append(out, kv{k.Str, fill(v, vals)})
			}
			return true
		})
		return out
	case t.IsArray():
		out := []any{}
		t.ForEach(func(_, v gjson.Result) bool {
			out = append(out, fill(v, vals))
			return true
		})
		return out
	case t.Type != gjson.String:
		return json.RawMessage(t.Raw)
	}
	if name, ok := placeholderName(t); ok {
		return vals[name]
	} else if !strings.Contains(t.Str, "${") {
		return t.Str
	}
	return expand(t.Str, vals)
}

// expand fills each ${name} of s with vals[name]'s text.
func expand(s string, vals map[string]any) string {
	return tmplVar.ReplaceAllStringFunc(s, func(m string) string {
		if f, ok := vals[m[2:len(m)-1]].(float64); ok { // a number of the recorded data
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
		return fmt.Sprint(vals[m[2:len(m)-1]])
	})
}

var tmplVar = regexp.MustCompile(`\$\{[a-z_]+\}`)

// placeholderName returns the name of a placeholder "${name}".
func placeholderName(v gjson.Result) (string, bool) {
	s := v.Str
	if v.Type != gjson.String || !strings.HasPrefix(s, "${") || strings.IndexByte(s, '}') != len(s)-1 {
		return "", false
	}
	return s[2 : len(s)-1], true
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

// kv is one member of an ordered JSON object.
type kv struct {
	k string
	v any
}

// ordered is a JSON object that keeps its members' order (GitHub and
// Linear answer in a fixed, non-alphabetical order).
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
func (o ordered) get1(k string) any {
	if i := slices.IndexFunc(o, func(m kv) bool { return m.k == k }); i >= 0 {
		return o[i].v
	}
	return nil
}

// iso formats t like the providers' JSON ("2024-01-02T03:04:05Z").
func iso(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// isoMilli formats t with milliseconds ("2024-01-02T03:04:05.000Z").
func isoMilli(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// validEmail is the loose check Stripe and HubSpot make of an email address.
func validEmail(s string) bool { return strings.Contains(s, "@") && !strings.ContainsAny(s, " \t\r\n") }

// intParam parses an integer query parameter; ok is false when the value
// is present but not an integer.
func intParam(q url.Values, key string, def int) (int, bool) {
	v := q.Get(key)
	if n, err := strconv.Atoi(v); err == nil {
		return n, true
	}
	return def, v == ""
}
