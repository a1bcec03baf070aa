package jsonv

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // compact re-encoding, or "" when Parse must fail
	}{
		{"object order kept", `{"b":1, "a":[true,false,null]}`, `{"b":1,"a":[true,false,null]}`},
		{"number literal kept", `[1e3,-0.50,0]`, `[1e3,-0.50,0]`},
		{"escapes decoded", `"a\u00e9\n\"\\\/"`, `"aé\n\"\\/"`},
		{"surrogate pair", `"\ud83d\ude00"`, `"😀"`},
		{"lone surrogate", `"\ud800x"`, "\"\ufffdx\""},
		{"white space", " \t\n{ } \r\n", `{}`},
		{"duplicate key", `{"a":1,"a":2}`, ""},
		{"trailing data", `{} {}`, ""},
		{"trailing comma", `[1,]`, ""},
		{"leading zero", `01`, ""},
		{"bare dot", `1.`, ""},
		{"raw control char", "\"a\x01\"", ""},
		{"invalid utf8", "\"\xff\"", ""},
		{"bad escape", `"\x"`, ""},
		{"short unicode escape", `"\u12"`, ""},
		{"single quote", `'a'`, ""},
		{"empty", ``, ""},
		{"literal prefix", `tru`, ""},
		{"unterminated", `{"a":1`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Parse([]byte(tt.in))
			if tt.want == "" {
				if err == nil {
					t.Fatalf("Parse(%q) accepted; want an error", tt.in)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got := string(Append(nil, v)); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDepth(t *testing.T) {
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := Parse([]byte(ok)); err != nil {
		t.Fatalf("depth %d refused: %v", MaxDepth, err)
	}
	deep := "[" + ok + "]"
	if _, err := Parse([]byte(deep)); err == nil {
		t.Fatalf("depth %d accepted", MaxDepth+1)
	}
}

func TestGet(t *testing.T) {
	v, err := Parse([]byte(`{"a":{"b":"c"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Get("a").Get("b"); got == nil || got.S != "c" {
		t.Fatalf("Get = %+v", got)
	}
	if v.Get("x").Get("y") != nil {
		t.Fatal("Get on a missing member must be nil")
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\", "\x00\x1f\x7f", "tab\tnl\ncr\r", "é😀", "bad\xffutf8"} {
		enc := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatalf("%q encoded as %s: %v", s, enc, err)
		}
		want := strings.ToValidUTF8(s, "\ufffd")
		if back != want {
			t.Fatalf("round trip of %q = %q", s, back)
		}
	}
}

// FuzzParse checks Parse against encoding/json: whatever Parse accepts,
// encoding/json accepts with the same meaning; re-encoding is a fixed
// point.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"\ud83d\ude00"`, `-1.5e-3`, `[]`, `{"a":1,"a":2}`, `[[[]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		if err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("Parse accepted what encoding/json refuses: %q", data)
		}
		enc := Append(nil, v)
		a, err := decodeNumbers(data)
		if err != nil {
			t.Fatal(err)
		}
		b, err := decodeNumbers(enc)
		if err != nil {
			t.Fatalf("re-encoding invalid: %q", enc)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Fatalf("meaning changed:\n%s\n%s", ja, jb)
		}
		v2, err := Parse(enc)
		if err != nil {
			t.Fatalf("re-encoding refused: %v", err)
		}
		if enc2 := Append(nil, v2); !bytes.Equal(enc, enc2) {
			t.Fatalf("not a fixed point:\n%s\n%s", enc, enc2)
		}
	})
}

func decodeNumbers(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// FuzzSkip: Skip accepts exactly the prefixes Parse accepts (when Parse's
// only objection would be a duplicate key, Skip still accepts).
func FuzzSkip(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":null}]} x`, `"x"`, `[1,]`, `{"a":1,"a":2}`, `1.5e3`, `[[[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n := Skip(data)
		if n > len(data) {
			t.Fatalf("Skip returned %d for %d bytes", n, len(data))
		}
		if n == 0 {
			// Parse must refuse every prefix that is a whole value... check
			// the whole input at least.
			if _, err := Parse(data); err == nil && len(data) > 0 && data[0] != ' ' && data[0] != '\t' && data[0] != '\n' && data[0] != '\r' {
				t.Fatalf("Parse accepted %q but Skip refused", data)
			}
			return
		}
		if _, err := Parse(data[:n]); err != nil && !strings.Contains(err.Error(), "duplicate key") {
			t.Fatalf("Skip accepted %q (n=%d) but Parse refuses: %v", data[:n], n, err)
		}
	})
}

// FuzzDecodeString: DecodeString accepts exactly the strings ScanString
// accepts, and its text is what Parse decodes from the same bytes.
func FuzzDecodeString(f *testing.F) {
	for _, s := range []string{`"abc" x`, `"\ud83d\ude00"`, `"a\"b"`, `"\u0000"`, "\"\x01\"", "\"\xff\"", `"unterminated`, `x`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, s, ok := DecodeString(data)
		if want := ScanString(data); n != want || ok != (want > 0) {
			t.Fatalf("DecodeString(%q) = %d, %v; ScanString = %d", data, n, ok, want)
		}
		if !ok {
			if s != "" {
				t.Fatalf("DecodeString(%q) refused but returned text %q", data, s)
			}
			return
		}
		v, err := Parse(data[:n])
		if err != nil || v.Kind != String {
			t.Fatalf("DecodeString accepted %q, Parse: %v, kind %v", data[:n], err, v.Kind)
		}
		if s != v.S {
			t.Fatalf("DecodeString(%q) = %q, Parse decodes %q", data[:n], s, v.S)
		}
	})
}
