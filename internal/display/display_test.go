package display

import (
	"strings"
	"testing"
	"unicode"
)

// TestDisplayTextOneRule: the confirm sentence and upstream error messages
// apply one rule to hostile text (Classify): nothing that is not
// visible text reaches a person as is. A consent shows each such code
// point as a visible escape (never drops it); an error message blanks it.
func TestDisplayTextOneRule(t *testing.T) {
	tests := []struct {
		name, in      string
		confirm, errm string
	}{
		{name: "plain", in: "fix bug #12", confirm: "fix bug #12", errm: "fix bug #12"},
		{name: "bidi override", in: "pay\u202eevil", confirm: "pay⟨U+202E⟩evil", errm: "pay evil"},
		{name: "bidi isolate", in: "a\u2066b\u2069c", confirm: "a⟨U+2066⟩b⟨U+2069⟩c", errm: "a b c"},
		{name: "zero-width space", in: "ghp\u200bx", confirm: "ghp⟨U+200B⟩x", errm: "ghp x"},
		{name: "line breaks", in: "a\nb\u2028c", confirm: "a⏎b⏎c", errm: "a b c"},
		{name: "escape and C1", in: "a\x1b[31mb\u0085c", confirm: "a⟨U+001B⟩[31mb⟨U+0085⟩c", errm: "a [31mb c"},
		{name: "tab", in: "a\tb", confirm: "a b", errm: "a b"},
		{name: "tag characters", in: "ok\U000E0061\U000E0062", confirm: "ok⟨U+E0061⟩⟨U+E0062⟩", errm: "ok"},
		{name: "variation selector", in: "x\ufe0f", confirm: "x⟨U+FE0F⟩", errm: "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// 200 runes and 1 KiB: the host's confirm value and error
			// message caps.
			if got := Value(tt.in, 200); got != tt.confirm {
				t.Errorf("Value(%q) = %q, want %q", tt.in, got, tt.confirm)
			}
			if got := Message(tt.in, 1<<10); got != tt.errm {
				t.Errorf("Message(%q) = %q, want %q", tt.in, got, tt.errm)
			}
		})
	}
}

// hiddenRunes are the invisible and blank-looking code points:
// tag characters, U+2800, the Hangul fillers, every variation selector
// (U+FE00–U+FE0F, U+E0100–U+E01EF), U+034F, format characters, and
// every space separator but U+0020.
func hiddenRunes() []rune {
	rs := []rune{0xE0000, 0xE0001, 0xE0020, 0xE0061, 0xE007E, 0xE007F, 0x2800, 0x3164, 0x115F, 0x1160, 0xFFA0, 0x034F,
		0x00AD, 0x200B, 0x200D, 0x202E, 0x2066, 0xFEFF, 0x180E, 0x1D159,
		// Space separators other than U+0020: blanks of other widths,
		// which a payload can be spelt in (U+2002 for 0, U+2003 for 1).
		0x00A0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x202F, 0x205F, 0x3000}
	for r := rune(0xFE00); r <= 0xFE0F; r++ {
		rs = append(rs, r)
	}
	for r := rune(0xE0100); r <= 0xE01EF; r++ {
		rs = append(rs, r)
	}
	return rs
}

// TestInvisibleNeverDropped: every invisible or blank-looking code point
// of the issue, alone, repeated (190 × U+2800 after a quote) or between
// letters, is shown by Value and Block as its escape, once per
// occurrence; none is dropped or shown raw.
func TestInvisibleNeverDropped(t *testing.T) {
	for _, r := range hiddenRunes() {
		t.Run(Escape(r), func(t *testing.T) {
			if c := Classify(r); c == Visible {
				t.Fatalf("Classify(%U) = Visible", r)
			}
			for _, in := range []string{"a" + string(r) + "b", `Bug report"` + strings.Repeat(string(r), 190)} {
				want := strings.Count(in, string(r))
				for name, got := range map[string]string{"Value": Value(in, 1000), "Block": Block(in)} {
					if strings.ContainsRune(got, r) {
						t.Errorf("%s(%q) shows %U raw", name, in, r)
					}
					if n := strings.Count(got, Escape(r)); n != want {
						t.Errorf("%s: %d escapes of %U, want %d", name, n, r, want)
					}
				}
			}
		})
	}
}

// TestRefusedTagsOnly: Refused names the first tag character and nothing
// else of hiddenRunes.
func TestRefusedTagsOnly(t *testing.T) {
	for _, r := range hiddenRunes() {
		got, bad := Refused("Nice work" + string(r) + "\U000E0070")
		switch {
		case r >= 0xE0000 && r <= 0xE007F:
			if !bad || got != r {
				t.Errorf("Refused with %U = %U %v, want %U", r, got, bad, r)
			}
		case !bad || got != 0xE0070:
			t.Errorf("Refused with %U = %U %v, want U+E0070 (the tag after it)", r, got, bad)
		}
	}
	if r, bad := Refused("plain ❤️ 👨‍👩‍👧 text"); bad {
		t.Errorf("Refused(emoji) = %U", r)
	}
}

