package registry

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseTemplate(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Piece
		errName string // when set, ParseTemplate must fail on "{"+errName
		errOff  int
	}{
		{name: "empty", in: "", want: nil},
		{name: "text only", in: "/user/repos", want: []Piece{{Text: "/user/repos"}}},
		{name: "one arg", in: "{title}", want: []Piece{{Arg: "title"}}},
		{name: "mixed", in: "/repos/{owner}/{repo}/issues", want: []Piece{
			{Text: "/repos/"}, {Arg: "owner"}, {Text: "/"}, {Arg: "repo"}, {Text: "/issues"}}},
		{name: "adjacent args", in: "{a}{b}", want: []Piece{{Arg: "a"}, {Arg: "b"}}},
		{name: "graphql braces are literal", in: "query { viewer { id } }", want: []Piece{{Text: "query { viewer { id } }"}}},
		{name: "brace before newline quote brace or end", in: "{\n{\"{}{", want: []Piece{{Text: "{\n{\"{}{"}}},
		{name: "double brace then arg", in: "{{a}}", want: []Piece{{Text: "{"}, {Arg: "a"}, {Text: "}"}}},
		{name: "digits and underscore names", in: "x{_1}y{2}", want: []Piece{{Text: "x"}, {Arg: "_1"}, {Text: "y"}, {Arg: "2"}}},
		{name: "lone closing brace", in: "a}b", want: []Piece{{Text: "a}b"}}},
		{name: "non-ascii after brace is literal", in: "{é}", want: []Piece{{Text: "{é}"}}},
		{name: "graphql slip", in: "query { issues {nodes { id } } }", errName: "nodes", errOff: 15},
		{name: "unclosed at end", in: "hi {name", errName: "name", errOff: 3},
		{name: "space before close", in: "{name }", errName: "name", errOff: 0},
		{name: "dash in name", in: "{a-b}", errName: "a", errOff: 0},
		{name: "slip after good arg", in: "{a} {b", errName: "b", errOff: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTemplate(tt.in)
			if tt.errName != "" {
				var te *templateError
				if !errors.As(err, &te) {
					t.Fatalf("ParseTemplate(%q) = %v, %v; want a *templateError", tt.in, got, err)
				}
				if te.Name != tt.errName || te.Offset != tt.errOff {
					t.Errorf("error at %d naming %q, want %d naming %q", te.Offset, te.Name, tt.errOff, tt.errName)
				}
				if !strings.Contains(err.Error(), `"{`+tt.errName+`"`) {
					t.Errorf("error %q does not quote the slip", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseTemplate(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseTemplate(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

func joinPieces(pieces []Piece) string {
	var b strings.Builder
	for _, p := range pieces {
		if p.Arg != "" {
			b.WriteString("{" + p.Arg + "}")
		} else {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{"", "/repos/{owner}/{repo}", "query { a {b} }", "{{x}}", "{x", "a}{", "{é}{_}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pieces, err := ParseTemplate(s)
		if err != nil {
			var te *templateError
			if !errors.As(err, &te) || te.Offset < 0 || te.Offset+1+len(te.Name) > len(s) ||
				s[te.Offset:te.Offset+1+len(te.Name)] != "{"+te.Name || te.Name == "" {
				t.Fatalf("ParseTemplate(%q): bad error %#v", s, err)
			}
			return
		}
		if got := joinPieces(pieces); got != s {
			t.Fatalf("pieces of %q join to %q", s, got)
		}
		for i, p := range pieces {
			if (p.Text == "") == (p.Arg == "") {
				t.Fatalf("piece %d of %q: want exactly one of Text and Arg: %#v", i, s, p)
			}
			if p.Arg != "" && strings.IndexFunc(p.Arg, func(r rune) bool { return r > 127 || !isIdentByte(byte(r)) }) >= 0 {
				t.Fatalf("piece %d of %q: bad arg name %q", i, s, p.Arg)
			}
			if p.Text != "" && i > 0 && pieces[i-1].Text != "" {
				t.Fatalf("pieces %d and %d of %q are both text", i-1, i, s)
			}
			if p.Text != "" && hasPlaceholderStart(p.Text) {
				t.Fatalf("text piece %q of %q holds a placeholder start", p.Text, s)
			}
		}
	})
}
