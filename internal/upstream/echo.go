package upstream

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"unicode"

	"github.com/elevenmessenger/pinned/internal/display"
)

// The credential echo check: what the host returns from an op MUST NOT
// hold the credential it sent, however the provider spells it
// (docs/SECURITY.md, rule 3). A provider that echoes the token in a
// picked field (GitHub's login, Linear's viewer name) would otherwise
// hand it to the caller, and to a model reading the result.

// EchoWindow is the length of the credential fragments Echoes looks
// for in data: long enough that a fragment of a token in data is no
// coincidence. A credential shorter than EchoWindow is looked for whole.
const EchoWindow = 16

// minEchoSecret is the shortest credential the checks look for: a
// shorter one is not a real token, and would match ordinary text.
const minEchoSecret = 8

// Echoes reports whether data, JSON the host is about to return (a
// projected answer, the next page's args), holds a fragment of EchoWindow
// characters of one of the secrets. It reads data as a reader would:
// every key, string and number decoded, with white space, control and
// invisible format characters (Unicode Cf: U+200B and its kind) removed,
// looked for in each and across neighbours (strings concatenated, with and
// without the numbers and keys between them), so an escape, a split by
// keys, numbers or spaces hides nothing. It fails closed: data that
// cannot be read to the end as JSON (invalid, a number encoding/json
// cannot hold) is reported as an echo.
func Echoes(data []byte, secrets ...string) bool {
	frags := fragments(secrets, EchoWindow)
	if len(frags) == 0 || len(bytes.TrimSpace(data)) == 0 || string(data) == "null" {
		return false
	}
	// The four readings of data, each normalized: every scalar in order;
	// string values only; string and number values; keys only.
	var all, strs, vals, keys strings.Builder
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type level struct{ object, key bool } // key: the next token is a key
	var stack []level
	tops := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF && len(stack) == 0 && tops == 1 {
			break
		}
		if err != nil {
			return true // fail closed: cut short, invalid, unreadable
		}
		top := len(stack) - 1
		if top < 0 {
			if tops++; tops > 1 {
				return true // a second document
			}
		}
		inObject := top >= 0 && stack[top].object
		isKey := inObject && stack[top].key
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if inObject {
					stack[top].key = true // this container is a member's value
				}
				stack = append(stack, level{object: t == '{', key: true})
			default:
				stack = stack[:top]
			}
			continue
		case string:
			text := normalize(t)
			all.WriteString(text)
			if isKey {
				keys.WriteString(text)
			} else {
				strs.WriteString(text)
				vals.WriteString(text)
			}
		case json.Number:
			all.WriteString(string(t))
			vals.WriteString(string(t))
		}
		if inObject {
			stack[top].key = !isKey
		}
	}
	for _, text := range []string{all.String(), strs.String(), vals.String(), keys.String()} {
		for _, f := range frags {
			if strings.Contains(text, f) {
				return true
			}
		}
	}
	return false
}

// EchoesText reports whether text (a cursor, a message) holds a fragment
// of EchoWindow characters of one of the secrets once white space,
// control and invisible characters are removed.
func EchoesText(text string, secrets ...string) bool {
	norm := normalize(text)
	for _, f := range fragments(secrets, EchoWindow) {
		if strings.Contains(norm, f) {
			return true
		}
	}
	return false
}

// fragments returns every run of n characters of each secret of at
// least minEchoSecret characters (the whole secret when shorter than n).
func fragments(secrets []string, n int) []string {
	var out []string
	for _, s := range secrets {
		if len(s) < minEchoSecret {
			continue
		}
		w := min(n, len(s))
		for i := 0; i+w <= len(s); i++ {
			out = append(out, s[i:i+w])
		}
	}
	return out
}

// hidden reports a rune a reader would not see between two characters:
// white space, a control character, an invisible format character.
func hidden(r rune) bool {
	return unicode.IsSpace(r) || display.Classify(r) != display.Visible
}

// normalize removes every hidden rune from s.
func normalize(s string) string {
	if strings.IndexFunc(s, hidden) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if hidden(r) {
			return -1
		}
		return r
	}, s)
}
