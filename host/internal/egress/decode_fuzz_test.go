package egress

import (
	"bytes"
	"slices"
	"testing"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/jsonv"
)

// decodeRequestTree is DecodeRequest as it was written first, through
// jsonv.Parse's tree: the reference FuzzDecodeRequest holds the direct
// decoder to.
func decodeRequestTree(b []byte) (*Request, api.DenyReason) {
	v, err := jsonv.Parse(b)
	if err != nil || v.Kind != jsonv.Object {
		return nil, api.DenyMalformed
	}
	r := &Request{}
	var haveMethod, haveURL, haveHeaders bool
	for _, m := range v.O {
		switch m.Key {
		case "method":
			if m.Value.Kind != jsonv.String {
				return nil, api.DenyMalformed
			}
			r.method, haveMethod = m.Value.S, true
		case "url":
			if m.Value.Kind != jsonv.String {
				return nil, api.DenyMalformed
			}
			r.url, haveURL = m.Value.S, true
		case "headers":
			if m.Value.Kind != jsonv.Array {
				return nil, api.DenyMalformed
			}
			for _, h := range m.Value.A {
				if h.Kind != jsonv.Array || len(h.A) != 2 || h.A[0].Kind != jsonv.String || h.A[1].Kind != jsonv.String {
					return nil, api.DenyMalformed
				}
				r.headers = append(r.headers, [2]string{h.A[0].S, h.A[1].S})
			}
			haveHeaders = true
		case "body":
			if m.Value.Kind != jsonv.String {
				return nil, api.DenyMalformed
			}
			r.body, r.hasBody = []byte(m.Value.S), true
		default:
			return nil, api.DenyMalformed
		}
	}
	if !haveMethod || !haveURL || !haveHeaders {
		return nil, api.DenyMalformed
	}
	return r, ""
}

// sameRequest reports whether two decoded requests are the same request.
func sameRequest(a, b *Request) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.method == b.method && a.url == b.url && a.hasBody == b.hasBody &&
		bytes.Equal(a.body, b.body) && slices.Equal(a.headers, b.headers)
}

// decodeCases are the fuzz seeds and the table of TestDecodeRequest: what
// a guest sends, and the malformed inputs at each step of the shape.
var decodeCases = []struct {
	name string
	in   string
	ok   bool
}{
	{"plain GET", `{"method":"GET","url":"https://api.github.com/user","headers":[]}`, true},
	{"headers and body", `{"method":"POST","url":"https://api.github.com/repos/o/r/issues","headers":[["Content-Type","application/json"],["Accept","a"]],"body":"{\"title\":\"x\"}"}`, true},
	{"members in any order, white space", " \r\n{ \"headers\" : [ [ \"a\" , \"b\" ] ] ,\t\"body\":\"\", \"url\":\"u\",\"method\":\"GET\" } \n", true},
	{"escaped key", `{"\u006dethod":"GET","url":"u","headers":[]}`, true},
	{"escaped values, lone surrogate", `{"method":"GET","url":"a\u00e9\ud800\n","headers":[["x","\"y\\"]]}`, true},
	{"empty object", `{}`, false},
	{"no headers", `{"method":"GET","url":"u"}`, false},
	{"duplicate key", `{"method":"GET","method":"POST","url":"u","headers":[]}`, false},
	{"duplicate escaped key", `{"url":"u","method":"GET","\u0075rl":"v","headers":[]}`, false},
	{"other member", `{"method":"GET","url":"u","headers":[],"x":1}`, false},
	{"method a number", `{"method":1,"url":"u","headers":[]}`, false},
	{"body null", `{"method":"GET","url":"u","headers":[],"body":null}`, false},
	{"header of three", `{"method":"GET","url":"u","headers":[["a","b","c"]]}`, false},
	{"header of one", `{"method":"GET","url":"u","headers":[["a"]]}`, false},
	{"header value a number", `{"method":"GET","url":"u","headers":[["a",1]]}`, false},
	{"headers an object", `{"method":"GET","url":"u","headers":{}}`, false},
	{"trailing comma in object", `{"method":"GET","url":"u","headers":[],}`, false},
	{"trailing comma in headers", `{"method":"GET","url":"u","headers":[["a","b"],]}`, false},
	{"leading comma", `{,"method":"GET","url":"u","headers":[]}`, false},
	{"missing comma", `{"method":"GET" "url":"u","headers":[]}`, false},
	{"data after the object", `{"method":"GET","url":"u","headers":[]}x`, false},
	{"two objects", `{"method":"GET","url":"u","headers":[]}{}`, false},
	{"invalid UTF-8", "{\"method\":\"GET\",\"url\":\"\xff\",\"headers\":[]}", false},
	{"raw control character", "{\"method\":\"GET\",\"url\":\"a\x01\",\"headers\":[]}", false},
	{"bad escape", `{"method":"GET","url":"\x","headers":[]}`, false},
	{"unterminated", `{"method":"GET","url":"u","headers":[`, false},
	{"array", `[]`, false},
	{"empty", ``, false},
	{"byte order mark", "\ufeff{\"method\":\"GET\",\"url\":\"u\",\"headers\":[]}", false},
}

// TestDecodeRequest: the direct decoder accepts exactly the table's good
// requests, and agrees with the tree on every case.
func TestDecodeRequest(t *testing.T) {
	for _, tc := range decodeCases {
		t.Run(tc.name, func(t *testing.T) {
			got, deny := DecodeRequest([]byte(tc.in))
			if (deny == "") != tc.ok {
				t.Fatalf("deny %q, want ok=%v", deny, tc.ok)
			}
			want, wdeny := decodeRequestTree([]byte(tc.in))
			if deny != wdeny || !sameRequest(got, want) {
				t.Fatalf("direct %+v (%q), tree %+v (%q)", got, deny, want, wdeny)
			}
		})
	}
	r, _ := DecodeRequest([]byte(decodeCases[1].in))
	if r.method != "POST" || r.url != "https://api.github.com/repos/o/r/issues" || !r.hasBody || string(r.body) != `{"title":"x"}` ||
		!slices.Equal(r.headers, [][2]string{{"Content-Type", "application/json"}, {"Accept", "a"}}) {
		t.Fatalf("decoded %+v", r)
	}
}

// FuzzDecodeRequest holds DecodeRequest, which reads the guest's request
// directly, to decodeRequestTree on every input: the same refusal, or the
// same request.
func FuzzDecodeRequest(f *testing.F) {
	for _, tc := range decodeCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, deny := DecodeRequest(b)
		want, wdeny := decodeRequestTree(b)
		if deny != wdeny || !sameRequest(got, want) {
			t.Fatalf("input %q: direct %+v (%q), tree %+v (%q)", b, got, deny, want, wdeny)
		}
	})
}

// BenchmarkDecodeRequest: the direct decoder against the tree, on a
// guest's request with headers and a body.
func BenchmarkDecodeRequest(b *testing.B) {
	in := []byte(decodeCases[1].in)
	for _, d := range []struct {
		name   string
		decode func([]byte) (*Request, api.DenyReason)
	}{{"direct", DecodeRequest}, {"tree", decodeRequestTree}} {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, deny := d.decode(in); deny != "" {
					b.Fatal(deny)
				}
			}
		})
	}
}
