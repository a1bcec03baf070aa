// Package pick is the host's streaming JSON reader of upstream answers:
// the manifest's pick projection (docs/MANIFEST.md, "Pick"), applied to
// the raw body before anything else sees it (ABI invariant 5), and the
// lookups the host's error handling and pagination take from a body (a
// string or value at a dotted path, a GraphQL errors array, the last
// element of a list), and the walk of every key, string and number the
// credential echo check reads (Walk). Nothing here builds a tree: the bytes are walked
// once, depth-bounded by MaxDepth, and only the output is allocated.
//
// It imports only internal/jsonv; the host imports it.
package pick

import (
	"errors"
	"strconv"
	"strings"

	"github.com/elevenmessenger/pinned/internal/jsonv"
)

// Projection is a compiled pick: the root path to descend and the tree of
// fields to keep. It is immutable once built and safe for concurrent use.
type Projection struct {
	root  []string
	tree  *pickNode // nil when no field is kept
	empty bool
}

type pickNode struct {
	leaf bool
	// kids are the child keys in the order the pick first names them.
	kids []pickKid
}

type pickKid struct {
	key  string
	node *pickNode
}

func (n *pickNode) child(key []byte) *pickNode {
	for i := range n.kids {
		if n.kids[i].key == string(key) {
			return n.kids[i].node
		}
	}
	return nil
}

// New compiles a pick (root dot path, field dot paths; see
// docs/MANIFEST.md "Pick"). Paths are assumed valid: the registry loader
// checks them.
func New(root string, fields []string) *Projection {
	p := &Projection{empty: len(fields) == 0}
	if root != "" {
		p.root = strings.Split(root, ".")
	}
	if p.empty {
		return p
	}
	p.tree = &pickNode{}
	for _, f := range fields {
		n := p.tree
		for _, seg := range strings.Split(f, ".") {
			if n.leaf {
				break // a prefix field already keeps the whole value
			}
			c := n.child([]byte(seg))
			if c == nil {
				c = &pickNode{}
				n.kids = append(n.kids, pickKid{key: seg, node: c})
			}
			n = c
		}
		n.leaf = true
		n.kids = nil
	}
	return p
}

// errProjection is wrapped by every projection failure: the upstream body
// is not valid JSON (RFC 8259), nests deeper than MaxDepth, or repeats
// a key the pick descends into or keeps.
var errProjection = errors.New("response is not valid JSON")

// MaxDepth bounds the nesting the projector follows or skips.
const MaxDepth = 128

type projErr struct {
	off      int
	msg      string
	disagree bool // valid JSON, refused because readers disagree on it
}

func (e *projErr) Error() string { return e.msg }
func (e *projErr) Unwrap() error { return errProjection }

// Disagreement returns, for a projection error on valid JSON that a kept
// value makes ambiguous (a key twice, an escaped lone surrogate, a number
// out of range), what it found in the host's own words (never a byte of
// the body); "" for any other error.
func Disagreement(err error) string {
	var pe *projErr
	if errors.As(err, &pe) && pe.disagree {
		return pe.msg
	}
	return ""
}

// disagree is fail for valid JSON refused because readers disagree on it.
func (s *scanner) disagree(msg string) error {
	return &projErr{off: s.i, msg: msg, disagree: true}
}

