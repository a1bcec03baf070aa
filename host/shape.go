package host

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/elevenmessenger/pinned/internal/jsonv"
	"github.com/elevenmessenger/pinned/registry"
)

// The shape check holds a request to the op's templates, not only to its
// keys: every literal the manifest wrote (a GraphQL query, a fixed query
// value, a body member) must arrive exactly as written, and only the
// places where an {arg} stands may vary. A guest can then change argument
// values — which the member's consent and the provider's own checks cover
// — but never the request's structure (no mutation in a read op's
// GraphQL text, no alias, no extra body member).

// glob is a template as literal pieces and wildcards: an {arg} matches any
// text (the executor has validated it; the host only fixes the structure).
type glob struct {
	pieces []registry.Piece
}

func newGlob(tmpl string) (glob, error) {
	p, err := registry.ParseTemplate(tmpl)
	return glob{p}, err
}

// hasArg reports whether the template names an argument (and so may be
// left out when that argument is absent).
func (g glob) hasArg() bool {
	for _, p := range g.pieces {
		if p.Arg != "" {
			return true
		}
	}
	return false
}

// match reports whether s is the template with some text (possibly
// empty) in place of each {arg}: the literal pieces appear in order,
// anchored at both ends. It is wildcard matching with backtracking to the
// last wildcard, O(len(s) × pieces) at worst.
func (g glob) match(s string) bool {
	ti, si := 0, 0
	starTi, starSi := -1, 0
	for {
		if ti < len(g.pieces) {
			p := g.pieces[ti]
			if p.Arg != "" {
				starTi, starSi = ti, si
				ti++
				continue
			}
			if strings.HasPrefix(s[si:], p.Text) {
				si += len(p.Text)
				ti++
				continue
			}
		} else if si == len(s) {
			return true
		}
		// A mismatch, or input left over: the last wildcard takes one
		// more byte, if there is one to take.
		if starTi < 0 || starSi >= len(s) {
			return false
		}
		starSi++
		si, ti = starSi, starTi+1
	}
}

// shape is a compiled body_json template.
type shape struct {
	kind     jsonv.Kind
	literal  []byte // numbers, booleans, null: canonical encoding
	text     glob   // strings
	typed    string // a string exactly "{arg}": the arg's type
	optional bool   // names an arg, so the executor may leave it out
	elems    []*shape
	keys     []string
	vals     []*shape
}

func newShape(v *jsonv.Value, args map[string]*registry.Arg) (*shape, error) {
	s := &shape{kind: v.Kind}
	switch v.Kind {
	case jsonv.String:
		g, err := newGlob(v.S)
		if err != nil {
			return nil, err
		}
		s.text = g
		s.optional = g.hasArg()
		if len(g.pieces) == 1 && g.pieces[0].Arg != "" {
			if a := args[g.pieces[0].Arg]; a != nil {
				s.typed = a.Type
			}
		}
	case jsonv.Array:
		for i := range v.A {
			e, err := newShape(&v.A[i], args)
			if err != nil {
				return nil, err
			}
			s.elems = append(s.elems, e)
		}
	case jsonv.Object:
		for i := range v.O {
			e, err := newShape(&v.O[i].Value, args)
			if err != nil {
				return nil, err
			}
			s.keys = append(s.keys, v.O[i].Key)
			s.vals = append(s.vals, e)
		}
	default:
		s.literal = jsonv.Append(nil, *v)
	}
	return s, nil
}

// match reports whether v is what the executor can render from the
// template for some argument values.
func (s *shape) match(v *jsonv.Value) bool {
	if s.typed != "" {
		switch s.typed {
		case registry.TypeString:
			return v.Kind == jsonv.String
		case registry.TypeBoolean:
			return v.Kind == jsonv.Bool
		case registry.TypeInteger:
			if v.Kind != jsonv.Number {
				return false
			}
			_, err := strconv.ParseInt(v.S, 10, 64)
			return err == nil
		case registry.TypeNumber:
			return v.Kind == jsonv.Number
		}
		return false
	}
	if v.Kind != s.kind {
		return false
	}
	switch s.kind {
	case jsonv.String:
		return s.text.match(v.S)
	case jsonv.Object:
		matched := make([]bool, len(s.keys))
		for _, m := range v.O {
			i := indexOf(s.keys, m.Key)
			if i < 0 || !s.vals[i].match(&m.Value) {
				return false
			}
			matched[i] = true
		}
		for i, ok := range matched {
			if !ok && !s.vals[i].optional {
				return false
			}
		}
		return true
	case jsonv.Array:
		// The executor leaves out elements naming an absent arg, so the
		// body is the template's elements in order with optional ones
		// possibly missing: memoized matching over (element, position).
		n, m := len(s.elems), len(v.A)
		memo := make([]int8, (n+1)*(m+1)) // 0 unknown, 1 yes, 2 no
		var fits func(i, j int) bool
		fits = func(i, j int) bool {
			if i == n {
				return j == m
			}
			k := i*(m+1) + j
			if memo[k] != 0 {
				return memo[k] == 1
			}
			ok := (j < m && s.elems[i].match(&v.A[j]) && fits(i+1, j+1)) ||
				(s.elems[i].optional && fits(i+1, j))
			memo[k] = 2
			if ok {
				memo[k] = 1
			}
			return ok
		}
		return fits(0, 0)
	}
	return bytes.Equal(jsonv.Append(nil, *v), s.literal)
}

func indexOf(keys []string, k string) int {
	for i, x := range keys {
		if x == k {
			return i
		}
	}
	return -1
}

// isExecutorByte reports whether c may appear in a percent-encoded value
// the executor renders: RFC 3986 unreserved characters and "%" (of %XX).
// The executor encodes every other byte, so anything else in an
// argument's place is not its output.
func isExecutorByte(c byte) bool {
	return isUnreserved(c) || c == '%'
}
