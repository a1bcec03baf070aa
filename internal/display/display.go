// Package display is the one rule for text a person will read that came
// from someone else: the consent a member approves (its values are a
// model's proposal: the confirm sentence and every other value the request
// carries), a research question quoted in a consent, and an upstream error
// message a terminal or a chat client shows (the provider's text).
// Classify says what a rune is; Value, Block and Message are the
// renderings, for a value inside a sentence, for a whole value on its own
// lines and for a whole message; Refused is the one check of what a write
// op's args may not hold at all.
//
// The rule (docs/RATIONALE.md, "Why are invisible characters escaped, and
// tag characters refused?"): a code point a person would not see — a
// format character, any other default-ignorable code point (Unicode's
// Default_Ignorable_Code_Point), a blank-looking one — is never dropped
// from what is shown while it stays in what is sent. Value and Block show
// it as a visible escape, ⟨U+E0061⟩, and so they show a combining mark
// past MaxMarks in a row and (Block) the spaces and tabs that end a line;
// Refused names the Unicode tag characters, which a write op's args may
// not carry at all.
//
// It imports nothing of the project's: the host (consents), host/internal/upstream
// (error messages) and the front ends all use it.
package display

import (
	"fmt"
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
	Invisible       // format characters (Unicode Cf: bidirectional controls, zero-width spaces and joiners, soft hyphen, ...) and every other default-ignorable code point (variation selectors, U+034F, Hangul fillers, ...)
	Blank           // blank-looking code points that are not default-ignorable: U+2800 BRAILLE PATTERN BLANK, U+1D159 MUSICAL SYMBOL NULL NOTEHEAD, and every space separator (Unicode Zs) but U+0020
	Tag             // Unicode tag characters U+E0000–U+E007F (default-ignorable; an invisible copy of ASCII)
)

// defaultIgnorable is Unicode's Default_Ignorable_Code_Point
// (DerivedCoreProperties.txt, Unicode 15.1 and 16.0): code points a
// renderer shows as nothing when it does not support them.
var defaultIgnorable = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x00AD, Hi: 0x00AD, Stride: 1}, // SOFT HYPHEN
		{Lo: 0x034F, Hi: 0x034F, Stride: 1}, // COMBINING GRAPHEME JOINER
		{Lo: 0x061C, Hi: 0x061C, Stride: 1}, // ARABIC LETTER MARK
		{Lo: 0x115F, Hi: 0x1160, Stride: 1}, // HANGUL CHOSEONG FILLER, JUNGSEONG FILLER
		{Lo: 0x17B4, Hi: 0x17B5, Stride: 1}, // KHMER VOWEL INHERENT AQ, AA
		{Lo: 0x180B, Hi: 0x180F, Stride: 1}, // MONGOLIAN FREE VARIATION SELECTORS, VOWEL SEPARATOR
		{Lo: 0x200B, Hi: 0x200F, Stride: 1}, // ZERO WIDTH SPACE … RIGHT-TO-LEFT MARK
		{Lo: 0x202A, Hi: 0x202E, Stride: 1}, // bidirectional embeddings and overrides
		{Lo: 0x2060, Hi: 0x206F, Stride: 1}, // WORD JOINER … NOMINAL DIGIT SHAPES (isolates included)
		{Lo: 0x3164, Hi: 0x3164, Stride: 1}, // HANGUL FILLER
		{Lo: 0xFE00, Hi: 0xFE0F, Stride: 1}, // VARIATION SELECTOR-1 … 16
		{Lo: 0xFEFF, Hi: 0xFEFF, Stride: 1}, // ZERO WIDTH NO-BREAK SPACE (BOM)
		{Lo: 0xFFA0, Hi: 0xFFA0, Stride: 1}, // HALFWIDTH HANGUL FILLER
		{Lo: 0xFFF0, Hi: 0xFFF8, Stride: 1}, // reserved
	},
	R32: []unicode.Range32{
		{Lo: 0x1BCA0, Hi: 0x1BCA3, Stride: 1}, // SHORTHAND FORMAT controls
		{Lo: 0x1D173, Hi: 0x1D17A, Stride: 1}, // MUSICAL SYMBOL BEGIN BEAM … END PHRASE
		{Lo: 0xE0000, Hi: 0xE0FFF, Stride: 1}, // tags, VARIATION SELECTOR-17 … 256, reserved
	},
}

// blank lists the blank-looking code points that are not default-ignorable:
// a font draws them as empty space, so a run of them pushes what follows
// out of view while looking like nothing.
var blank = map[rune]bool{
	0x2800:  true, // BRAILLE PATTERN BLANK
	0x1D159: true, // MUSICAL SYMBOL NULL NOTEHEAD
}