// Project applies the projection to a JSON document and appends the
// result to dst. The output is compact JSON in one canonical form:
// objects keep the members the pick names, in document order; every key
// and string is decoded and written again canonically (no escape but
// those a JSON string needs: `\"`, `\\`, \n, \r, \t, \u00XX for other
// controls); numbers are copied as written; array elements that are not
// objects or arrays are dropped where a field path goes through them. A
// missing root, or an empty field list, yields null.
//
// The whole document is validated, including what the pick drops: an
// invalid body is an error naming the byte offset, never a partial result.
// Inside a kept value, what readers disagree on is refused too: a key
// twice in one object (escaped or not), an escaped lone surrogate
// (`\ud800`), and a number of more than MaxNumberBytes characters or out
// of the range of a float64 (`1e400`, a 400-digit integer).
func (p *Projection) Project(dst []byte, doc []byte) ([]byte, error) {
	s := scanner{b: doc}
	s.ws()
	start := len(dst)
	var found bool
	var err error
	dst, found, err = s.descend(dst, p, 0, 0)
	if err != nil {
		return dst[:start], err
	}
	s.ws()
	if s.i != len(s.b) {
		return dst[:start], s.fail("data after the top-level value")
	}
	if !found {
		dst = append(dst[:start], "null"...)
	}
	return dst, nil
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) fail(msg string) error { return &projErr{off: s.i, msg: msg} }

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// descend walks the root path from the value at s.i. At the end of the
// path it projects; elsewhere it validates and skips.
func (s *scanner) descend(dst []byte, p *Projection, level, depth int) ([]byte, bool, error) {
	if level == len(p.root) {
		if p.empty {
			return dst, false, s.skip(depth)
		}
		out, err := s.project(dst, p.tree, depth)
		return out, err == nil, err
	}
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return dst, false, s.skip(depth)
	}
	if depth >= MaxDepth {
		return dst, false, s.fail("nesting too deep")
	}
	s.i++
	found, seen := false, false
	first := true
	for {
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == '}' && first {
			s.i++
			return dst, found, nil
		}
		key, err := s.key()
		if err != nil {
			return dst, false, err
		}
		if string(key) == p.root[level] {
			if seen {
				return dst, false, s.disagree("a key of the pick root, twice in one object")
			}
			seen = true
			if dst, found, err = s.descend(dst, p, level+1, depth+1); err != nil {
				return dst, false, err
			}
		} else if err := s.skip(depth + 1); err != nil {
			return dst, false, err
		}
		first = false
		done, err := s.next('}')
		if err != nil {
			return dst, false, err
		}
		if done {
			return dst, found, nil
		}
	}
}

// key reads an object key and the following colon; it returns the decoded
// key (or the raw bytes when the key has no escapes).
func (s *scanner) key() ([]byte, error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, s.fail("expected a string key")
	}
	n := jsonv.ScanString(s.b[s.i:])
	if n == 0 {
		return nil, s.fail("invalid string")
	}
	raw := s.b[s.i+1 : s.i+n-1]
	var key []byte
	if indexByte(raw, '\\') < 0 {
		key = raw
	} else {
		v, err := jsonv.Parse(s.b[s.i : s.i+n])
		if err != nil {
			return nil, s.fail("invalid string")
		}
		key = []byte(v.S)
	}
	s.i += n
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return nil, s.fail("expected ':'")
	}
	s.i++
	s.ws()
	return key, nil
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// next consumes white space and then ',' (returns false) or the closing
// byte (returns true).
func (s *scanner) next(close byte) (bool, error) {
	s.ws()
	if s.i >= len(s.b) {
		return false, s.fail("unexpected end of input")
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		s.ws()
		return false, nil
	case close:
		s.i++
		return true, nil
	}
	return false, s.fail("expected ',' or '" + string(close) + "'")
}

// project appends the projection of the value at s.i by node n.
func (s *scanner) project(dst []byte, n *pickNode, depth int) ([]byte, error) {
	if n.leaf {
		return s.canonical(dst, depth)
	}
	if depth >= MaxDepth {
		return dst, s.fail("nesting too deep")
	}
	if s.i >= len(s.b) {
		return dst, s.fail("unexpected end of input")
	}
	switch s.b[s.i] {
	case '{':
		s.i++
		dst = append(dst, '{')
		var seen []*pickNode
		wrote := false
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == '}' {
			s.i++
			return append(dst, '}'), nil
		}
		for {
			key, err := s.key()
			if err != nil {
				return dst, err
			}
			c := n.child(key)
			if c != nil {
				for _, x := range seen {
					if x == c {
						return dst, s.disagree("a key the pick names, twice in one object")
					}
				}
				seen = append(seen, c)
			}
			if c != nil && (c.leaf || s.isContainer()) {
				if wrote {
					dst = append(dst, ',')
				}
				dst = jsonv.AppendString(dst, string(key))
				dst = append(dst, ':')
				if dst, err = s.project(dst, c, depth+1); err != nil {
					return dst, err
				}
				wrote = true
			} else if err := s.skip(depth + 1); err != nil {
				return dst, err
			}
			done, err := s.next('}')
			if err != nil {
				return dst, err
			}
			if done {
				return append(dst, '}'), nil
			}
		}
	case '[':
		s.i++
		dst = append(dst, '[')
		wrote := false
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return append(dst, ']'), nil
		}
		for {
			var err error
			if s.isContainer() {
				if wrote {
					dst = append(dst, ',')
				}
				if dst, err = s.project(dst, n, depth+1); err != nil {
					return dst, err
				}
				wrote = true
			} else if err = s.skip(depth + 1); err != nil {
				return dst, err
			}
			done, err := s.next(']')
			if err != nil {
				return dst, err
			}
			if done {
				return append(dst, ']'), nil
			}
		}
	}
	// A scalar where fields were expected: nothing of it is kept.
	if err := s.skip(depth); err != nil {
		return dst, err
	}
	return append(dst, "null"...), nil
}

