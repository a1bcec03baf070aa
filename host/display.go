package host

import "unicode"

// runeClass is what a rune is in text a person will read: the confirm
// sentence a member approves, an upstream error message a terminal or a
// chat client shows. It is the one rule for such text; each caller says
// how it renders the classes (confirmValue, capMessage).
type runeClass int

const (
	runeVisible   runeClass = iota
	runeLineBreak           // CR, LF, U+2028 LINE SEPARATOR, U+2029 PARAGRAPH SEPARATOR
	runeControl             // other C0 controls, DEL, C1 controls (Unicode Cc)
	runeInvisible           // format characters (Unicode Cf): bidirectional embeddings, overrides, isolates and marks, zero-width spaces and joiners, soft hyphen, ...
)

// classifyRune returns r's class. Everything but runeVisible could make the
// text read as something it is not (a bidi override reverses what follows,
// a line break fakes a new line of the sentence), so no caller shows it
// as is.
func classifyRune(r rune) runeClass {
	switch {
	case r == '\n' || r == '\r' || r == 0x2028 || r == 0x2029:
		return runeLineBreak
	case unicode.IsControl(r):
		return runeControl
	case unicode.Is(unicode.Cf, r):
		return runeInvisible
	}
	return runeVisible
}
