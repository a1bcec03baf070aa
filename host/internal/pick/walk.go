package pick

import "github.com/elevenmessenger/pinned/internal/jsonv"

// Token kinds Walk reports.
const (
	TokenKey    = iota // an object key, decoded
	TokenString        // a string value, decoded
	TokenNumber        // a number, as written
)

// Walk calls f with every key, string and number of doc in document
// order (strings decoded; the bytes are valid only during the call). It
// validates the whole document as Project does — one JSON value, nesting
// at most MaxDepth — and returns an error, after which f may have seen a
// part of it, when doc is not valid.
func Walk(doc []byte, f func(kind int, text []byte)) error {
	s := scanner{b: doc}
	s.ws()
	var stack []byte // expected closers
	for {
		if s.i >= len(s.b) {
			return s.fail("unexpected end of input")
		}
		c := s.b[s.i]
		switch {
		case c == '{' || c == '[':
			if len(stack) >= MaxDepth {
				return s.fail("nesting too deep")
			}
			s.i++
			s.ws()
			close := byte('}')
			if c == '[' {
				close = ']'
			}
			if s.i < len(s.b) && s.b[s.i] == close {
				s.i++
				break
			}
			stack = append(stack, close)
			if close == '}' {
				key, err := s.key()
				if err != nil {
					return err
				}
				f(TokenKey, key)
			}
			continue
		case c == '"':
			n := jsonv.ScanString(s.b[s.i:])
			if n == 0 {
				return s.fail("invalid string")
			}
			raw := s.b[s.i+1 : s.i+n-1]
			if indexByte(raw, '\\') >= 0 {
				v, err := jsonv.Parse(s.b[s.i : s.i+n])
				if err != nil {
					return s.fail("invalid string")
				}
				raw = []byte(v.S)
			}
			f(TokenString, raw)
			s.i += n
		case c == '-' || (c >= '0' && c <= '9'):
			n := jsonv.ScanNumber(s.b[s.i:])
			if n == 0 {
				return s.fail("invalid number")
			}
			f(TokenNumber, s.b[s.i:s.i+n])
			s.i += n
		case s.lit("true"), s.lit("false"), s.lit("null"):
		default:
			return s.fail("invalid character")
		}
		// A value ended: close containers or move to the next element.
		for {
			if len(stack) == 0 {
				s.ws()
				if s.i != len(s.b) {
					return s.fail("data after the top-level value")
				}
				return nil
			}
			close := stack[len(stack)-1]
			done, err := s.next(close)
			if err != nil {
				return err
			}
			if !done {
				if close == '}' {
					key, err := s.key()
					if err != nil {
						return err
					}
					f(TokenKey, key)
				}
				break
			}
			stack = stack[:len(stack)-1]
		}
	}
}
