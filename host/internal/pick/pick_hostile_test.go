package pick

import (
	"testing"
)

// TestPickHostileBodies (found by the red team; it guards the fix): hostile bodies against the projector (held).
func TestPickHostileBodies(t *testing.T) {
	p := New("", []string{"login", "user.login"})
	for _, tc := range []struct {
		body string
		want string // "" = must be refused
	}{
		{`{"login":"a","l\u006fgin":"b"}`, ""},               // duplicate through an escape
		{`{"l\u006fgin":"a","secret":"s"}`, `{"login":"a"}`}, // escaped key kept, written canonically
		{`{"user":{"login":"a","login":"b"}}`, ""},           // duplicate below
		{`{"user":[{"login":"x","token":"t"},[{"login":"y"}],1]}`, `{"user":[{"login":"x"},[{"login":"y"}]]}`},
		{`{"user":"scalar","login":1e999999}`, ""},                               // a number out of range in a kept value
		{`{"user":{"login":{"a":1,"a":2}}}`, ""},                                 // a duplicate key inside a kept value
		{`{"login":"\ud800"}`, ""},                                               // an escaped lone surrogate
		{`{"login":"ghp_fak\u0065_\u0070inned"}`, `{"login":"ghp_fake_pinned"}`}, // escapes written canonically
		{`{"login":"a"} {"login":"b"}`, ""},                                      // trailing document
		{`{"login":"a\xff"}`, ""},                                                // invalid UTF-8
		{`{"login":"a","x":` + deep(200) + `}`, ""},                              // nesting beyond the limit
		{`{"login\u0000":"a","login":"b"}`, `{"login":"b"}`},                     // NUL-suffixed key is another key
	} {
		out, err := p.Project(nil, []byte(tc.body))
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%q accepted: %s", tc.body, out)
		case tc.want != "" && (err != nil || string(out) != tc.want):
			t.Errorf("%q: got %s, %v; want %s", tc.body, out, err, tc.want)
		}
	}
}

func deep(n int) string {
	s := ""
	for i := 0; i < n; i++ {
		s += "["
	}
	for i := 0; i < n; i++ {
		s += "]"
	}
	return s
}
