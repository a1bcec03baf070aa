package argrules

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/internal/abi"
	"github.com/elevenmessenger/pinned/internal/jsonv"
)

// testArgs is a declaration set in the op spec's JSON, as the host writes
// it (sorted names).
const testArgs = `{
 "ids": {"type": "array", "items": {"type": "integer", "min": 1}, "max_items": 3},
 "n": {"type": "integer", "min": 1, "max": 100, "default": 30},
 "name": {"type": "string", "required": true, "pattern": "^[a-z]+$", "max_length": 5},
 "ok": {"type": "boolean"},
 "ratio": {"type": "number", "min": 0.5},
 "state": {"type": "string", "enum": ["open", "closed"], "default": "open"},
 "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z ,|]*$", "max_length": 4}, "explode": false},
 "text": {"type": "string", "max_length": 3}
}`

func decodeTestArgs(t testing.TB) []*Arg {
	t.Helper()
	v, err := jsonv.Parse([]byte(testArgs))
	if err != nil {
		t.Fatal(err)
	}
	args, err := DecodeAll(&v, re2)
	if err != nil {
		t.Fatal(err)
	}
	return args
}

// re2 is the host's kind of Compiler (host/internal/egress has the
// host's own): the pattern in Go's RE2 syntax.
func re2(expr string) (Matcher, error) { return regexp.Compile(expr) }

func TestValidate(t *testing.T) {
	args := decodeTestArgs(t)
	for _, tt := range []struct {
		name, raw string
		reason    int32
		arg       string
		texts     map[string]string // effective values on success
	}{
		{name: "defaults applied", raw: `{"name":"abc"}`, texts: map[string]string{"name": "abc", "n": "30", "state": "open"}},
		{name: "every arg", raw: `{"name":"ab","n":7.0,"ok":true,"ratio":0.75,"state":"closed","text":"héé"}`,
			texts: map[string]string{"name": "ab", "n": "7", "ok": "true", "ratio": "0.75", "state": "closed", "text": "héé"}},
		{name: "integer written 1e1", raw: `{"name":"a","n":1e1}`, texts: map[string]string{"name": "a", "n": "10", "state": "open"}},
		{name: "not an object", raw: `[1]`, reason: abi.RejectSyntax},
		{name: "trailing data", raw: `{"name":"a"} x`, reason: abi.RejectSyntax},
		{name: "duplicate key", raw: `{"name":"a","name":"b"}`, reason: abi.RejectSyntax},
		{name: "undeclared", raw: `{"name":"a","zz":1}`, reason: abi.RejectUndeclared, arg: "zz"},
		{name: "missing", raw: `{}`, reason: abi.RejectMissing, arg: "name"},
		{name: "type", raw: `{"name":1}`, reason: abi.RejectType, arg: "name"},
		{name: "integer with a fraction", raw: `{"name":"a","n":1.5}`, reason: abi.RejectType, arg: "n"},
		{name: "integer past 2^53", raw: `{"name":"a","n":9007199254740993}`, reason: abi.RejectType, arg: "n"},
		{name: "enum", raw: `{"name":"a","state":"everything"}`, reason: abi.RejectEnum, arg: "state"},
		{name: "enum empty", raw: `{"name":"a","state":""}`, reason: abi.RejectEnum, arg: "state"},
		{name: "pattern", raw: `{"name":"A"}`, reason: abi.RejectPattern, arg: "name"},
		{name: "min", raw: `{"name":"a","n":0}`, reason: abi.RejectMin, arg: "n"},
		{name: "max", raw: `{"name":"a","n":100000}`, reason: abi.RejectMax, arg: "n"},
		{name: "number min", raw: `{"name":"a","ratio":0.25}`, reason: abi.RejectMin, arg: "ratio"},
		{name: "length in code points", raw: `{"name":"a","text":"héé!"}`, reason: abi.RejectLength, arg: "text"},
		{name: "a control character", raw: `{"name":"a","text":"a\u0000"}`, reason: abi.RejectValue, arg: "text"},
		{name: "a boolean as a string", raw: `{"name":"a","ok":"true"}`, reason: abi.RejectType, arg: "ok"},
		{name: "arrays", raw: `{"name":"a","ids":[3, 1,2],"tags":["b a","a"]}`,
			texts: map[string]string{"name": "a", "n": "30", "state": "open", "ids": "[3, 1, 2]", "tags": `["b a", "a"]`}},
		{name: "an empty array", raw: `{"name":"a","ids":[ ]}`, texts: map[string]string{"name": "a", "n": "30", "state": "open", "ids": "[]"}},
		{name: "an array as one value", raw: `{"name":"a","ids":3}`, reason: abi.RejectType, arg: "ids"},
		{name: "an array as a string", raw: `{"name":"a","ids":"3,4"}`, reason: abi.RejectType, arg: "ids"},
		{name: "a scalar as an array", raw: `{"name":["a"]}`, reason: abi.RejectType, arg: "name"},
		{name: "an item of another type", raw: `{"name":"a","ids":[1,"2"]}`, reason: abi.RejectType, arg: "ids"},
		{name: "a null item", raw: `{"name":"a","ids":[1,null]}`, reason: abi.RejectType, arg: "ids"},
		{name: "a nested array", raw: `{"name":"a","ids":[[1]]}`, reason: abi.RejectType, arg: "ids"},
		{name: "an object item", raw: `{"name":"a","ids":[{"x":1}]}`, reason: abi.RejectType, arg: "ids"},
		{name: "an item below min", raw: `{"name":"a","ids":[1,0]}`, reason: abi.RejectMin, arg: "ids"},
		{name: "an item with a fraction", raw: `{"name":"a","ids":[1.5]}`, reason: abi.RejectType, arg: "ids"},
		{name: "too many items", raw: `{"name":"a","ids":[1,2,3,4]}`, reason: abi.RejectLength, arg: "ids"},
		{name: "an item too long", raw: `{"name":"a","tags":["abcde"]}`, reason: abi.RejectLength, arg: "tags"},
		{name: "an item off its pattern", raw: `{"name":"a","tags":["A"]}`, reason: abi.RejectPattern, arg: "tags"},
		{name: "an item holding the delimiter", raw: `{"name":"a","tags":["a,b"]}`, reason: abi.RejectValue, arg: "tags"},
		{name: "an empty item of a joined array", raw: `{"name":"a","tags":["a",""]}`, reason: abi.RejectValue, arg: "tags"},
		{name: "an item with a control character", raw: `{"name":"a","tags":["a\u0000"]}`, reason: abi.RejectValue, arg: "tags"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vals, rej := Validate(args, []byte(tt.raw))
			if tt.reason != 0 {
				if rej == nil || rej.Reason != tt.reason || rej.Arg != tt.arg {
					t.Fatalf("got %+v, want reason %d arg %q", rej, tt.reason, tt.arg)
				}
				return
			}
			if rej != nil {
				t.Fatalf("rejected: %+v", rej)
			}
			got := map[string]string{}
			for i, v := range vals {
				if v.Set {
					got[args[i].Name] = v.Text()
				}
			}
			if len(got) != len(tt.texts) {
				t.Fatalf("values %v, want %v", got, tt.texts)
			}
			for k, v := range tt.texts {
				if got[k] != v {
					t.Fatalf("values %v, want %v", got, tt.texts)
				}
			}
		})
	}
}

