// Package executor turns an op and its arguments into an HTTP request. It
// is the logic of the guest: compiled to wasm (guest/wasm) it runs inside
// the sandbox; compiled natively it is the baseline the sandbox's overhead
// is measured against, and the reference the host's own checks are tested
// with.
//
// The executor is deliberately small and dependency-free (jsonv, regexp,
// strconv, unicode/utf8): every package it imports grows the wasm module
// and its per-instance cost.
//
// Input and output encodings are specified in docs/ABI.md ("The op input",
// "The request").
package executor

import (
	"regexp"
	"strconv"
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

// InputError reports op input the executor cannot use. The host builds the
// input, so this means a host bug, never a caller mistake.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return "executor: bad op input: " + e.Msg }

// Render decodes the op input, validates the arguments against the op's
// declarations and renders the request. Exactly one result is non-nil: the
// encoded request, a Reject for arguments that break a declaration, or an
// *InputError for input the host should never have sent.
func Render(input []byte) ([]byte, *Reject, error) {
	in, err := decodeInput(input)
	if err != nil {
		return nil, nil, err
	}
	vals, rej := in.validate()
	if rej != nil {
		return nil, rej, nil
	}
	req, rej := in.render(vals)
	if rej != nil {
		return nil, rej, nil
	}
	return req, nil, nil
}

// Validate decodes the op input and validates the arguments only. It
// returns the effective value of every present or defaulted argument,
// rendered as text (what a confirm sentence shows).
func Validate(input []byte) (map[string]string, *Reject, error) {
	in, err := decodeInput(input)
	if err != nil {
		return nil, nil, err
	}
	vals, rej := in.validate()
	if rej != nil {
		return nil, rej, nil
	}
	out := make(map[string]string, len(vals))
	for k, v := range vals {
		out[k] = v.text()
	}
	return out, nil, nil
}

type argSpec struct {
	name      string
	typ       string
	required  bool
	def       *jsonv.Value
	enum      []string
	pattern   *regexp.Regexp
	min, max  *float64
	maxLength int
}

type input struct {
	host     string
	headers  []jsonv.Member // name → string, in order
	method   string
	path     string
	query    []jsonv.Member // key → template, in order
	bodyJSON *jsonv.Value
	bodyForm []jsonv.Member
	args     []*argSpec // sorted by name (the host sends them sorted)
	argsRaw  string
}

// value is one validated argument.
type value struct {
	kind jsonv.Kind
	s    string  // string value, or the canonical literal of a number
	f    float64 // numbers
	b    bool
}

func (v value) text() string {
	switch v.kind {
	case jsonv.Bool:
		if v.b {
			return "true"
		}
		return "false"
	default:
		return v.s
	}
}

func (v value) json() jsonv.Value {
	switch v.kind {
	case jsonv.Bool:
		return jsonv.Value{Kind: jsonv.Bool, B: v.b}
	case jsonv.Number:
		return jsonv.Value{Kind: jsonv.Number, S: v.s}
	default:
		return jsonv.Value{Kind: jsonv.String, S: v.s}
	}
}

func bad(msg string) error { return &InputError{Msg: msg} }

func decodeInput(b []byte) (*input, error) {
	root, err := jsonv.Parse(b)
	if err != nil {
		return nil, bad(err.Error())
	}
	if root.Kind != jsonv.Object {
		return nil, bad("not an object")
	}
	in := &input{}
	str := func(v *jsonv.Value, what string) (string, error) {
		if v == nil || v.Kind != jsonv.String {
			return "", bad(what + " must be a string")
		}
		return v.S, nil
	}
	if in.host, err = str(root.Get("host"), "host"); err != nil {
		return nil, err
	}
	if in.argsRaw, err = str(root.Get("args"), "args"); err != nil {
		return nil, err
	}
	if in.headers, err = strMap(root.Get("headers"), "headers"); err != nil {
		return nil, err
	}
	op := root.Get("op")
	if op == nil || op.Kind != jsonv.Object {
		return nil, bad("op must be an object")
	}
	if in.method, err = str(op.Get("method"), "op.method"); err != nil {
		return nil, err
	}
	if in.path, err = str(op.Get("path"), "op.path"); err != nil {
		return nil, err
	}
	if in.query, err = strMap(op.Get("query"), "op.query"); err != nil {
		return nil, err
	}
	if in.bodyForm, err = strMap(op.Get("body_form"), "op.body_form"); err != nil {
		return nil, err
	}
	if bj := op.Get("body_json"); bj != nil && bj.Kind != jsonv.Null {
		if bj.Kind != jsonv.Object {
			return nil, bad("op.body_json must be an object")
		}
		in.bodyJSON = bj
	}
	if a := op.Get("args"); a != nil && a.Kind != jsonv.Null {
		if a.Kind != jsonv.Object {
			return nil, bad("op.args must be an object")
		}
		for _, m := range a.O {
			spec, err := decodeArg(m.Key, &m.Value)
			if err != nil {
				return nil, err
			}
			in.args = append(in.args, spec)
		}
	}
	return in, nil
}

func strMap(v *jsonv.Value, what string) ([]jsonv.Member, error) {
	if v == nil || v.Kind == jsonv.Null {
		return nil, nil
	}
	if v.Kind != jsonv.Object {
		return nil, bad(what + " must be an object")
	}
	for _, m := range v.O {
		if m.Value.Kind != jsonv.String {
			return nil, bad(what + "." + m.Key + " must be a string")
		}
	}
	return v.O, nil
}

func decodeArg(name string, v *jsonv.Value) (*argSpec, error) {
	if v.Kind != jsonv.Object {
		return nil, bad("op.args." + name + " must be an object")
	}
	a := &argSpec{name: name, maxLength: defaultMaxLength}
	for _, m := range v.O {
		mv := m.Value
		switch m.Key {
		case "type":
			a.typ = mv.S
		case "required":
			a.required = mv.Kind == jsonv.Bool && mv.B
		case "default":
			if mv.Kind != jsonv.Null {
				d := mv
				a.def = &d
			}
		case "enum":
			for _, e := range mv.A {
				a.enum = append(a.enum, e.S)
			}
		case "pattern":
			if mv.S != "" {
				re, err := regexp.Compile(mv.S)
				if err != nil {
					return nil, bad("op.args." + name + ".pattern: " + err.Error())
				}
				a.pattern = re
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
				a.min = &f
			} else {
				a.max = &f
			}
		case "max_length":
			n, err := strconv.Atoi(mv.S)
			if err != nil || n <= 0 {
				return nil, bad("op.args." + name + ".max_length")
			}
			a.maxLength = n
		}
	}
	switch a.typ {
	case "string", "integer", "number", "boolean":
	default:
		return nil, bad("op.args." + name + ".type " + strconv.Quote(a.typ))
	}
	return a, nil
}

// defaultMaxLength mirrors registry.DefaultMaxLength.
const defaultMaxLength = 4096

// maxSafeInteger is the largest integer a float64 holds exactly (2^53-1);
// integer args are bounded by it so every consumer reads the same value.
const maxSafeInteger = 1<<53 - 1

// validate checks the caller's args against the declarations and returns
// the effective values (defaults applied).
func (in *input) validate() (map[string]value, *Reject) {
	args, err := jsonv.Parse([]byte(in.argsRaw))
	if err != nil || args.Kind != jsonv.Object {
		return nil, &Reject{Reason: abi.RejectSyntax}
	}
	for _, m := range args.O {
		if in.spec(m.Key) == nil {
			return nil, &Reject{Reason: abi.RejectUndeclared, Arg: clipName(m.Key)}
		}
	}
	vals := make(map[string]value, len(in.args))
	for _, a := range in.args {
		v := args.Get(a.name)
		if v == nil {
			if a.required {
				return nil, &Reject{Reason: abi.RejectMissing, Arg: a.name}
			}
			if a.def == nil {
				continue
			}
			v = a.def
		}
		val, reason := a.check(v)
		if reason != 0 {
			return nil, &Reject{Reason: reason, Arg: a.name}
		}
		vals[a.name] = val
	}
	return vals, nil
}

// clipName makes a caller's undeclared arg name fit abi.MaxNameBytes and
// the host's printable check: control characters become "?", and the
// name is cut on a UTF-8 boundary.
func clipName(s string) string {
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

func (in *input) spec(name string) *argSpec {
	for _, a := range in.args {
		if a.name == name {
			return a
		}
	}
	return nil
}

// check validates one value against its declaration and returns it in
// canonical form, or a reject reason.
func (a *argSpec) check(v *jsonv.Value) (value, int32) {
	switch a.typ {
	case "string":
		if v.Kind != jsonv.String {
			return value{}, abi.RejectType
		}
		s := v.S
		for i := 0; i < len(s); i++ {
			if c := s[i]; (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
				return value{}, abi.RejectValue
			}
		}
		if utf8.RuneCountInString(s) > a.maxLength {
			return value{}, abi.RejectLength
		}
		if len(a.enum) > 0 {
			found := false
			for _, e := range a.enum {
				if e == s {
					found = true
					break
				}
			}
			if !found {
				return value{}, abi.RejectEnum
			}
		}
		if a.pattern != nil && !a.pattern.MatchString(s) {
			return value{}, abi.RejectPattern
		}
		return value{kind: jsonv.String, s: s}, 0
	case "integer", "number":
		if v.Kind != jsonv.Number {
			return value{}, abi.RejectType
		}
		f, err := strconv.ParseFloat(v.S, 64)
		if err != nil { // out of float64 range
			return value{}, abi.RejectType
		}
		var lit string
		if a.typ == "integer" {
			if f != float64(int64(f)) || f > maxSafeInteger || f < -maxSafeInteger {
				return value{}, abi.RejectType
			}
			lit = strconv.FormatInt(int64(f), 10)
		} else {
			lit = strconv.FormatFloat(f, 'g', -1, 64)
		}
		if a.min != nil && f < *a.min {
			return value{}, abi.RejectMin
		}
		if a.max != nil && f > *a.max {
			return value{}, abi.RejectMax
		}
		return value{kind: jsonv.Number, s: lit, f: f}, 0
	case "boolean":
		if v.Kind != jsonv.Bool {
			return value{}, abi.RejectType
		}
		return value{kind: jsonv.Bool, b: v.B}, 0
	}
	return value{}, abi.RejectType
}

// render builds the encoded request from validated values.
func (in *input) render(vals map[string]value) ([]byte, *Reject) {
	url := make([]byte, 0, 128)
	url = append(url, "https://"...)
	url = append(url, in.host...)
	path, rej := renderPath(url, in.path, vals)
	if rej != nil {
		return nil, rej
	}
	url = path
	sep := byte('?')
	for _, q := range in.query {
		text, ok := interpolate(q.Value.S, vals)
		if !ok {
			continue
		}
		url = append(url, sep)
		sep = '&'
		url = appendEscaped(url, q.Key, false)
		url = append(url, '=')
		url = appendEscaped(url, text, false)
	}

	var body []byte
	switch {
	case in.bodyJSON != nil:
		v, _ := renderJSON(*in.bodyJSON, vals)
		body = jsonv.Append(nil, v)
	case in.bodyForm != nil:
		body = []byte{}
		for _, f := range in.bodyForm {
			text, ok := interpolate(f.Value.S, vals)
			if !ok {
				continue
			}
			if len(body) > 0 {
				body = append(body, '&')
			}
			body = appendEscaped(body, f.Key, true)
			body = append(body, '=')
			body = appendEscaped(body, text, true)
		}
	}

	out := make([]byte, 0, len(url)+len(body)+256)
	out = append(out, `{"method":`...)
	out = jsonv.AppendString(out, in.method)
	out = append(out, `,"url":`...)
	out = jsonv.AppendString(out, string(url))
	out = append(out, `,"headers":[`...)
	for i, h := range in.headers {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '[')
		out = jsonv.AppendString(out, h.Key)
		out = append(out, ',')
		out = jsonv.AppendString(out, h.Value.S)
		out = append(out, ']')
	}
	out = append(out, ']')
	if body != nil {
		out = append(out, `,"body":`...)
		out = jsonv.AppendString(out, string(body))
	}
	return append(out, '}'), nil
}

// renderPath appends the path with each {arg} segment replaced by its
// percent-encoded value.
func renderPath(dst []byte, tmpl string, vals map[string]value) ([]byte, *Reject) {
	for i := 0; i < len(tmpl); {
		if name, n := placeholder(tmpl[i:]); n > 0 {
			v, ok := vals[name]
			if !ok {
				return nil, &Reject{Reason: abi.RejectMissing, Arg: name}
			}
			s := v.text()
			if s == "" || s == "." || s == ".." {
				return nil, &Reject{Reason: abi.RejectValue, Arg: name}
			}
			dst = appendEscaped(dst, s, false)
			i += n
			continue
		}
		dst = append(dst, tmpl[i])
		i++
	}
	return dst, nil
}

// placeholder reports whether s starts with "{name}" (the brace rule of
// docs/MANIFEST.md) and returns the name and the placeholder's length.
func placeholder(s string) (string, int) {
	if len(s) < 3 || s[0] != '{' || !identChar(s[1]) {
		return "", 0
	}
	for j := 1; j < len(s); j++ {
		if s[j] == '}' {
			return s[1:j], j + 1
		}
		if !identChar(s[j]) {
			return "", 0
		}
	}
	return "", 0
}

func identChar(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// interpolate substitutes every {arg} in tmpl. ok is false when the
// template names an arg that has no value (an absent optional arg): the
// caller then leaves the key out.
func interpolate(tmpl string, vals map[string]value) (string, bool) {
	var out []byte
	last := 0
	for i := 0; i < len(tmpl); {
		name, n := placeholder(tmpl[i:])
		if n == 0 {
			i++
			continue
		}
		v, ok := vals[name]
		if !ok {
			return "", false
		}
		out = append(out, tmpl[last:i]...)
		out = append(out, v.text()...)
		i += n
		last = i
	}
	if out == nil {
		return tmpl, true
	}
	return string(append(out, tmpl[last:]...)), true
}

// renderJSON renders a body_json template value. ok is false when the
// value names an absent optional arg: the enclosing object or array then
// leaves it out.
func renderJSON(t jsonv.Value, vals map[string]value) (jsonv.Value, bool) {
	switch t.Kind {
	case jsonv.String:
		if name, n := placeholder(t.S); n > 0 && n == len(t.S) {
			v, ok := vals[name]
			if !ok {
				return jsonv.Value{}, false
			}
			return v.json(), true
		}
		s, ok := interpolate(t.S, vals)
		return jsonv.Value{Kind: jsonv.String, S: s}, ok
	case jsonv.Array:
		out := jsonv.Value{Kind: jsonv.Array, A: make([]jsonv.Value, 0, len(t.A))}
		for _, e := range t.A {
			if r, ok := renderJSON(e, vals); ok {
				out.A = append(out.A, r)
			}
		}
		return out, true
	case jsonv.Object:
		out := jsonv.Value{Kind: jsonv.Object, O: make([]jsonv.Member, 0, len(t.O))}
		for _, m := range t.O {
			if r, ok := renderJSON(m.Value, vals); ok {
				out.O = append(out.O, jsonv.Member{Key: m.Key, Value: r})
			}
		}
		return out, true
	}
	return t, true
}

// appendEscaped percent-encodes s (RFC 3986 section 2.1): unreserved
// characters (ALPHA, DIGIT, "-", ".", "_", "~") stay, every other byte
// becomes %XX. With form, a space becomes "+"
// (application/x-www-form-urlencoded, WHATWG URL section 5).
func appendEscaped(dst []byte, s string, form bool) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			c == '-' || c == '.' || c == '_' || c == '~':
			dst = append(dst, c)
		case c == ' ' && form:
			dst = append(dst, '+')
		default:
			dst = append(dst, '%', hex[c>>4], hex[c&15])
		}
	}
	return dst
}
