// Package jsonv is a small, strict JSON (RFC 8259) parser and encoder that
// keeps object members in document order.
//
// It exists for the guest: encoding/json pulls reflection into the wasm
// module and grows both its size and its per-instance cost, and the guest
// must see arguments exactly as sent (member order, duplicate keys, number
// literals). It is dependency-free beyond strconv and unicode/utf8.
//
// Parse is strict where encoding/json is lenient: duplicate object keys,
// invalid UTF-8, trailing data and nesting deeper than MaxDepth are errors.
package jsonv

import (
	"strconv"
	"unicode/utf8"
)

// Kind is the JSON type of a Value.
type Kind uint8

// The kinds of JSON values.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

// String returns the JSON Schema name of the kind ("null", "boolean",
// "number", "string", "array", "object").
func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	case Array:
		return "array"
	case Object:
		return "object"
	}
	return "invalid"
}

// Value is one parsed JSON value.
type Value struct {
	Kind Kind
	// B is the value of a Bool.
	B bool
	// S is the decoded text of a String, or the literal of a Number
	// exactly as written (e.g. "1e3", "-0.50").
	S string
	// A holds the elements of an Array.
	A []Value
	// O holds the members of an Object in document order; keys are unique.
	O []Member
}

// Member is one key/value pair of an object.
type Member struct {
	Key   string
	Value Value
}

// Get returns the value of the object member named key, or nil when v is
// not an object or has no such member.
func (v *Value) Get(key string) *Value {
	if v == nil || v.Kind != Object {
		return nil
	}
	for i := range v.O {
		if v.O[i].Key == key {
			return &v.O[i].Value
		}
	}
	return nil
}

// MaxDepth bounds the nesting of arrays and objects Parse accepts.
const MaxDepth = 64

// SyntaxError reports where and why Parse refused its input.
type SyntaxError struct {
	// Offset is the byte offset of the problem in the input.
	Offset int
	// Msg says what is wrong, e.g. "duplicate key".
	Msg string
}

func (e *SyntaxError) Error() string {
	return "json: " + e.Msg + " at offset " + strconv.Itoa(e.Offset)
}

// Parse parses exactly one JSON value from data, with optional white space
// around it. It returns a *SyntaxError for anything RFC 8259 forbids, for
// duplicate keys in an object, for invalid UTF-8 and for nesting deeper
// than MaxDepth. Escaped lone surrogates decode to U+FFFD.
func Parse(data []byte) (Value, error) {
	p := parser{data: data}
	p.ws()
	v, err := p.value(0)
	if err != nil {
		return Value{}, err
	}
	p.ws()
	if p.i != len(p.data) {
		return Value{}, p.fail("data after the value")
	}
	return v, nil
}

type parser struct {
	data []byte
	i    int
}

func (p *parser) fail(msg string) error { return &SyntaxError{Offset: p.i, Msg: msg} }

func (p *parser) ws() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (Value, error) {
	if p.i >= len(p.data) {
		return Value{}, p.fail("unexpected end of input")
	}
	switch c := p.data[p.i]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, err := p.str()
		return Value{Kind: String, S: s}, err
	case c == '-' || (c >= '0' && c <= '9'):
		n, err := p.number()
		return Value{Kind: Number, S: n}, err
	case p.lit("true"):
		return Value{Kind: Bool, B: true}, nil
	case p.lit("false"):
		return Value{Kind: Bool}, nil
	case p.lit("null"):
		return Value{Kind: Null}, nil
	}
	return Value{}, p.fail("invalid character")
}

func (p *parser) lit(word string) bool {
	if len(p.data)-p.i >= len(word) && string(p.data[p.i:p.i+len(word)]) == word {
		p.i += len(word)
		return true
	}
	return false
}