func (s *scanner) isContainer() bool {
	return s.i < len(s.b) && (s.b[s.i] == '{' || s.b[s.i] == '[')
}

// skip validates and steps over the value at s.i, iteratively so hostile
// nesting cannot exhaust the stack.
func (s *scanner) skip(depth int) error {
	var stack []byte // expected closers
	for {
		if s.i >= len(s.b) {
			return s.fail("unexpected end of input")
		}
		c := s.b[s.i]
		switch {
		case c == '{' || c == '[':
			if depth+len(stack) >= MaxDepth {
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
				if _, err := s.key(); err != nil {
					return err
				}
			}
			continue
		case c == '"':
			n := jsonv.ScanString(s.b[s.i:])
			if n == 0 {
				return s.fail("invalid string")
			}
			s.i += n
		case c == '-' || (c >= '0' && c <= '9'):
			n := jsonv.ScanNumber(s.b[s.i:])
			if n == 0 {
				return s.fail("invalid number")
			}
			s.i += n
		case s.lit("true"), s.lit("false"), s.lit("null"):
		default:
			return s.fail("invalid character")
		}
		// A value ended: close containers or move to the next element.
		for {
			if len(stack) == 0 {
				return nil
			}
			close := stack[len(stack)-1]
			done, err := s.next(close)
			if err != nil {
				return err
			}
			if !done {
				if close == '}' {
					if _, err := s.key(); err != nil {
						return err
					}
				}
				break
			}
			stack = stack[:len(stack)-1]
		}
	}
}

