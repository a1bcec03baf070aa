// Package argrules is the one implementation of the argument rules of an
// op's declarations (docs/MANIFEST.md, "args"): type, required, default,
// enum, pattern, min, max, max_length, an array's items, max_items and
// delimiter, undeclared keys, and what a value
// may be where the op puts it (no control character, no empty, "." or ".."
// path segment). Both sides of the sandbox import it: the host
// (host.Engine, host.ValidateArgs) validates the caller's args before any
// guest runs, and the guest executor (guest/executor) reads them with the
// same rules before it renders, so a guest that skips validation gains
// nothing (docs/RATIONALE.md, "Why does the host verify every request if
// the guest renders it?"). Patterns are compiled by the caller's Compiler:
// the host's is RE2 (regexp); the guest's, GuestPatterns, accepts every
// string, so no regular expression engine is compiled into the guest
// (docs/RATIONALE.md, "Why does the guest not match patterns?").
//
// It is compiled into the guest, so it stays small and imports only
// internal/abi, internal/jsonv and the standard library's strconv,
// strings and unicode/utf8; it must never import regexp, the registry,
// the host or anything with reflection. Declarations are read from the
// op spec JSON the host builds from the manifest (docs/ABI.md, "The op
// input").
package argrules

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/elevenmessenger/pinned/internal/abi"
	"github.com/elevenmessenger/pinned/internal/jsonv"
)

// Reject says which argument broke which rule (an abi.Reject* reason).
// Arg is empty for abi.RejectSyntax.
type Reject struct {
	Reason int32
	Arg    string
}

// DeclError reports a declaration the rules cannot use. Declarations come
// from the embedded registry (checked by its loader), so this means a
// host bug, never a caller mistake.
type DeclError struct{ Msg string }

func (e *DeclError) Error() string { return "argrules: bad declaration: " + e.Msg }

func bad(msg string) error { return &DeclError{Msg: msg} }

// DefaultMaxLength is registry.DefaultMaxLength (code points;
// TestDefaultMaxLengthIsTheRegistrys).
const DefaultMaxLength = 4096

// MaxSafeInteger is the largest integer a float64 holds exactly (2^53-1);
// integer args are bounded by it so every consumer reads the same value.
const MaxSafeInteger = 1<<53 - 1

// MaxArgs bounds the args an op may declare (the loader allows 32).
const MaxArgs = 64

// DefaultMaxItems is registry.DefaultMaxItems: the most values an array
// arg that declares no max_items may hold.
const DefaultMaxItems = 100

// Arg is one compiled declaration.
type Arg struct {
	Name      string
	Type      string // "string", "integer", "number", "boolean", "array"
	Required  bool
	Default   *Value // the default, validated once; nil when none
	Enum      []string
	Pattern   Matcher // nil when none
	Min, Max  *float64
	MaxLength int
	// Items declares each value of an array arg (a scalar type); MaxItems
	// bounds its length; Delim is the byte that joins its values in one
	// query value (',', ' ' or '|'), 0 when each value is its own pair
	// (OpenAPI explode) or it goes in a JSON body.
	Items    *Arg
	MaxItems int
	Delim    byte
}

// Value is one validated argument.
type Value struct {
	Set   bool       // present or defaulted
	Kind  jsonv.Kind // jsonv.String, jsonv.Number or jsonv.Bool once Set
	S     string     // strings
	I     int64      // integers
	F     float64    // numbers (and integers, for bounds)
	IsInt bool       // a number that renders as an integer
	B     bool       // booleans
	A     []Value    // arrays: the values, each Set, in the caller's order
}

