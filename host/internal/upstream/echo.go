package upstream

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/elevenmessenger/pinned/host/internal/pick"
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
// cannot be read to the end as one JSON value is reported as an echo.
func Echoes(data []byte, secrets ...string) bool {
	if len(bytes.TrimSpace(data)) == 0 || string(data) == "null" || !anySecret(secrets) {
		return false
	}
	// The four readings of data, each normalized: every scalar in order;
	// string values only; string and number values; keys only.
	buf := make([]byte, 0, 4*len(data))
	all, strs, vals, keys := buf[:0:len(data)], buf[len(data):len(data):2*len(data)], buf[2*len(data):2*len(data):3*len(data)], buf[3*len(data):3*len(data)]
	err := pick.Walk(data, func(kind int, text []byte) {
		start := len(all)
		all = appendVisible(all, text)
		part := all[start:]
		switch kind {
		case pick.TokenKey:
			keys = append(keys, part...)
		case pick.TokenString:
			strs = append(strs, part...)
			vals = append(vals, part...)
		case pick.TokenNumber:
			vals = append(vals, part...)
		}
	})
	if err != nil {
		return true // fail closed
	}
	for _, text := range [][]byte{all, strs, vals, keys} {
		for _, s := range secrets {
			if holds(text, s) {
				return true
			}
		}
	}
	return false
}

// anySecret reports whether one of secrets is long enough to look for.
func anySecret(secrets []string) bool {
	for _, s := range secrets {
		if len(s) >= minEchoSecret {
			return true
		}
	}
	return false
}

// holds reports whether text holds EchoWindow consecutive characters of
// secret (all of it when shorter; nothing for a secret under
// minEchoSecret). Every run of EchoWindow characters of secret contains
// one of its aligned 8-character blocks, so only those are searched, and
// each hit is extended both ways to see how long the run is.
func holds(text []byte, secret string) bool {
	if len(secret) < minEchoSecret {
		return false
	}
	w := min(EchoWindow, len(secret))
	if w < EchoWindow {
		return bytes.Contains(text, []byte(secret))
	}
	const block = EchoWindow / 2
	for k := 0; k+block <= len(secret); k += block {
		needle := []byte(secret[k : k+block])
		for off := 0; ; {
			at := bytes.Index(text[off:], needle)
			if at < 0 {
				break
			}
			p := off + at
			left := 0
			for left < k && left < p && text[p-left-1] == secret[k-left-1] {
				left++
			}
			right := 0
			for k+block+right < len(secret) && p+block+right < len(text) && text[p+block+right] == secret[k+block+right] {
				right++
			}
			if left+block+right >= w {
				return true
			}
			off = p + 1
		}
	}
	return false
}

// appendVisible appends text without its hidden runes.
func appendVisible(dst, text []byte) []byte {
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if c > ' ' && c != 0x7f {
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(text[i:])
		if !hidden(r) {
			dst = append(dst, text[i:i+n]...)
		}
		i += n
	}
	return dst
}

// EchoesText reports whether text (a cursor, a message) holds a fragment
// of EchoWindow characters of one of the secrets once white space,
// control and invisible characters are removed.
func EchoesText(text string, secrets ...string) bool {
	norm := []byte(normalize(text))
	for _, s := range secrets {
		if holds(norm, s) {
			return true
		}
	}
	return false
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
