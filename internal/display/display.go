// Package display is the one rule for text a person will read that came
// from someone else: the confirm sentence a member approves (its values
// are a model's proposal) and an upstream error message a terminal or a
// chat client shows (the provider's text). Classify says what a rune is;
// Value and Message are the two renderings, for a value inside a sentence
// and for a whole message.
//
// It imports nothing of the project's: the host (confirm sentences) and
// internal/upstream (error messages) both use it.
package display

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Class is what a rune is in text a person will read.
type Class int

// Classes of Classify.
const (
	Visible   Class = iota
	LineBreak       // CR, LF, U+2028 LINE SEPARATOR, U+2029 PARAGRAPH SEPARATOR
	Control         // other C0 controls, DEL, C1 controls (Unicode Cc)
	Invisible       // format characters (Unicode Cf): bidirectional embeddings, overrides, isolates and marks, zero-width spaces and joiners, soft hyphen, ...
)

// Classify returns r's class. Everything but Visible could make the text
// read as something it is not (a bidi override reverses what follows, a
// line break fakes a new line of the sentence), so no rendering shows it
// as is.
func Classify(r rune) Class {
	switch {
	case r == '\n' || r == '\r' || r == 0x2028 || r == 0x2029:
		return LineBreak
	case unicode.IsControl(r):
		return Control
	case unicode.Is(unicode.Cf, r):
		return Invisible
	}
	return Visible
}

// Value renders s as one visible line inside a sentence: line breaks show
// as "⏎", other control characters as spaces, invisible format characters
// (bidirectional overrides, zero-width spaces) are dropped, and past
// maxRunes runes s is cut with "…".
func Value(s string, maxRunes int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == maxRunes {
			b.WriteString("…")
			break
		}
		switch Classify(r) {
		case LineBreak:
			b.WriteString("⏎")
		case Control:
			b.WriteByte(' ')
		case Invisible: // bidi overrides, zero-width and other format characters
			continue
		default:
			b.WriteRune(r)
		}
		n++
	}
	return b.String()
}

// Message renders s as a message: every rune that is not Visible (line
// breaks, C0/DEL/C1 controls, format characters such as bidirectional
// overrides and zero-width spaces) becomes a space, s is capped at
// maxBytes on a UTF-8 boundary with "…" marking the cut, and the result
// is trimmed of spaces at both ends.
func Message(s string, maxBytes int) string {
	var b strings.Builder
	for _, r := range s {
		if Classify(r) != Visible {
			r = ' '
		}
		if b.Len()+utf8.RuneLen(r) > maxBytes-len("…") {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
	}
	return strings.TrimSpace(b.String())
}
