package fakeapi

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A small GraphQL executable-document parser, enough for the Linear fake:
// one or more operations (query or mutation, with variables), fields with
// aliases and arguments, nested selection sets. Fragments and directives
// are refused with a clear error, never silently ignored.

type gqlDocument struct {
	ops []*gqlOperation
}

type gqlOperation struct {
	kind string // "query" or "mutation"
	name string
	vars []gqlVarDef
	sel  []*gqlField
}

type gqlVarDef struct {
	name    string
	typ     gqlType
	defVal  *gqlValue
	defLine int
}

type gqlType struct {
	name    string   // named type, or "" for a list
	elem    *gqlType // list element
	nonNull bool
}

func (t gqlType) String() string {
	s := t.name
	if t.elem != nil {
		s = "[" + t.elem.String() + "]"
	}
	if t.nonNull {
		s += "!"
	}
	return s
}

type gqlField struct {
	alias string
	name  string
	args  []gqlArg
	sel   []*gqlField // nil: a leaf
	line  int
	col   int
}

func (f *gqlField) key() string {
	if f.alias != "" {
		return f.alias
	}
	return f.name
}

type gqlArg struct {
	name string
	val  *gqlValue
}

// gqlValue is a literal or a variable reference.
type gqlValue struct {
	kind   string // "var", "int", "float", "string", "bool", "null", "enum", "list", "object"
	str    string // var name, literal text, enum name
	list   []*gqlValue
	fields []gqlArg // object members, in order
}

type gqlToken struct {
	kind string // "punct", "name", "int", "float", "string", "eof"
	text string
	line int
	col  int
}

type gqlLexer struct {
	src  string
	pos  int
	line int
	col  int
}

func (l *gqlLexer) errorf(format string, a ...any) error {
	return fmt.Errorf("Syntax Error: "+format+" (line %d, column %d)", append(a, l.line, l.col)...)
}

func (l *gqlLexer) advance(n int) {
	for i := 0; i < n && l.pos < len(l.src); i++ {
		if l.src[l.pos] == '\n' {
			l.line++
			l.col = 1
		} else {
			l.col++
		}
		l.pos++
	}
}

func (l *gqlLexer) next() (gqlToken, error) {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',':
			l.advance(1)
		case c == '#':
			for l.pos < len(l.src) && l.src[l.pos] != '\n' {
				l.advance(1)
			}
		default:
			goto tok
		}
	}
	return gqlToken{kind: "eof", line: l.line, col: l.col}, nil
tok:
	start, line, col := l.pos, l.line, l.col
	c := l.src[l.pos]
	switch {
	case strings.ContainsRune("!$():=@[]{}|&", rune(c)):
		l.advance(1)
		return gqlToken{"punct", string(c), line, col}, nil
	case c == '.':
		if strings.HasPrefix(l.src[l.pos:], "...") {
			l.advance(3)
			return gqlToken{"punct", "...", line, col}, nil
		}
		return gqlToken{}, l.errorf("Unexpected \".\"")
	case c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
		for l.pos < len(l.src) {
			c := l.src[l.pos]
			if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
				break
			}
			l.advance(1)
		}
		return gqlToken{"name", l.src[start:l.pos], line, col}, nil
	case c == '-' || c >= '0' && c <= '9':
		l.advance(1)
		kind := "int"
		for l.pos < len(l.src) {
			c := l.src[l.pos]
			if c == '.' || c == 'e' || c == 'E' || c == '+' || (c == '-' && kind == "float") {
				kind = "float"
			} else if !(c >= '0' && c <= '9') {
				break
			}
			l.advance(1)
		}
		text := l.src[start:l.pos]
		if kind == "int" {
			if _, err := strconv.ParseInt(text, 10, 64); err != nil {
				return gqlToken{}, l.errorf("Invalid number %q", text)
			}
		} else if _, err := strconv.ParseFloat(text, 64); err != nil {
			return gqlToken{}, l.errorf("Invalid number %q", text)
		}
		return gqlToken{kind, text, line, col}, nil
	case c == '"':
		if strings.HasPrefix(l.src[l.pos:], `"""`) {
			end := strings.Index(l.src[l.pos+3:], `"""`)
			if end < 0 {
				return gqlToken{}, l.errorf("Unterminated string")
			}
			text := l.src[l.pos+3 : l.pos+3+end]
			l.advance(end + 6)
			return gqlToken{"string", strings.TrimSpace(text), line, col}, nil
		}
		var b strings.Builder
		l.advance(1)
		for {
			if l.pos >= len(l.src) || l.src[l.pos] == '\n' {
				return gqlToken{}, l.errorf("Unterminated string")
			}
			c := l.src[l.pos]
			if c == '"' {
				l.advance(1)
				return gqlToken{"string", b.String(), line, col}, nil
			}
			if c == '\\' && l.pos+1 < len(l.src) {
				e := l.src[l.pos+1]
				switch e {
				case '"', '\\', '/':
					b.WriteByte(e)
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'r':
					b.WriteByte('\r')
				case 'b':
					b.WriteByte('\b')
				case 'f':
					b.WriteByte('\f')
				case 'u':
					if l.pos+6 > len(l.src) {
						return gqlToken{}, l.errorf("Invalid escape")
					}
					n, err := strconv.ParseUint(l.src[l.pos+2:l.pos+6], 16, 32)
					if err != nil {
						return gqlToken{}, l.errorf("Invalid escape")
					}
					b.WriteRune(rune(n))
					l.advance(4)
				default:
					return gqlToken{}, l.errorf("Invalid escape \\%c", e)
				}
				l.advance(2)
				continue
			}
			r, size := utf8.DecodeRuneInString(l.src[l.pos:])
			b.WriteRune(r)
			l.advance(size)
		}
	}
	return gqlToken{}, l.errorf("Unexpected character %q", rune(c))
}