// Classify returns r's class. Everything but Visible could make the text
// read as something it is not (a bidi override reverses what follows, a
// line break fakes a new line of the sentence, a tag character or a
// variation selector carries text nobody sees), so no rendering shows it
// as is.
func Classify(r rune) Class {
	switch {
	case r == '\n' || r == '\r' || r == 0x2028 || r == 0x2029:
		return LineBreak
	case r < 0x80 && r >= 0x20 && r != 0x7f:
		return Visible // the common case, without a table
	case unicode.IsControl(r):
		return Control
	case r >= 0xE0000 && r <= 0xE007F:
		return Tag
	case unicode.Is(unicode.Cf, r) || unicode.Is(defaultIgnorable, r):
		return Invisible
	case blank[r] || unicode.Is(unicode.Zs, r):
		return Blank // U+0020 was Visible above
	}
	return Visible
}

// MaxMarks is how many combining marks (Unicode Mn, Me) in a row are
// shown as they are: enough for any script's honest text (Vietnamese,
// pointed Hebrew). Past it, marks stack into a smear that no one can
// read and that draws over the lines around it, so each further mark is
// shown as its Escape.
const MaxMarks = 4

// marks counts the combining marks in a row of a text being rendered.
type marks int

// stacked reports whether r is a combining mark past MaxMarks in a row,
// counting it.
func (m *marks) stacked(r rune) bool {
	if r < 0x300 || !unicode.In(r, unicode.Mn, unicode.Me) {
		*m = 0
		return false
	}
	*m++
	return *m > MaxMarks
}

// DefaultIgnorable reports whether r is a Default_Ignorable_Code_Point
// (Unicode, DerivedCoreProperties.txt).
func DefaultIgnorable(r rune) bool { return unicode.Is(defaultIgnorable, r) }

// Escape is the visible form of a rune no rendering shows as is:
// "⟨U+E0061⟩".
func Escape(r rune) string { return fmt.Sprintf("⟨U+%04X⟩", r) }

// Value renders s as one visible line inside a sentence: line breaks show
// as "⏎", a tab as a space, every other control, invisible, blank-looking
// or tag code point, and a combining mark past MaxMarks in a row, as its
// Escape (never dropped), and past maxRunes runes of s the rest is cut
// with "…" (a value cut here is shown whole elsewhere: Block).
func Value(s string, maxRunes int) string {
	var b strings.Builder
	var m marks
	n := 0
	for _, r := range s {
		if n == maxRunes {
			b.WriteString("…")
			break
		}
		switch c := Classify(r); {
		case c == LineBreak:
			b.WriteString("⏎")
		case r == '\t':
			b.WriteByte(' ')
		case m.stacked(r) || c != Visible:
			b.WriteString(Escape(r))
		default:
			b.WriteRune(r)
		}
		n++
	}
	return b.String()
}

// Block renders s whole, for a value shown on lines of its own (a long
// issue body in a consent): every line break (CR LF counted once) is a
// newline, a tab stays a tab, and every other control, invisible,
// blank-looking or tag code point, a combining mark past MaxMarks in a
// row, and the spaces and tabs that end a line (which no one sees) are
// Escapes. Nothing is cut.
func Block(s string) string {
	var b strings.Builder
	var m marks
	end := 0 // where the spaces and tabs before s[i] start
	for i, r := range s {
		if r != ' ' && r != '\t' {
			if Classify(r) == LineBreak {
				for _, w := range s[end:i] {
					b.WriteString(Escape(w))
				}
			} else {
				b.WriteString(s[end:i])
			}
			end = i + utf8.RuneLen(r)
		}
		switch c := Classify(r); {
		case r == ' ' || r == '\t':
			m = 0 // written with the next rune, or as escapes at a line's end
		case c == LineBreak:
			m = 0
			if r == '\r' && strings.HasPrefix(s[i+1:], "\n") {
				continue
			}
			b.WriteByte('\n')
		case m.stacked(r) || c != Visible:
			b.WriteString(Escape(r))
		default:
			b.WriteRune(r)
		}
	}
	for _, w := range s[end:] {
		b.WriteString(Escape(w))
	}
	return b.String()
}

// Shown reports whether s reads in a sentence exactly as it is: every rune
// Visible (or a plain space), no more than MaxMarks combining marks in a
// row, and at most maxRunes runes, so Value(s, maxRunes) == s.
func Shown(s string, maxRunes int) bool {
	if utf8.RuneCountInString(s) > maxRunes {
		return false
	}
	var m marks
	for _, r := range s {
		if m.stacked(r) || Classify(r) != Visible {
			return false
		}
	}
	return true
}

// Refused returns the first rune of s that a write op's args may not
// carry at all, and true; or 0 and false. These are the Unicode tag
// characters (U+E0000–U+E007F): their one use in text is the five
// subdivision flags, and they are a known channel for text that models
// read and people do not see. Every other invisible code point is shown
// escaped instead (docs/RATIONALE.md).
func Refused(s string) (rune, bool) {
	for _, r := range s {
		if Classify(r) == Tag {
			return r, true
		}
	}
	return 0, false
}

// Message renders s as a message: every rune that is not Visible (line
// breaks, C0/DEL/C1 controls, format and other invisible characters,
// blank-looking and tag characters) becomes a space, s is capped at
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
