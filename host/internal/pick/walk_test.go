package pick

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzWalk: on every document encoding/json accepts (valid UTF-8, not
// too deep) Walk reports the same keys, strings and numbers, in order;
// it never panics, and it accepts nothing encoding/json refuses.
func FuzzWalk(f *testing.F) {
	f.Add([]byte(`{"a":"x","b":[1,2.5e3,{"c\u0064":"\u00e9"}],"n":null}`))
	f.Add([]byte(`"top"`))
	f.Add([]byte(`{"id":1e400,"name":"ghp\u005fx"}`))
	f.Add([]byte(`[1] [2]`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		var got []string
		err := Walk(doc, func(kind int, text []byte) {
			p := "s:"
			if kind == TokenNumber {
				p = "n:"
			}
			got = append(got, p+string(text))
		})
		if !json.Valid(doc) {
			if err == nil {
				t.Fatalf("Walk accepted what encoding/json refuses: %q", doc)
			}
			return
		}
		if err != nil {
			if utf8.Valid(doc) && depth(doc) < MaxDepth {
				t.Fatalf("Walk refused a valid document: %v", err)
			}
			return
		}
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		var want []string
		for {
			tok, terr := dec.Token()
			if terr != nil {
				break
			}
			switch v := tok.(type) {
			case string:
				want = append(want, "s:"+v)
			case json.Number:
				want = append(want, "n:"+string(v))
			}
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("Walk %q, encoding/json %q", got, want)
		}
	})
}