type gqlParser struct {
	lex gqlLexer
	tok gqlToken
}

func parseGraphQL(src string) (*gqlDocument, error) {
	p := &gqlParser{lex: gqlLexer{src: src, line: 1, col: 1}}
	if err := p.read(); err != nil {
		return nil, err
	}
	doc := &gqlDocument{}
	for p.tok.kind != "eof" {
		op, err := p.operation()
		if err != nil {
			return nil, err
		}
		doc.ops = append(doc.ops, op)
	}
	if len(doc.ops) == 0 {
		return nil, fmt.Errorf("Syntax Error: Unexpected <EOF>.")
	}
	return doc, nil
}

func (p *gqlParser) read() error {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *gqlParser) errorf(format string, a ...any) error {
	return fmt.Errorf("Syntax Error: "+format+" (line %d, column %d)", append(a, p.tok.line, p.tok.col)...)
}

func (p *gqlParser) describe() string {
	if p.tok.kind == "eof" {
		return "<EOF>"
	}
	return fmt.Sprintf("%q", p.tok.text)
}

func (p *gqlParser) expect(punct string) error {
	if p.tok.kind != "punct" || p.tok.text != punct {
		return p.errorf("Expected %q, found %s.", punct, p.describe())
	}
	return p.read()
}

func (p *gqlParser) is(punct string) bool { return p.tok.kind == "punct" && p.tok.text == punct }

func (p *gqlParser) name() (string, error) {
	if p.tok.kind != "name" {
		return "", p.errorf("Expected Name, found %s.", p.describe())
	}
	n := p.tok.text
	return n, p.read()
}

func (p *gqlParser) operation() (*gqlOperation, error) {
	op := &gqlOperation{kind: "query"}
	if p.is("{") {
		sel, err := p.selectionSet()
		op.sel = sel
		return op, err
	}
	if p.tok.kind != "name" {
		return nil, p.errorf("Unexpected %s.", p.describe())
	}
	switch p.tok.text {
	case "query", "mutation":
		op.kind = p.tok.text
	case "subscription":
		return nil, p.errorf("Subscriptions are not supported by this fake.")
	case "fragment":
		return nil, p.errorf("Fragments are not supported by this fake.")
	default:
		return nil, p.errorf("Unexpected Name %q.", p.tok.text)
	}
	if err := p.read(); err != nil {
		return nil, err
	}
	if p.tok.kind == "name" {
		op.name = p.tok.text
		if err := p.read(); err != nil {
			return nil, err
		}
	}
	if p.is("(") {
		if err := p.read(); err != nil {
			return nil, err
		}
		for !p.is(")") {
			line := p.tok.line
			if err := p.expect("$"); err != nil {
				return nil, err
			}
			n, err := p.name()
			if err != nil {
				return nil, err
			}
			if err := p.expect(":"); err != nil {
				return nil, err
			}
			t, err := p.typeRef()
			if err != nil {
				return nil, err
			}
			vd := gqlVarDef{name: n, typ: t, defLine: line}
			if p.is("=") {
				if err := p.read(); err != nil {
					return nil, err
				}
				v, err := p.value(true)
				if err != nil {
					return nil, err
				}
				vd.defVal = v
			}
			op.vars = append(op.vars, vd)
		}
		if err := p.read(); err != nil {
			return nil, err
		}
	}
	if p.is("@") {
		return nil, p.errorf("Directives are not supported by this fake.")
	}
	sel, err := p.selectionSet()
	op.sel = sel
	return op, err
}