func (p *parser) object(depth int) (Value, error) {
	if depth > MaxDepth {
		return Value{}, p.fail("nesting too deep")
	}
	p.i++ // {
	v := Value{Kind: Object}
	p.ws()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return v, nil
	}
	for {
		p.ws()
		if p.i >= len(p.data) || p.data[p.i] != '"' {
			return Value{}, p.fail("expected a string key")
		}
		at := p.i
		k, err := p.str()
		if err != nil {
			return Value{}, err
		}
		for j := range v.O {
			if v.O[j].Key == k {
				return Value{}, &SyntaxError{Offset: at, Msg: "duplicate key " + strconv.Quote(k)}
			}
		}
		p.ws()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return Value{}, p.fail("expected ':'")
		}
		p.i++
		p.ws()
		e, err := p.value(depth)
		if err != nil {
			return Value{}, err
		}
		v.O = append(v.O, Member{Key: k, Value: e})
		p.ws()
		if p.i >= len(p.data) {
			return Value{}, p.fail("unexpected end of input")
		}
		switch p.data[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return v, nil
		default:
			return Value{}, p.fail("expected ',' or '}'")
		}
	}
}

func (p *parser) array(depth int) (Value, error) {
	if depth > MaxDepth {
		return Value{}, p.fail("nesting too deep")
	}
	p.i++ // [
	v := Value{Kind: Array}
	p.ws()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		return v, nil
	}
	for {
		p.ws()
		e, err := p.value(depth)
		if err != nil {
			return Value{}, err
		}
		v.A = append(v.A, e)
		p.ws()
		if p.i >= len(p.data) {
			return Value{}, p.fail("unexpected end of input")
		}
		switch p.data[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return v, nil
		default:
			return Value{}, p.fail("expected ',' or ']'")
		}
	}
}

// number scans an RFC 8259 number literal and returns it verbatim.
func (p *parser) number() (string, error) {
	start := p.i
	n := ScanNumber(p.data[p.i:])
	if n == 0 {
		return "", p.fail("invalid number")
	}
	p.i += n
	return string(p.data[start:p.i]), nil
}

// ScanNumber returns the length of the RFC 8259 number literal at the start
// of b, or 0 when b does not start with one.
func ScanNumber(b []byte) int {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return 0
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return 0
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return 0
		}
	}
	return i
}

// str scans a string starting at the opening quote and returns its decoded
// text.
func (p *parser) str() (string, error) {
	n, s, ok := scanString(p.data[p.i:], true)
	if !ok {
		p.i += n
		return "", p.fail("invalid string")
	}
	p.i += n
	return s, nil
}

// ScanString returns the length of the JSON string (quotes included) at
// the start of b, or 0 when b does not start with a valid one: an opening
// quote, no raw control characters, valid escapes, valid UTF-8, a closing
// quote.
func ScanString(b []byte) int {
	n, _, ok := scanString(b, false)
	if !ok {
		return 0
	}
	return n
}

// DecodeString decodes the JSON string at the start of b: its length
// (quotes included) and its text, as Parse decodes the same bytes alone;
// ok is false when b does not start with a valid string (ScanString's
// rules). One pass, where ScanString then Parse read the string twice.
func DecodeString(b []byte) (n int, s string, ok bool) {
	n, s, ok = scanString(b, true)
	if !ok {
		return 0, "", false
	}
	return n, s, true
}

// scanString scans the string at b[0] (which must be '"'). With decode it
// also returns the decoded text. On failure n is the offset of the problem.
func scanString(b []byte, decode bool) (n int, s string, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return 0, "", false
	}
	i := 1
	// Fast path: no escapes.
	for i < len(b) {
		c := b[i]
		if c == '"' {
			if decode {
				s = string(b[1:i])
			}
			return i + 1, s, true
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return i, "", false
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i, "", false
		}
		i += size
	}
	var out []byte
	if decode {
		out = make([]byte, 0, i+16)
		out = append(out, b[1:i]...)
	}
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, string(out), true
		case c < 0x20:
			return i, "", false
		case c == '\\':
			if i+1 >= len(b) {
				return i, "", false
			}
			e := b[i+1]
			var r rune
			switch e {
			case '"', '\\', '/':
				r = rune(e)
			case 'b':
				r = '\b'
			case 'f':
				r = '\f'
			case 'n':
				r = '\n'
			case 'r':
				r = '\r'
			case 't':
				r = '\t'
			case 'u':
				h, okh := hex4(b[i+2:])
				if !okh {
					return i, "", false
				}
				i += 4
				r = rune(h)
				if r >= 0xD800 && r < 0xDC00 {
					// A high surrogate: a low one must follow to make a pair.
					if len(b) > i+7 && b[i+2] == '\\' && b[i+3] == 'u' {
						if l, okl := hex4(b[i+4:]); okl && l >= 0xDC00 && l < 0xE000 {
							r = 0x10000 + (r-0xD800)<<10 + (rune(l) - 0xDC00)
							i += 6
						} else {
							r = utf8.RuneError
						}
					} else {
						r = utf8.RuneError
					}
				} else if r >= 0xDC00 && r < 0xE000 {
					r = utf8.RuneError
				}
			default:
				return i, "", false
			}
			i += 2
			if decode {
				out = utf8.AppendRune(out, r)
			}
		case c < utf8.RuneSelf:
			if decode {
				out = append(out, c)
			}
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size <= 1 {
				return i, "", false
			}
			if decode {
				out = append(out, b[i:i+size]...)
			}
			i += size
		}
	}
	return i, "", false
}