func (s *scanner) lit(word string) bool {
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// MaxNumberBytes bounds the text of a number inside a kept value: a
// longer one is refused (no provider's id or amount needs it; readers
// disagree on what a 5,000-digit integer is).
const MaxNumberBytes = 64

// canonical validates the value at s.i and appends it in the canonical
// form Project documents, refusing what readers disagree on.
func (s *scanner) canonical(dst []byte, depth int) ([]byte, error) {
	if s.i >= len(s.b) {
		return dst, s.fail("unexpected end of input")
	}
	switch c := s.b[s.i]; {
	case c == '{':
		if depth >= MaxDepth {
			return dst, s.fail("nesting too deep")
		}
		s.i++
		s.ws()
		dst = append(dst, '{')
		if s.i < len(s.b) && s.b[s.i] == '}' {
			s.i++
			return append(dst, '}'), nil
		}
		var seen keySet
		for first := true; ; first = false {
			at := s.i
			key, err := s.canonicalKey()
			if err != nil {
				return dst, err
			}
			if !seen.add(string(key)) {
				s.i = at
				return dst, s.disagree("a key twice in one object of a kept value")
			}
			if !first {
				dst = append(dst, ',')
			}
			dst = jsonv.AppendString(dst, string(key))
			dst = append(dst, ':')
			if dst, err = s.canonical(dst, depth+1); err != nil {
				return dst, err
			}
			done, err := s.next('}')
			if err != nil {
				return dst, err
			}
			if done {
				return append(dst, '}'), nil
			}
		}
	case c == '[':
		if depth >= MaxDepth {
			return dst, s.fail("nesting too deep")
		}
		s.i++
		s.ws()
		dst = append(dst, '[')
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return append(dst, ']'), nil
		}
		for first := true; ; first = false {
			if !first {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = s.canonical(dst, depth+1); err != nil {
				return dst, err
			}
			done, err := s.next(']')
			if err != nil {
				return dst, err
			}
			if done {
				return append(dst, ']'), nil
			}
		}
	case c == '"':
		n := jsonv.ScanString(s.b[s.i:])
		if n == 0 {
			return dst, s.fail("invalid string")
		}
		str := s.b[s.i : s.i+n]
		if indexByte(str, '\\') < 0 {
			s.i += n
			return append(dst, str...), nil // already canonical
		}
		if LoneSurrogate(str) {
			return dst, s.disagree("escaped lone surrogate in a kept value")
		}
		v, err := jsonv.Parse(str)
		if err != nil {
			return dst, s.fail("invalid string")
		}
		s.i += n
		return jsonv.AppendString(dst, v.S), nil
	case c == '-' || (c >= '0' && c <= '9'):
		n := jsonv.ScanNumber(s.b[s.i:])
		if n == 0 {
			return dst, s.fail("invalid number")
		}
		if n > MaxNumberBytes {
			return dst, s.disagree("number of more than " + strconv.Itoa(MaxNumberBytes) + " characters in a kept value")
		}
		if _, err := strconv.ParseFloat(string(s.b[s.i:s.i+n]), 64); err != nil {
			return dst, s.disagree("number out of range in a kept value")
		}
		dst = append(dst, s.b[s.i:s.i+n]...)
		s.i += n
		return dst, nil
	}
	start := s.i
	if s.lit("true") || s.lit("false") || s.lit("null") {
		return append(dst, s.b[start:s.i]...), nil
	}
	return dst, s.fail("invalid character")
}

// canonicalKey reads a key as key does, refusing an escaped lone
// surrogate (which would decode to U+FFFD, like every other).
func (s *scanner) canonicalKey() ([]byte, error) {
	if s.i < len(s.b) && s.b[s.i] == '"' {
		if n := jsonv.ScanString(s.b[s.i:]); n > 0 && LoneSurrogate(s.b[s.i:s.i+n]) {
			return nil, s.disagree("escaped lone surrogate in a kept key")
		}
	}
	return s.key()
}

// keySet is the keys of one object: a slice while small, a map after.
type keySet struct {
	small []string
	big   map[string]struct{}
}

// add reports whether k is new, recording it.
func (ks *keySet) add(k string) bool {
	if ks.big != nil {
		if _, ok := ks.big[k]; ok {
			return false
		}
		ks.big[k] = struct{}{}
		return true
	}
	for _, x := range ks.small {
		if x == k {
			return false
		}
	}
	if len(ks.small) < 16 {
		ks.small = append(ks.small, k)
		return true
	}
	ks.big = make(map[string]struct{}, 32)
	for _, x := range ks.small {
		ks.big[x] = struct{}{}
	}
	ks.big[k] = struct{}{}
	return true
}

// LoneSurrogate reports whether str, a valid JSON string (quotes
// included), escapes a surrogate that is not half of a pair: `\ud800`
// alone, a low `\udc00` first. Decoders disagree on these (U+FFFD, an
// error, the raw code unit), so the host reads none of them.
func LoneSurrogate(str []byte) bool {
	for i := 0; i < len(str); i++ {
		if str[i] != '\\' {
			continue
		}
		if i+1 < len(str) && str[i+1] != 'u' {
			i++ // a two-byte escape, `\\` among them
			continue
		}
		h, ok := hex4at(str, i+2)
		if !ok {
			return false // not a valid string: ScanString said so first
		}
		switch {
		case h >= 0xDC00 && h < 0xE000:
			return true
		case h >= 0xD800 && h < 0xDC00:
			if i+7 >= len(str) || str[i+6] != '\\' || str[i+7] != 'u' {
				return true
			}
			l, ok := hex4at(str, i+8)
			if !ok || l < 0xDC00 || l >= 0xE000 {
				return true
			}
			i += 11
		default:
			i += 5
		}
	}
	return false
}

func hex4at(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[i:i+4]), 16, 16)
	return rune(v), err == nil
}
