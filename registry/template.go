package registry

import "fmt"

// Piece is one part of a template: literal text or a placeholder. Exactly
// one of Text and Arg is non-empty.
type Piece struct {
	// Text is literal text, copied as is (including any literal "{").
	Text string
	// Arg names the arg whose value replaces the placeholder "{Arg}".
	Arg string
}

// templateError reports a "{" that starts a placeholder (it is followed by
// a letter, digit or "_") but is not closed by "}" right after the name.
type templateError struct {
	// Offset is the byte offset of the "{" in the template.
	Offset int
	// Name is the identifier that follows the "{".
	Name string
}

func (e *templateError) Error() string {
	return fmt.Sprintf("%q at byte %d starts a placeholder but is not closed: write %q for an arg, or %q for a literal brace",
		"{"+e.Name, e.Offset, "{"+e.Name+"}", "{ "+e.Name)
}

// ParseTemplate splits a template (an op's path, a query or form value, a
// string inside body_json, a confirm line) into literal text and
// placeholders, by the brace rule of docs/MANIFEST.md:
//
//   - "{" followed by a letter, digit or "_" starts a placeholder, which
//     must be "{name}" with name matching [A-Za-z0-9_]+; anything else
//     (e.g. "{nodes }" or "{nodes") is an error naming the byte offset
//     of the "{" and how to write an arg or a literal brace;
//   - any other "{" (followed by a space, a newline, "}", another "{", a
//     quote, or at the end) is literal text, and so is every "}" not
//     closing a placeholder.
//
// Adjacent literal text forms one Piece; concatenating Text and "{"+Arg+"}"
// of the pieces in order gives back s. The empty template has no pieces.
// ParseTemplate does not know which args are declared; [Parse] checks that.
// Pieces share memory with s; the only allocation is the slice.
func ParseTemplate(s string) ([]Piece, error) {
	var pieces []Piece
	lit := 0 // start of the literal text not yet emitted
	for i := 0; ; {
		open, end, closed := nextPlaceholder(s, i)
		if open < 0 {
			break
		}
		if !closed {
			return nil, &templateError{Offset: open, Name: s[open+1 : end]}
		}
		if pieces == nil {
			pieces = make([]Piece, 0, 4)
		}
		if lit < open {
			pieces = append(pieces, Piece{Text: s[lit:open]})
		}
		pieces = append(pieces, Piece{Arg: s[open+1 : end]})
		i = end + 1
		lit = i
	}
	if lit < len(s) {
		pieces = append(pieces, Piece{Text: s[lit:]})
	}
	return pieces, nil
}

// nextPlaceholder finds the first "{" at or after byte from that starts a
// placeholder. It returns open = -1 when there is none; otherwise s[open]
// is the "{", s[open+1:end] the name (non-empty), and closed reports
// whether s[end] is the closing "}".
func nextPlaceholder(s string, from int) (open, end int, closed bool) {
	for i := from; i < len(s); i++ {
		if s[i] != '{' || i+1 >= len(s) || !isIdentByte(s[i+1]) {
			continue
		}
		end = i + 1
		for end < len(s) && isIdentByte(s[end]) {
			end++
		}
		return i, end, end < len(s) && s[end] == '}'
	}
	return -1, 0, false
}

// hasPlaceholderStart reports whether s contains a "{" followed by a
// letter, digit or "_": text that would start a placeholder in a template.
func hasPlaceholderStart(s string) bool {
	open, _, _ := nextPlaceholder(s, 0)
	return open >= 0
}

func isIdentByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