// TestDefaultIgnorableTable: the table holds Go's Unicode tables'
// Other_Default_Ignorable_Code_Point and Variation_Selector, and every
// format character (Cf) is Invisible or Tag; DefaultIgnorable is no
// wider than Unicode's derivation (Cf, Other_DI, variation selectors,
// and the reserved ranges).
func TestDefaultIgnorableTable(t *testing.T) {
	for _, tab := range []*unicode.RangeTable{unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector} {
		for r := rune(0); r <= unicode.MaxRune; r++ {
			if unicode.Is(tab, r) && !DefaultIgnorable(r) {
				t.Errorf("%U is default-ignorable in Go's tables, not in ours", r)
			}
		}
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if unicode.Is(unicode.Cf, r) {
			if c := Classify(r); c != Invisible && c != Tag {
				t.Errorf("format character %U is %v", r, c)
			}
		}
		if DefaultIgnorable(r) && !unicode.Is(unicode.Cf, r) && !unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) &&
			!unicode.Is(unicode.Variation_Selector, r) && !unicode.Is(unicode.Cn, r) && !(r >= 0xE0000 && r <= 0xE0FFF) {
			t.Errorf("%U is in the table but in no source of Default_Ignorable_Code_Point", r)
		}
	}
}

// TestBlockWhole: Block never cuts and keeps line structure: CR LF is one
// line break, a lone CR and U+2028 are line breaks too, tabs stay.
func TestBlockWhole(t *testing.T) {
	long := strings.Repeat("x", 70000)
	if got := Block(long); got != long {
		t.Errorf("Block cut a 70000-rune value to %d", len(got))
	}
	if got, want := Block("a\r\nb\rc\u2028d\te"), "a\nb\nc\nd\te"; got != want {
		t.Errorf("Block = %q, want %q", got, want)
	}
	if !Shown("fix bug #12", 200) || Shown("a\u200bb", 200) || Shown(strings.Repeat("x", 201), 200) || Shown("a\tb", 200) {
		t.Error("Shown disagrees with Value")
	}
}

// TestSpaceSeparatorsBlank: every Unicode space separator but U+0020 is
// Blank (shown as its escape), so a run of blanks of different widths
// carries nothing a person does not see.
func TestSpaceSeparatorsBlank(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if unicode.Is(unicode.Zs, r) && r != ' ' && Classify(r) == Visible {
			t.Errorf("space separator %U is Visible", r)
		}
	}
	if Classify(' ') != Visible {
		t.Error("U+0020 is not Visible")
	}
}

// TestStackedMarksEscaped: up to MaxMarks combining marks in a row are
// shown as they are (Vietnamese, Hebrew points); each further one is
// its escape, so 200 stacked marks (a smear that hides what it carries
// and draws over the lines around it) are shown one by one, and Shown
// says the value is not shown as is.
func TestStackedMarksEscaped(t *testing.T) {
	zalgo := "Z" + strings.Repeat("\u0301", 200) + "ok"
	want := "Z" + strings.Repeat("\u0301", MaxMarks) + strings.Repeat(Escape(0x0301), 200-MaxMarks) + "ok"
	if got := Value(zalgo, 1000); got != want {
		t.Errorf("Value = %q, want %q", got, want)
	}
	if got := Block(zalgo); got != want {
		t.Errorf("Block = %q, want %q", got, want)
	}
	if Shown(zalgo, 1000) {
		t.Error("Shown(200 stacked marks) = true")
	}
	// Honest text keeps its marks: Vietnamese in NFD, pointed Hebrew.
	for _, in := range []string{"Vie\u0323\u0302t Nam", "\u05e9\u05bc\u05c1\u05b8\u05d1", strings.Repeat("e\u0301", 50)} {
		if got := Block(in); got != in || !Shown(in, 1000) || Value(in, 1000) != in {
			t.Errorf("%q shown as %q", in, got)
		}
	}
}

// TestTrailingWhitespaceShown: spaces and tabs at the end of a line of a
// Block, which no one sees, are shown as escapes (a body whose lines end
// in zero, one or two spaces spells bits); inside a line they stay.
func TestTrailingWhitespaceShown(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"end of the value", "Typo in README ", "Typo in README⟨U+0020⟩"},
		{"end of each line", "one  \ntwo\t\nthree", "one⟨U+0020⟩⟨U+0020⟩\ntwo⟨U+0009⟩\nthree"},
		{"a blank line of spaces", "a\n   \nb", "a\n⟨U+0020⟩⟨U+0020⟩⟨U+0020⟩\nb"},
		{"before CR LF", "a \r\nb", "a⟨U+0020⟩\nb"},
		{"only spaces", "  ", "⟨U+0020⟩⟨U+0020⟩"},
		{"inside a line", "a  b\tc\n    indented", "a  b\tc\n    indented"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Block(tt.in); got != tt.want {
				t.Errorf("Block(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
