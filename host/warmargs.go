package host

import (
	"encoding/json"
	"regexp/syntax"
	"strings"

	"github.com/elevenmessenger/pinned/registry"
)

// warmArgs returns args for an op's warm-up run that its declaration
// accepts (bindArgs checks them), so the run renders a request as a
// caller's would and the template and page classes see that path: each
// required arg's default, else the smallest value its declaration allows
// (sampleArg). They come from the registry alone. "{}" when no such args
// are found.
func warmArgs(p *prepared) []byte {
	args := map[string]any{}
	for name, a := range p.op.Args {
		if !a.Required {
			continue
		}
		v, ok := sampleArg(a)
		if !ok {
			return []byte("{}")
		}
		args[name] = v
	}
	b, err := json.Marshal(args) // keys sorted: the same input at every start
	if err != nil {
		return []byte("{}")
	}
	if _, _, herr := p.bindArgs(b, DefaultMaxArgsBytes); herr != nil {
		return []byte("{}")
	}
	return b
}

// sampleArg is a value a declares valid: its default, the first of its
// enum, the bound nearest 1 of a number, false, a string its pattern
// matches (samplePattern) or "a", an array of one such item.
func sampleArg(a *registry.Arg) (any, bool) {
	if len(a.Default) > 0 {
		return json.RawMessage(a.Default), true
	}
	switch a.Type {
	case registry.TypeString:
		switch {
		case len(a.Enum) > 0:
			return a.Enum[0], true
		case a.Pattern != "":
			return samplePattern(a.Pattern)
		}
		return "a", true
	case registry.TypeInteger, registry.TypeNumber:
		n := 1.0
		if a.Min != nil && n < *a.Min {
			n = *a.Min
		}
		if a.Max != nil && n > *a.Max {
			n = *a.Max
		}
		return n, true
	case registry.TypeBoolean:
		return false, true
	case registry.TypeArray:
		if a.Items == nil {
			return nil, false
		}
		v, ok := sampleArg(a.Items)
		return []any{v}, ok
	}
	return nil, false
}

// classRune picks a rune of a character class (ranges as lo, hi pairs):
// a letter or digit where the class has one, else its first printable
// rune past the space.
func classRune(ranges []rune) (rune, bool) {
	in := func(c rune) bool {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= c && c <= ranges[i+1] {
				return true
			}
		}
		return false
	}
	for _, c := range "a0A" {
		if in(c) {
			return c, true
		}
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		if c := max(ranges[i], '!'); c <= ranges[i+1] && c != 0x7f {
			return c, true
		}
	}
	return 0, false
}

// samplePattern is a short string the RE2 expression pattern matches:
// the first alternative, each repeat its least times, each class a rune
// of it (classRune).
func samplePattern(pattern string) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	var walk func(*syntax.Regexp) bool
	walk = func(r *syntax.Regexp) bool {
		switch r.Op {
		case syntax.OpLiteral:
			b.WriteString(string(r.Rune))
		case syntax.OpCharClass:
			c, ok := classRune(r.Rune)
			if !ok {
				return false
			}
			b.WriteRune(c)
		case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
			b.WriteByte('a')
		case syntax.OpStar, syntax.OpQuest, syntax.OpEmptyMatch,
			syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		case syntax.OpPlus:
			return walk(r.Sub[0])
		case syntax.OpRepeat:
			for range r.Min {
				if !walk(r.Sub[0]) {
					return false
				}
			}
		case syntax.OpCapture:
			return walk(r.Sub[0])
		case syntax.OpConcat:
			for _, s := range r.Sub {
				if !walk(s) {
					return false
				}
			}
		case syntax.OpAlternate:
			return walk(r.Sub[0])
		default:
			return false
		}
		return true
	}
	if !walk(re.Simplify()) {
		return "", false
	}
	return b.String(), true
}