func TestClipName(t *testing.T) {
	for in, want := range map[string]string{
		"":                      "?",
		"a\nb":                  "a?b",
		strings.Repeat("é", 40): strings.Repeat("é", 32),
	} {
		if got := ClipName(in); got != want {
			t.Errorf("ClipName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPathSegmentOK(t *testing.T) {
	for s, want := range map[string]bool{"": false, ".": false, "..": false, "...": true, "a": true, "%2e": true} {
		if PathSegmentOK(s) != want {
			t.Errorf("PathSegmentOK(%q) != %v", s, want)
		}
	}
}

// FuzzValidate feeds arbitrary args to the rules: they never panic, a
// value is never accepted from text encoding/json cannot read as an
// object, and an accepted string is within its declaration.
func FuzzValidate(f *testing.F) {
	args := decodeTestArgs(f)
	for _, s := range []string{`{}`, `{"name":"abc","n":5}`, `{"name":"a","ids":[1,2],"tags":["a b"]}`, `{"name":"a","ids":[1,`, `{"name":"a","tags":["a,b",""]}`, `{"name":"a","text":"\u00e9\u00e9"}`, `{"name":"a","n":1e400}`, `{"a":`, `{"name":"a","name":"a"}`, `{"\u006eame":"x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		vals, rej := Validate(args, raw)
		if rej != nil {
			if rej.Reason < abi.RejectSyntax || rej.Reason > abi.RejectValue {
				t.Fatalf("reason %d", rej.Reason)
			}
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", raw, err)
		}
		for i, v := range vals {
			a := args[i]
			if a.Required && !v.Set {
				t.Fatalf("required %s not set", a.Name)
			}
			if v.Set && a.Type == "string" && (a.Pattern != nil && !a.Pattern.MatchString(v.S)) {
				t.Fatalf("%s = %q breaks its pattern", a.Name, v.S)
			}
			if v.Set && a.Type == "array" {
				var items []json.RawMessage
				if err := json.Unmarshal(m[a.Name], &items); err != nil || len(items) != len(v.A) || len(v.A) > a.MaxItems {
					t.Fatalf("%s: accepted %d values from %s (max %d): %v", a.Name, len(v.A), m[a.Name], a.MaxItems, err)
				}
				for i, e := range v.A {
					if !e.Set || (a.Items.Type == "string" && !a.Items.Pattern.MatchString(e.S)) ||
						(a.Delim != 0 && (e.Text() == "" || strings.IndexByte(e.Text(), a.Delim) >= 0)) {
						t.Fatalf("%s[%d] = %+v breaks its declaration", a.Name, i, e)
					}
				}
			}
		}
	})
}

// TestPatternCompiler: a pattern is never left unchecked by mistake. A
// declaration with a pattern and no Compiler, a Compiler that fails, or
// one that returns no Matcher, is a DeclError; without a pattern no
// Compiler is needed.
func TestPatternCompiler(t *testing.T) {
	decl := func(t *testing.T, s string) *jsonv.Value {
		t.Helper()
		v, err := jsonv.Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return &v
	}
	withPattern := `{"a":{"type":"string","pattern":"^[a-z]+$"}}`
	itemPattern := `{"a":{"type":"array","items":{"type":"string","pattern":"^[a-z]+$"}}}`
	for _, tt := range []struct {
		name, decl string
		compile    Compiler
		ok         bool
	}{
		{"no compiler", withPattern, nil, false},
		{"no compiler, an item's pattern", itemPattern, nil, false},
		{"compiler fails", withPattern, func(string) (Matcher, error) { return nil, &DeclError{Msg: "no"} }, false},
		{"compiler returns no matcher", withPattern, func(string) (Matcher, error) { return nil, nil }, false},
		{"bad RE2", `{"a":{"type":"string","pattern":"^[a-z"}}`, re2, false},
		{"no pattern, no compiler", `{"a":{"type":"string","enum":["x"]}}`, nil, true},
		{"RE2", withPattern, re2, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args, err := DecodeAll(decl(t, tt.decl), tt.compile)
			if tt.ok {
				if err != nil || len(args) != 1 {
					t.Fatalf("DecodeAll = %v, %v", args, err)
				}
				return
			}
			var de *DeclError
			if !errors.As(err, &de) || args != nil {
				t.Fatalf("DecodeAll = %v, %v; want a DeclError", args, err)
			}
		})
	}
}

// TestGuestPatterns: the guest's Compiler drops the pattern check and
// nothing else. With RE2 (the host) a value off its pattern is
// RejectPattern; with GuestPatterns it is accepted, while the same
// declarations' other rules (enum, max_length, type, an item's
// max_length, the delimiter) reject as before.
func TestGuestPatterns(t *testing.T) {
	v, err := jsonv.Parse([]byte(testArgs))
	if err != nil {
		t.Fatal(err)
	}
	guest, err := DecodeAll(&v, GuestPatterns)
	if err != nil {
		t.Fatal(err)
	}
	host := decodeTestArgs(t)
	for _, tt := range []struct {
		name, raw        string
		hostWant, guestW int32
	}{
		{"off the pattern", `{"name":"A"}`, abi.RejectPattern, 0},
		{"an item off its pattern", `{"name":"a","tags":["A"]}`, abi.RejectPattern, 0},
		{"on the pattern", `{"name":"abc"}`, 0, 0},
		{"enum", `{"name":"a","state":"all"}`, abi.RejectEnum, abi.RejectEnum},
		{"max_length", `{"name":"a","text":"abcd"}`, abi.RejectLength, abi.RejectLength},
		{"type", `{"name":1}`, abi.RejectType, abi.RejectType},
		{"an item's max_length", `{"name":"a","tags":["abcde"]}`, abi.RejectLength, abi.RejectLength},
		{"the delimiter in an item", `{"name":"a","tags":["a,b"]}`, abi.RejectValue, abi.RejectValue},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, side := range []struct {
				name string
				args []*Arg
				want int32
			}{{"host", host, tt.hostWant}, {"guest", guest, tt.guestW}} {
				_, rej := Validate(side.args, []byte(tt.raw))
				got := int32(0)
				if rej != nil {
					got = rej.Reason
				}
				if got != side.want {
					t.Errorf("%s: reason %d, want %d", side.name, got, side.want)
				}
			}
		})
	}
}
