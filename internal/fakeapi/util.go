package fakeapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

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

// UnmarshalJSON implements json.Unmarshaler, keeping the members' order.
func (o *ordered) UnmarshalJSON(b []byte) error {
	v, err := decodeOrdered(b)
	if err != nil {
		return err
	}
	m, ok := v.(ordered)
	if !ok {
		return fmt.Errorf("fakeapi: not a JSON object: %.40s", b)
	}
	*o = m
	return nil
}

// get1 returns the value of member k, or nil.
func (o ordered) get1(k string) any {
	for _, m := range o {
		if m.k == k {
			return m.v
		}
	}
	return nil
}

// newRand returns a deterministic generator for one service's data.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x70696e6e6564)) }

// choose returns one element of xs, chosen by r (not the manifest's pick).
func choose[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

const alnum = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// dataNow is the fake's "now": generated timestamps lie before it.
var dataNow = time.Date(2026, 5, 11, 16, 40, 0, 0, time.UTC)

// randTime returns a time between from and dataNow, whole seconds.
func randTime(r *rand.Rand, from time.Time) time.Time {
	span := dataNow.Sub(from)
	if span <= 0 {
		return from
	}
	return from.Add(time.Duration(r.Int64N(int64(span/time.Second))) * time.Second)
}

// iso formats t like the providers' JSON ("2024-01-02T03:04:05Z").
func iso(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// isoMilli formats t with milliseconds ("2024-01-02T03:04:05.000Z").
func isoMilli(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// intParam parses an integer query parameter; ok is false when the value
// is present but not an integer.
func intParam(q url.Values, key string, def int) (int, bool) {
	v := q.Get(key)
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return def, false
	}
	return n, true
}

// slug makes a URL slug of at most 60 characters from a title.
func slug(s string) string {
	s = strings.TrimLeft(nonSlug.ReplaceAllString(strings.ToLower(s), "-"), "-")
	return strings.TrimSuffix(s[:min(len(s), 60)], "-")
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// loadTemplates decodes an embedded template file (testdata/<path>, a JSON
// object) into its members, keeping the order of every object in it.
func loadTemplates(path string) map[string]any {
	var o ordered
	loadData(path, &o)
	out := make(map[string]any, len(o))
	for _, m := range o {
		out[m.k] = m.v
	}
	return out
}

// decodeOrdered decodes JSON keeping object member order (as [ordered])
// and numbers as json.Number.
func decodeOrdered(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var val func() (any, error)
	val = func() (any, error) {
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
				v, err := val()
				if err != nil {
					return nil, err
				}
				o = append(o, kv{k.(string), v})
			}
			_, err = dec.Token()
			return o, err
		case json.Delim('['):
			l := []any{}
			for dec.More() {
				v, err := val()
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			_, err = dec.Token()
			return l, err
		}
		return t, nil
	}
	return val()
}

// fill instantiates a template: a string "${name}" becomes vals[name] (any
// value; an object member whose name is not in vals is dropped), and
// ${name} inside a longer string becomes its text.
func fill(t any, vals map[string]any) any {
	switch x := t.(type) {
	case ordered:
		out := make(ordered, 0, len(x))
		for _, m := range x {
			if name, ok := placeholderName(m.v); !ok || hasKey(vals, name) {
				out = append(out, kv{m.k, fill(m.v, vals)})
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = fill(e, vals)
		}
		return out
	case string:
		if name, ok := placeholderName(x); ok {
			return vals[name]
		} else if !strings.Contains(x, "${") {
			return x
		}
		return tmplVar.ReplaceAllStringFunc(x, func(m string) string {
			if f, ok := vals[m[2:len(m)-1]].(float64); ok { // a number of the recorded data
				return strconv.FormatFloat(f, 'f', -1, 64)
			}
			return fmt.Sprint(vals[m[2:len(m)-1]])
		})
	}
	return t
}

var tmplVar = regexp.MustCompile(`\$\{[a-z_]+\}`)

// placeholder returns the name of a placeholder "${name}".
func placeholderName(v any) (string, bool) {
	s, ok := v.(string)
	if !ok || !strings.HasPrefix(s, "${") || strings.IndexByte(s, '}') != len(s)-1 {
		return "", false
	}
	return s[2 : len(s)-1], true
}

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}
