// Package pick is the host's streaming JSON reader of upstream answers:
// the manifest's pick projection (docs/MANIFEST.md, "Pick"), applied to
// the raw body before anything else sees it (ABI invariant 5), and the
// lookups the host's error handling and pagination take from a body (a
// string or value at a dotted path, a GraphQL errors array, the last
// element of a list). Nothing here builds a tree: the bytes are walked
// once, depth-bounded by MaxDepth, and only the output is allocated.
//
// It imports only internal/jsonv; the host imports it.
package pick

import (
	"errors"
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
	off int
	msg string
}

func (e *projErr) Error() string { return e.msg }
func (e *projErr) Unwrap() error { return errProjection }

// Project applies the projection to a JSON document and appends the
// result to dst. The output is compact JSON: objects keep the members the
// pick names, in document order, with keys written canonically; kept
// values are copied verbatim minus insignificant white space; array
// elements that are not objects or arrays are dropped where a field path
// goes through them. A missing root, or an empty field list, yields null.
//
// The whole document is validated, including what the pick drops: an
// invalid body is an error naming the byte offset, never a partial result.
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
				return dst, false, s.fail("duplicate key on the pick root path")
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
		start := s.i
		if err := s.skip(depth); err != nil {
			return dst, err
		}
		return appendCompact(dst, s.b[start:s.i]), nil
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
						return dst, s.fail("duplicate key " + string(key))
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

// appendCompact appends a valid JSON value without insignificant white
// space; strings are copied byte for byte.
func appendCompact(dst, v []byte) []byte {
	for i := 0; i < len(v); {
		switch c := v[i]; c {
		case ' ', '\t', '\n', '\r':
			i++
		case '"':
			n := jsonv.ScanString(v[i:])
			dst = append(dst, v[i:i+n]...)
			i += n
		default:
			dst = append(dst, c)
			i++
		}
	}
	return dst
}
