package grant

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func TestCanonicalArgs(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // "" means ErrArgs
	}{
		{name: "empty", in: "", want: `{}`},
		{name: "white space", in: " \n\t", want: `{}`},
		{name: "empty object", in: ` { } `, want: `{}`},
		{name: "sorted keys", in: `{"title":"Hi","owner":"pinned-tester","repo":"notes"}`, want: `{"owner":"pinned-tester","repo":"notes","title":"Hi"}`},
		{name: "white space removed", in: "{\n  \"b\" : 1 ,\n  \"a\" : [ 1 , 2 ]\n}", want: `{"a":[1,2],"b":1}`},
		{name: "numbers verbatim", in: `{"a":30,"b":30.0,"c":1e2,"d":-0.50,"e":1E+2}`, want: `{"a":30,"b":30.0,"c":1e2,"d":-0.50,"e":1E+2}`},
		{name: "big integer verbatim", in: `{"a":9007199254740993}`, want: `{"a":9007199254740993}`},
		{name: "no HTML escaping", in: `{"t":"<b>&</b>"}`, want: `{"t":"<b>&</b>"}`},
		{name: "quote and backslash", in: `{"t":"a\"b\\c\/d"}`, want: `{"t":"a\"b\\c/d"}`},
		{name: "short escapes", in: `{"t":"\b\f\n\r\t"}`, want: `{"t":"\b\f\n\r\t"}`},
		{name: "other controls", in: `{"t":"\u0001\u001f"}`, want: `{"t":"\u0001\u001f"}`},
		{name: "DEL raw", in: `{"t":"\u007f"}`, want: "{\"t\":\"\x7f\"}"},
		{name: "non-ASCII raw", in: `{"t":"\u00e9\u4e2d"}`, want: `{"t":"é中"}`},
		{name: "line separators escaped", in: "{\"t\":\"\u2028\u2029\"}", want: `{"t":"\u2028\u2029"}`},
		{name: "lone surrogate", in: `{"t":"\ud800"}`, want: "{\"t\":\"\ufffd\"}"},
		{name: "literals", in: `{"a":true,"b":false,"c":null}`, want: `{"a":true,"b":false,"c":null}`},
		{name: "nested sorted", in: `{"z":{"y":1,"x":[{"b":1,"a":2}]}}`, want: `{"z":{"x":[{"a":2,"b":1}],"y":1}}`},
		{name: "keys by bytes", in: `{"b":1,"B":2,"é":3,"a":4}`, want: `{"B":2,"a":4,"b":1,"é":3}`},
		{name: "null", in: `null`},
		{name: "array", in: `[1]`},
		{name: "string", in: `"x"`},
		{name: "duplicate key", in: `{"a":1,"a":2}`},
		{name: "nested duplicate key", in: `{"a":{"b":1,"b":2}}`},
		{name: "trailing data", in: `{} {}`},
		{name: "invalid UTF-8", in: "{\"a\":\"\xff\"}"},
		{name: "not JSON", in: `{a:1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CanonicalArgs([]byte(tt.in))
			if tt.want == "" {
				if err != ErrArgs {
					t.Fatalf("CanonicalArgs(%q) = %q, %v; want ErrArgs", tt.in, got, err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("CanonicalArgs(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			// Canonical form is a fixed point.
			again, err := CanonicalArgs(got)
			if err != nil || string(again) != string(got) {
				t.Fatalf("CanonicalArgs is not idempotent: %q -> %q", got, again)
			}
		})
	}
}

func TestArgsSHA256(t *testing.T) {
	a, err := ArgsSHA256([]byte(`{"title":"Hi", "owner":"pinned-tester","repo":"notes"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ArgsSHA256([]byte(`{"owner":"pinned-tester","repo":"notes","title":"Hi"}`))
	sum := sha256.Sum256([]byte(`{"owner":"pinned-tester","repo":"notes","title":"Hi"}`))
	if a != b || a != hex.EncodeToString(sum[:]) {
		t.Fatalf("ArgsSHA256 = %s and %s, want both %x", a, b, sum)
	}
	if _, err := ArgsSHA256([]byte(`[]`)); err != ErrArgs {
		t.Fatalf("ArgsSHA256([]) = %v, want ErrArgs", err)
	}
}