func hex4(b []byte) (uint16, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var v uint16
	for _, c := range b[:4] {
		v <<= 4
		switch {
		case c >= '0' && c <= '9':
			v |= uint16(c - '0')
		case c >= 'a' && c <= 'f':
			v |= uint16(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			v |= uint16(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return v, true
}

// AppendString appends s to dst as a JSON string. Quotes, backslashes and
// control characters are escaped; invalid UTF-8 becomes U+FFFD.
func AppendString(dst []byte, s string) []byte {
	const hexdigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexdigits[c>>4], hexdigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Append appends the compact JSON encoding of v to dst. Numbers are written
// as their literal; member order is kept.
func Append(dst []byte, v Value) []byte {
	switch v.Kind {
	case Null:
		return append(dst, "null"...)
	case Bool:
		if v.B {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case Number:
		return append(dst, v.S...)
	case String:
		return AppendString(dst, v.S)
	case Array:
		dst = append(dst, '[')
		for i, e := range v.A {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = Append(dst, e)
		}
		return append(dst, ']')
	case Object:
		dst = append(dst, '{')
		for i, m := range v.O {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, m.Key)
			dst = append(dst, ':')
			dst = Append(dst, m.Value)
		}
		return append(dst, '}')
	}
	return append(dst, "null"...)
}

// Skip returns the length of the one valid JSON value at the start of b
// (no leading white space), or 0 when b does not start with one or it
// nests deeper than MaxDepth. It validates exactly what Parse does,
// duplicate keys aside, without allocating.
func Skip(b []byte) int {
	var stack [MaxDepth]byte // expected closers
	depth := 0
	i := 0
	ws := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
	}
	for {
		if i >= len(b) {
			return 0
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if depth == MaxDepth {
				return 0
			}
			close := byte('}')
			if c == '[' {
				close = ']'
			}
			i++
			ws()
			if i < len(b) && b[i] == close {
				i++
				break
			}
			stack[depth] = close
			depth++
			if close == '}' {
				if !skipKey(b, &i, ws) {
					return 0
				}
			}
			continue
		case c == '"':
			n := ScanString(b[i:])
			if n == 0 {
				return 0
			}
			i += n
		case c == '-' || (c >= '0' && c <= '9'):
			n := ScanNumber(b[i:])
			if n == 0 {
				return 0
			}
			i += n
		case hasLit(b[i:], "true"):
			i += 4
		case hasLit(b[i:], "false"):
			i += 5
		case hasLit(b[i:], "null"):
			i += 4
		default:
			return 0
		}
		// A value ended: close containers or move to the next element.
		for {
			if depth == 0 {
				return i
			}
			ws()
			if i >= len(b) {
				return 0
			}
			if b[i] == ',' {
				i++
				ws()
				if stack[depth-1] == '}' && !skipKey(b, &i, ws) {
					return 0
				}
				break
			}
			if b[i] != stack[depth-1] {
				return 0
			}
			i++
			depth--
		}
	}
}

func skipKey(b []byte, i *int, ws func()) bool {
	n := ScanString(b[*i:])
	if n == 0 {
		return false
	}
	*i += n
	ws()
	if *i >= len(b) || b[*i] != ':' {
		return false
	}
	*i++
	ws()
	return true
}

func hasLit(b []byte, word string) bool {
	return len(b) >= len(word) && string(b[:len(word)]) == word
}
