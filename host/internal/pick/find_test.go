package pick

import (
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/internal/jsonv"
)

// refFindString is the tree-based lookup FindString replaced, with the
// same semantics: arrays on the way (or at the end) are entered at their
// first element.
func refFindString(doc []byte, path []string) (string, bool) {
	v, err := jsonv.Parse(doc)
	if err != nil {
		return "", false
	}
	cur := &v
	for {
		for cur.Kind == jsonv.Array {
			if len(cur.A) == 0 {
				return "", false
			}
			cur = &cur.A[0]
		}
		if len(path) == 0 {
			break
		}
		cur = cur.Get(path[0])
		if cur == nil {
			return "", false
		}
		path = path[1:]
	}
	if cur.Kind != jsonv.String {
		return "", false
	}
	return cur.S, true
}

func TestFindString(t *testing.T) {
	tests := []struct {
		doc, path, want string
		ok              bool
	}{
		{`{"message":"Not Found"}`, "message", "Not Found", true},
		{`{"error":{"message":"No such customer","type":"x"}}`, "error.message", "No such customer", true},
		{`{"errors":[{"message":"first"},{"message":"second"}]}`, "errors.message", "first", true},
		{`{"errors":[]}`, "errors.message", "", false},
		{`{"message":5}`, "message", "", false},
		{`{"a":[1,2,{"message":"x"}],"message":"y"}`, "message", "y", true},
		{`{"message":"esc\u00e9\n"}`, "message", "escé\n", true},
		{`[{"message":"in array"}]`, "message", "in array", true},
		// A key the host reads, twice: ambiguous, so not read at all.
		{`{"message":"a","message":"b"}`, "message", "", false},
		{`{"message":"a","m\u0065ssage":"b"}`, "message", "", false},
		{`{"error":{"message":"x"},"error":{}}`, "error.message", "", false},
		{`{"error":{"message":"x","message":"y"}}`, "error.message", "", false},
	}
	for _, tt := range tests {
		got, ok := FindString([]byte(tt.doc), strings.Split(tt.path, "."))
		if got != tt.want || ok != tt.ok {
			t.Errorf("FindString(%s, %s) = %q %v, want %q %v", tt.doc, tt.path, got, ok, tt.want, tt.ok)
		}
	}
	for _, tt := range []struct {
		doc                 string
		present, limit, dup bool
	}{
		{`{"data":null,"errors":[{"message":"x","extensions":{"code":"RATELIMITED"}}]}`, true, true, false},
		{`{"errors":[{"message":"x"}],"data":{}}`, true, false, false},
		{`{"errors":[]}`, false, false, false},
		{`{"data":{"errors":[1]}}`, false, false, false},
		{`[]`, false, false, false},
		// Read first-wins, this answer was ok: errors twice is ambiguous.
		{`{"errors":[],"errors":[{"message":"mutation failed"}],"data":{"issueCreate":{"success":true}}}`, false, false, true},
		{`{"errors":[{"message":"x"}],"data":{},"\u0065rrors":[]}`, false, false, true},
	} {
		p, l, d := GraphQLErrors([]byte(tt.doc))
		if p != tt.present || l != tt.limit || d != tt.dup {
			t.Errorf("GraphQLErrors(%s) = %v %v %v, want %v %v %v", tt.doc, p, l, d, tt.present, tt.limit, tt.dup)
		}
	}
}

// FuzzFindString: on every valid document the streaming lookup agrees with
// the tree-based reference; it never panics on invalid ones.
func FuzzFindString(f *testing.F) {
	f.Add([]byte(`{"errors":[{"message":"m","extensions":{"code":"RATELIMITED"}}]}`), "errors.message")
	f.Add([]byte(`{"error":{"message":"x"}}`), "error.message")
	f.Fuzz(func(t *testing.T, doc []byte, path string) {
		segs := strings.Split(path, ".")
		got, ok := FindString(doc, segs)
		GraphQLErrors(doc)
		if _, err := jsonv.Parse(doc); err != nil {
			return
		}
		want, wok := refFindString(doc, segs)
		if got != want || ok != wok {
			t.Fatalf("FindString = %q %v, reference %q %v", got, ok, want, wok)
		}
	})
}

// TestFindValue: the raw value at a path, arrays entered at their first
// element, as FindString does.
func TestFindValue(t *testing.T) {
	tests := []struct {
		name, doc, path, want string
		ok                    bool
	}{
		{name: "object", doc: `{"message":"m","errors":{"a":["x"]}}`, path: "errors", want: `{"a":["x"]}`, ok: true},
		{name: "array", doc: `{"errors":[{"field":"title"}]}`, path: "errors", want: `[{"field":"title"}]`, ok: true},
		{name: "through an array", doc: `[{"e":{"f":1}},{"e":2}]`, path: "e.f", want: `1`, ok: true},
		{name: "missing", doc: `{"message":"m"}`, path: "errors", ok: false},
		{name: "broken value", doc: `{"errors":{"a":[1,}`, path: "errors", ok: false},
		{name: "not JSON", doc: `<html>`, path: "errors", ok: false},
		{name: "the key twice", doc: `{"errors":{"a":["x"]},"errors":{"b":["y"]}}`, path: "errors", ok: false},
		{name: "the key twice, escaped", doc: `{"errors":{"a":["x"]},"\u0065rrors":[]}`, path: "errors", ok: false},
		{name: "a key on the way twice", doc: `{"e":{"f":1},"e":{"f":2}}`, path: "e.f", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := FindValue([]byte(tt.doc), strings.Split(tt.path, "."))
			if string(got) != tt.want || ok != tt.ok {
				t.Fatalf("FindValue = %q %v, want %q %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}