func (p *gqlParser) typeRef() (gqlType, error) {
	var t gqlType
	if p.is("[") {
		if err := p.read(); err != nil {
			return t, err
		}
		elem, err := p.typeRef()
		if err != nil {
			return t, err
		}
		if err := p.expect("]"); err != nil {
			return t, err
		}
		t.elem = &elem
	} else {
		n, err := p.name()
		if err != nil {
			return t, err
		}
		t.name = n
	}
	if p.is("!") {
		t.nonNull = true
		if err := p.read(); err != nil {
			return t, err
		}
	}
	return t, nil
}

func (p *gqlParser) selectionSet() ([]*gqlField, error) {
	if err := p.expect("{"); err != nil {
		return nil, err
	}
	var out []*gqlField
	for !p.is("}") {
		if p.is("...") {
			return nil, p.errorf("Fragments are not supported by this fake.")
		}
		f := &gqlField{line: p.tok.line, col: p.tok.col}
		n, err := p.name()
		if err != nil {
			return nil, err
		}
		f.name = n
		if p.is(":") {
			if err := p.read(); err != nil {
				return nil, err
			}
			f.alias = n
			if f.name, err = p.name(); err != nil {
				return nil, err
			}
		}
		if p.is("(") {
			if f.args, err = p.arguments(false); err != nil {
				return nil, err
			}
		}
		if p.is("@") {
			return nil, p.errorf("Directives are not supported by this fake.")
		}
		if p.is("{") {
			if f.sel, err = p.selectionSet(); err != nil {
				return nil, err
			}
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, p.errorf("Expected Name, found \"}\".")
	}
	return out, p.read()
}

func (p *gqlParser) arguments(constant bool) ([]gqlArg, error) {
	if err := p.expect("("); err != nil {
		return nil, err
	}
	var out []gqlArg
	for !p.is(")") {
		n, err := p.name()
		if err != nil {
			return nil, err
		}
		if err := p.expect(":"); err != nil {
			return nil, err
		}
		v, err := p.value(constant)
		if err != nil {
			return nil, err
		}
		out = append(out, gqlArg{n, v})
	}
	return out, p.read()
}

func (p *gqlParser) value(constant bool) (*gqlValue, error) {
	t := p.tok
	switch {
	case p.is("$"):
		if constant {
			return nil, p.errorf("Unexpected variable in a constant value.")
		}
		if err := p.read(); err != nil {
			return nil, err
		}
		n, err := p.name()
		return &gqlValue{kind: "var", str: n}, err
	case p.is("["):
		if err := p.read(); err != nil {
			return nil, err
		}
		v := &gqlValue{kind: "list"}
		for !p.is("]") {
			e, err := p.value(constant)
			if err != nil {
				return nil, err
			}
			v.list = append(v.list, e)
		}
		return v, p.read()
	case p.is("{"):
		if err := p.read(); err != nil {
			return nil, err
		}
		v := &gqlValue{kind: "object"}
		for !p.is("}") {
			n, err := p.name()
			if err != nil {
				return nil, err
			}
			if err := p.expect(":"); err != nil {
				return nil, err
			}
			e, err := p.value(constant)
			if err != nil {
				return nil, err
			}
			v.fields = append(v.fields, gqlArg{n, e})
		}
		return v, p.read()
	case t.kind == "int" || t.kind == "float" || t.kind == "string":
		return &gqlValue{kind: t.kind, str: t.text}, p.read()
	case t.kind == "name":
		v := &gqlValue{kind: "enum", str: t.text}
		switch t.text {
		case "true", "false":
			v.kind = "bool"
		case "null":
			v.kind = "null"
		}
		return v, p.read()
	}
	return nil, p.errorf("Unexpected %s.", p.describe())
}