// AppendText appends the value as text: a string as is, an integer in
// decimal, a number in the shortest form that round-trips, a boolean as
// true or false, an array as a JSON array of its values (strings quoted
// and escaped, so every value and its bounds show: ["bug", "ui"]).
func (v Value) AppendText(dst []byte) []byte {
	switch v.Kind {
	case jsonv.Array:
		dst = append(dst, '[')
		for i, e := range v.A {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			if e.Kind == jsonv.String {
				dst = jsonv.AppendString(dst, e.S)
			} else {
				dst = e.AppendText(dst)
			}
		}
		return append(dst, ']')
	case jsonv.Bool:
		if v.B {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case jsonv.Number:
		if v.IsInt {
			return strconv.AppendInt(dst, v.I, 10)
		}
		return strconv.AppendFloat(dst, v.F, 'g', -1, 64)
	}
	return append(dst, v.S...)
}

// Text is AppendText as a string.
func (v Value) Text() string {
	if v.Kind == jsonv.String {
		return v.S
	}
	var b [32]byte
	return string(v.AppendText(b[:0]))
}

// PathSegmentOK reports whether a value's text may fill a whole path
// segment: not empty, not "." or ".." (RFC 3986 section 3.3 dot segments,
// which a server would resolve to another path). The value is
// percent-encoded afterwards, so "/" is no concern here.
func PathSegmentOK(text string) bool {
	return text != "" && text != "." && text != ".."
}

// A Matcher is a compiled pattern: it reports whether s matches it.
// *regexp.Regexp is one.
type Matcher interface {
	MatchString(s string) bool
}

// A Compiler compiles an arg's pattern (RE2 syntax, as the registry's
// loader checked it) for Decode and DecodeAll, or returns an error that
// says why it cannot.
type Compiler func(expr string) (Matcher, error)

// GuestPatterns is the guest's Compiler: every pattern compiles to a
// Matcher that accepts every string. The host matched each pattern
// before the guest ran (docs/ABI.md, "Life of an op", step 3) and binds
// the request the guest may send to the args it validated (docs/SECURITY.md,
// rule 2b), so matching again in the guest adds nothing to what is sent,
// while a regular expression engine is a fifth of the guest's module
// (docs/RATIONALE.md, "Why does the guest not match patterns?"). Only
// the guest may use it.
func GuestPatterns(string) (Matcher, error) { return anyString{}, nil }

type anyString struct{}

func (anyString) MatchString(string) bool { return true }

// Decode compiles one declaration from its op spec JSON (the object the
// host writes for registry.Arg: type, required, default, enum, pattern,
// min, max, max_length, and for an array items, max_items, style and
// explode; other members are ignored), its pattern with compile. The
// default, if any, must satisfy the declaration. A declaration with a
// pattern and a nil compile is an error (*DeclError): a pattern is never
// silently left unchecked.
func Decode(name string, v *jsonv.Value, compile Compiler) (*Arg, error) {
	return decode(name, v, true, compile)
}

func decode(name string, v *jsonv.Value, arrayOK bool, compile Compiler) (*Arg, error) {
	if v.Kind != jsonv.Object {
		return nil, bad("op.args." + name + " must be an object")
	}
	a := &Arg{Name: name, MaxLength: DefaultMaxLength, MaxItems: DefaultMaxItems}
	var def *jsonv.Value
	style, explode := "form", true
	for _, m := range v.O {
		mv := m.Value
		switch m.Key {
		case "items":
			if !arrayOK {
				return nil, bad("op.args." + name + ".items: an array's items are not arrays")
			}
			it, err := decode(name, &m.Value, false, compile)
			if err != nil {
				return nil, err
			}
			a.Items = it
		case "max_items":
			n, err := strconv.Atoi(mv.S)
			if err != nil || n <= 0 {
				return nil, bad("op.args." + name + ".max_items")
			}
			a.MaxItems = n
		case "style":
			style = mv.S
		case "explode":
			explode = mv.Kind != jsonv.Bool || mv.B
		case "type":
			a.Type = mv.S
		case "required":
			a.Required = mv.Kind == jsonv.Bool && mv.B
		case "default":
			if mv.Kind != jsonv.Null {
				d := mv
				def = &d
			}
		case "enum":
			for _, e := range mv.A {
				a.Enum = append(a.Enum, e.S)
			}
		case "pattern":
			if mv.S != "" {
				if compile == nil {
					return nil, bad("op.args." + name + ".pattern: no pattern compiler")
				}
				re, err := compile(mv.S)
				if err != nil {
					return nil, bad("op.args." + name + ".pattern: " + err.Error())
				}
				if re == nil {
					return nil, bad("op.args." + name + ".pattern: the compiler returned no matcher")
				}
				a.Pattern = re
			}
		case "min", "max":
			if mv.Kind != jsonv.Number {
				continue
			}
			f, err := strconv.ParseFloat(mv.S, 64)
			if err != nil {
				return nil, bad("op.args." + name + "." + m.Key)
			}
			if m.Key == "min" {
				a.Min = &f
			} else {
				a.Max = &f
			}
		case "max_length":
			n, err := strconv.Atoi(mv.S)
			if err != nil || n <= 0 {
				return nil, bad("op.args." + name + ".max_length")
			}
			a.MaxLength = n
		}
	}
	switch a.Type {
	case "string", "integer", "number", "boolean":
		if a.Items != nil {
			return nil, bad("op.args." + name + ".items on a " + a.Type)
		}
	case "array":
		if !arrayOK || a.Items == nil || def != nil {
			return nil, bad("op.args." + name + ": an array needs items of a scalar type and takes no default")
		}
		if !explode {
			switch style {
			case "form":
				a.Delim = ','
			case "spaceDelimited":
				a.Delim = ' '
			case "pipeDelimited":
				a.Delim = '|'
			default:
				return nil, bad("op.args." + name + ".style " + strconv.Quote(style))
			}
		}
	default:
		return nil, bad("op.args." + name + ".type " + strconv.Quote(a.Type))
	}
	if def != nil {
		dv, reason := a.CheckRaw(jsonv.Append(nil, *def))
		if reason != 0 {
			return nil, bad("op.args." + name + ".default does not satisfy the declaration")
		}
		a.Default = &dv
	}
	return a, nil
}

// DecodeAll compiles the declarations of an op spec's "args" object (nil
// or null for none), in the spec's order, with Decode.
func DecodeAll(v *jsonv.Value, compile Compiler) ([]*Arg, error) {
	if v == nil || v.Kind == jsonv.Null {
		return nil, nil
	}
	if v.Kind != jsonv.Object {
		return nil, bad("op.args must be an object")
	}
	if len(v.O) > MaxArgs {
		return nil, bad("more than " + strconv.Itoa(MaxArgs) + " args")
	}
	out := make([]*Arg, 0, len(v.O))
	for i := range v.O {
		a, err := Decode(v.O[i].Key, &v.O[i].Value, compile)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// Index returns the position of the arg called name in args, or -1.
func Index(args []*Arg, name string) int {
	for i, a := range args {
		if a.Name == name {
			return i
		}
	}
	return -1
}

func indexBytes(args []*Arg, name []byte) int {
	for i, a := range args {
		if a.Name == string(name) {
			return i
		}
	}
	return -1
}

// Validate checks the caller's raw args JSON against the declarations and
// returns the effective values by arg index (defaults applied; absent
// optional args not Set). It reads the args in two passes without
// building a tree: the first checks the syntax (a strict JSON object: no
// duplicate key, valid UTF-8, nothing after it) and that every key is
// declared, the second checks each declared arg's value in the order of
// the declarations, so the first problem reported does not depend on the
// caller's key order. raw must be valid JSON text as far as the object
// goes; anything else is RejectSyntax.
func Validate(args []*Arg, raw []byte) ([]Value, *Reject) {
	return ValidateInto(nil, args, raw)
}

// ValidateInto is Validate writing the values into dst when it has room
// (a caller's buffer spares an allocation per op).
func ValidateInto(dst []Value, args []*Arg, raw []byte) ([]Value, *Reject) {
	if len(args) > MaxArgs {
		return nil, &Reject{Reason: abi.RejectSyntax}
	}
	var at [MaxArgs]int32 // offset of each arg's value in raw, +1; 0 = absent
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, &Reject{Reason: abi.RejectSyntax}
	}
	i = skipWS(raw, i+1)
	var undeclared *Reject
	if i < len(raw) && raw[i] == '}' {
		i++
	} else {
		for {
			n := jsonv.ScanString(raw[i:])
			if n == 0 {
				return nil, &Reject{Reason: abi.RejectSyntax}
			}
			key := raw[i+1 : i+n-1]
			if bytes.IndexByte(key, '\\') >= 0 {
				v, err := jsonv.Parse(raw[i : i+n])
				if err != nil {
					return nil, &Reject{Reason: abi.RejectSyntax}
				}
				key = []byte(v.S)
			}
			idx := indexBytes(args, key)
			i = skipWS(raw, i+n)
			if i >= len(raw) || raw[i] != ':' {
				return nil, &Reject{Reason: abi.RejectSyntax}
			}
			i = skipWS(raw, i+1)
			vn := jsonv.Skip(raw[i:])
			if vn == 0 {
				return nil, &Reject{Reason: abi.RejectSyntax}
			}
			switch {
			case idx < 0:
				if undeclared == nil {
					undeclared = &Reject{Reason: abi.RejectUndeclared, Arg: ClipName(string(key))}
				}
			case at[idx] != 0:
				return nil, &Reject{Reason: abi.RejectSyntax} // duplicate key
			default:
				at[idx] = int32(i) + 1
			}
			i = skipWS(raw, i+vn)
			if i >= len(raw) {
				return nil, &Reject{Reason: abi.RejectSyntax}
			}
			if raw[i] == '}' {
				i++
				break
			}
			if raw[i] != ',' {
				return nil, &Reject{Reason: abi.RejectSyntax}
			}
			i = skipWS(raw, i+1)
		}
	}
	if skipWS(raw, i) != len(raw) {
		return nil, &Reject{Reason: abi.RejectSyntax}
	}
	if undeclared != nil {
		return nil, undeclared
	}
	var vals []Value
	if cap(dst) >= len(args) {
		vals = dst[:len(args)]
		clear(vals)
	} else {
		vals = make([]Value, len(args))
	}
	for k, a := range args {
		if at[k] == 0 {
			if a.Required {
				return nil, &Reject{Reason: abi.RejectMissing, Arg: a.Name}
			}
			if a.Default != nil {
				vals[k] = *a.Default
			}
			continue
		}
		val, reason := a.CheckRaw(raw[at[k]-1:])
		if reason != 0 {
			return nil, &Reject{Reason: reason, Arg: a.Name}
		}
		vals[k] = val
	}
	return vals, nil
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// CheckRaw validates the (syntactically valid) JSON value at the start of
// b against the declaration and returns it, or a reject reason.
func (a *Arg) CheckRaw(b []byte) (Value, int32) {
	switch b[0] {
	case '"':
		n := jsonv.ScanString(b)
		if n == 0 {
			return Value{}, abi.RejectType
		}
		var s string
		if bytes.IndexByte(b[1:n-1], '\\') < 0 {
			s = string(b[1 : n-1])
		} else {
			v, err := jsonv.Parse(b[:n])
			if err != nil {
				return Value{}, abi.RejectType
			}
			s = v.S
		}
		return a.Check(Value{Kind: jsonv.String, S: s})
	case 't', 'f':
		return a.Check(Value{Kind: jsonv.Bool, B: b[0] == 't'})
	case 'n':
		return a.Check(Value{Kind: jsonv.Null})
	case '{':
		return a.Check(Value{Kind: jsonv.Object})
	case '[':
		if a.Type != "array" {
			return Value{}, abi.RejectType
		}
		return a.checkArray(b)
	}
	n := jsonv.ScanNumber(b)
	if n == 0 {
		return Value{}, abi.RejectType
	}
	v := Value{Kind: jsonv.Number}
	if i, ok := plainInt(b[:n]); ok {
		v.I, v.F, v.IsInt = i, float64(i), true
	} else {
		f, err := strconv.ParseFloat(string(b[:n]), 64)
		if err != nil { // out of float64 range
			return Value{}, abi.RejectType
		}
		v.F = f
		// An integer only if the literal's decimal value is one: float64
		// rounding makes 100.0000000000000000001 and 1e-400 integers
		// (100, 0) that the caller's text does not say (red team,
		// TestIntegerArgOnlyExactLiteral).
		if f == float64(int64(f)) && f <= MaxSafeInteger && f >= -MaxSafeInteger && integralText(b[:n]) {
			v.I, v.IsInt = int64(f), true
		}
	}
	return a.Check(v)
}

// integralText reports whether a JSON number literal (RFC 8259 grammar,
// already scanned) denotes an integer exactly: no non-zero digit after
// the decimal point once the exponent is applied.
func integralText(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	var digits []byte
	var buf [40]byte
	digits = buf[:0]
	point := -1
	i := 0
	for ; i < len(b) && b[i] != 'e' && b[i] != 'E'; i++ {
		if b[i] == '.' {
			point = len(digits)
			continue
		}
		digits = append(digits, b[i])
	}
	if point < 0 {
		point = len(digits)
	}
	if i < len(b) { // the exponent
		exp, err := strconv.Atoi(string(b[i+1:]))
		if err != nil {
			return false // out of int range: not a value float64 holds as an integer
		}
		if exp > len(digits) {
			exp = len(digits) // every digit is before the point
		}
		if exp < -len(digits) {
			exp = -len(digits)
		}
		point += exp
	}
	if point < 0 {
		point = 0
	}
	for _, c := range digits[min(point, len(digits)):] {
		if c != '0' {
			return false
		}
	}
	return true
}

// plainInt parses an integer literal of at most 16 digits (no fraction or
// exponent) without allocating.
func plainInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// ClipName makes a caller's undeclared arg name fit abi.MaxNameBytes and
// the host's printable check: control characters become "?", and the
// name is cut on a UTF-8 boundary. The host applies it too, to check that
// a rejected name is one the caller sent.
func ClipName(s string) string {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError {
			r = '?'
		}
		if len(out)+utf8.RuneLen(r) > abi.MaxNameBytes {
			break
		}
		out = utf8.AppendRune(out, r)
	}
	if len(out) == 0 {
		return "?"
	}
	return string(out)
}

// checkArray validates the (syntactically valid) JSON array at the start
// of b: at most MaxItems values, each satisfying Items; with a delimiter,
// no value whose text is empty or holds it (the provider would split it,
// or read no value, where the caller meant one).
func (a *Arg) checkArray(b []byte) (Value, int32) {
	v := Value{Kind: jsonv.Array}
	i := skipWS(b, 1)
	if i < len(b) && b[i] == ']' {
		return a.Check(v)
	}
	for i < len(b) {
		n := jsonv.Skip(b[i:])
		if n == 0 {
			return Value{}, abi.RejectType
		}
		if len(v.A) == a.MaxItems {
			return Value{}, abi.RejectLength
		}
		if b[i] == '[' || b[i] == '{' {
			return Value{}, abi.RejectType
		}
		e, reason := a.Items.CheckRaw(b[i : i+n])
		if reason != 0 {
			return Value{}, reason
		}
		v.A = append(v.A, e)
		i = skipWS(b, i+n)
		if i < len(b) && b[i] == ']' {
			return a.Check(v)
		}
		if i >= len(b) || b[i] != ',' {
			return Value{}, abi.RejectType
		}
		i = skipWS(b, i+1)
	}
	return Value{}, abi.RejectType
}

// Check validates one value against its declaration and returns it
// canonical (marked Set), or a reject reason. An array's values must
// already be checked against Items (checkArray).
func (a *Arg) Check(v Value) (Value, int32) {
	switch a.Type {
	case "array":
		if v.Kind != jsonv.Array {
			return Value{}, abi.RejectType
		}
		if len(v.A) > a.MaxItems {
			return Value{}, abi.RejectLength
		}
		if a.Delim != 0 {
			for _, e := range v.A {
				t := e.Text()
				if t == "" || strings.IndexByte(t, a.Delim) >= 0 {
					return Value{}, abi.RejectValue
				}
			}
		}
	case "string":
		if v.Kind != jsonv.String {
			return Value{}, abi.RejectType
		}
		s := v.S
		for i := 0; i < len(s); i++ {
			if c := s[i]; (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
				return Value{}, abi.RejectValue
			}
		}
		if len(s) > a.MaxLength && utf8.RuneCountInString(s) > a.MaxLength {
			return Value{}, abi.RejectLength
		}
		if len(a.Enum) > 0 {
			found := false
			for _, e := range a.Enum {
				if e == s {
					found = true
					break
				}
			}
			if !found {
				return Value{}, abi.RejectEnum
			}
		}
		if a.Pattern != nil && !a.Pattern.MatchString(s) {
			return Value{}, abi.RejectPattern
		}
	case "integer", "number":
		if v.Kind != jsonv.Number {
			return Value{}, abi.RejectType
		}
		if a.Type == "integer" {
			if !v.IsInt || v.I > MaxSafeInteger || v.I < -MaxSafeInteger {
				return Value{}, abi.RejectType
			}
		} else {
			v.IsInt = false // numbers render in float form
		}
		if a.Min != nil && v.F < *a.Min {
			return Value{}, abi.RejectMin
		}
		if a.Max != nil && v.F > *a.Max {
			return Value{}, abi.RejectMax
		}
	case "boolean":
		if v.Kind != jsonv.Bool {
			return Value{}, abi.RejectType
		}
	default:
		return Value{}, abi.RejectType
	}
	v.Set = true
	return v, 0
}
