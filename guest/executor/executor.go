// Package executor turns an op and its arguments into an HTTP request. It
// is the logic of the guest: compiled to wasm (guest/wasm) it runs inside
// the sandbox; compiled natively it is the baseline the sandbox's overhead
// is measured against, and the reference the host's own checks are fuzzed
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
	"bytes"
	"regexp"
	"strconv"
	"sync"
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

func bad(msg string) error { return &InputError{Msg: msg} }

// Render decodes the op input, validates the arguments against the op's
// declarations and renders the request. Exactly one result is non-nil: the
// encoded request, a Reject for arguments that break a declaration, or an
// *InputError for input the host should never have sent.
func Render(input []byte) ([]byte, *Reject, error) {
	sp, args, err := split(input)
	if err != nil {
		return nil, nil, err
	}
	vals, rej := sp.validate(args)
	if rej != nil {
		return nil, rej, nil
	}
	req, rej := sp.render(vals)
	if rej != nil {
		return nil, rej, nil
	}
	return req, nil, nil
}

// Validate decodes the op input and validates the arguments only. It
// returns the effective value of every present or defaulted argument,
// rendered as text (what a confirm sentence shows).
func Validate(input []byte) (map[string]string, *Reject, error) {
	sp, args, err := split(input)
	if err != nil {
		return nil, nil, err
	}
	vals, rej := sp.validate(args)
	if rej != nil {
		return nil, rej, nil
	}
	out := make(map[string]string, len(vals))
	for i, v := range vals {
		if v.set {
			out[sp.args[i].name] = v.text()
		}
	}
	return out, nil, nil
}

// split separates the op input into the (cached) spec and the raw args.
func split(input []byte) (*spec, []byte, error) {
	nl := bytes.IndexByte(input, '\n')
	if nl < 0 {
		return nil, nil, bad("no newline between the op spec and the args")
	}
	sp, err := specFor(input[:nl])
	if err != nil {
		return nil, nil, err
	}
	return sp, input[nl+1:], nil
}

// The spec cache holds parsed op specs (with compiled patterns) by their
// exact bytes. Specs come from the host's embedded registry only, never
// from a caller, so the cache is bounded by the registry (and by maxSpecs
// anyway). Under the host's reset strategy the snapshot is taken after one
// warm-up op per registry op, so every spec is already parsed in it; the
// cache never holds anything a caller sent.
var (
	specMu    sync.Mutex
	specCache = map[string]*spec{}
)

const maxSpecs = 512

func specFor(b []byte) (*spec, error) {
	specMu.Lock()
	sp := specCache[string(b)]
	specMu.Unlock()
	if sp != nil {
		return sp, nil
	}
	sp, err := parseSpec(b)
	if err != nil {
		return nil, err
	}
	specMu.Lock()
	if len(specCache) < maxSpecs {
		specCache[string(b)] = sp
	}
	specMu.Unlock()
	return sp, nil
}

// patterns holds compiled arg patterns by their text: ops share patterns
// (a domain name, an owner), and compiling one with counted repetitions
// ({0,61}) costs the guest tens of microseconds to milliseconds. Like the
// spec cache it is filled from the registry only, and bounded by it.
var (
	patternMu sync.Mutex
	patterns  = map[string]*regexp.Regexp{}
)

func compilePattern(expr string) (*regexp.Regexp, error) {
	patternMu.Lock()
	re := patterns[expr]
	patternMu.Unlock()
	if re != nil {
		return re, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	patternMu.Lock()
	if len(patterns) < maxSpecs {
		patterns[expr] = re
	}
	patternMu.Unlock()
	return re, nil
}

// piece is one part of a template: literal text, or the arg at index arg.
type piece struct {
	lit string
	arg int // -1 for literal text
}

// keyed is a query or form entry: its key, already percent-encoded, and
// its value template.
type keyed struct {
	key    []byte
	pieces []piece
}

// node is a parsed body_json template value.
type node struct {
	kind   jsonv.Kind
	raw    []byte  // numbers, booleans, null: the literal
	pieces []piece // strings
	exact  int     // index of the arg for a string that is exactly "{arg}", else -1
	elems  []*node // arrays
	keys   [][]byte
	vals   []*node // objects: JSON-encoded keys and their values
}

type argSpec struct {
	name      string
	typ       string
	required  bool
	def       *jsonv.Value
	defVal    value // def, validated once
	enum      []string
	pattern   *regexp.Regexp
	min, max  *float64
	maxLength int
}

// spec is a parsed op spec: everything of the request that does not
// depend on the args, pre-rendered where possible.
type spec struct {
	head     []byte // `{"method":…,"url":"https://host`
	headers  []byte // `,"headers":[…]`
	path     []piece
	query    []keyed
	bodyJSON *node
	bodyForm []keyed
	hasForm  bool
	args     []*argSpec // in the order the host sends them (sorted)
}

func parseSpec(b []byte) (*spec, error) {
	root, err := jsonv.Parse(b)
	if err != nil {
		return nil, bad(err.Error())
	}
	if root.Kind != jsonv.Object {
		return nil, bad("not an object")
	}
	str := func(v *jsonv.Value, what string) (string, error) {
		if v == nil || v.Kind != jsonv.String {
			return "", bad(what + " must be a string")
		}
		return v.S, nil
	}
	host, err := str(root.Get("host"), "host")
	if err != nil {
		return nil, err
	}
	op := root.Get("op")
	if op == nil || op.Kind != jsonv.Object {
		return nil, bad("op must be an object")
	}
	method, err := str(op.Get("method"), "op.method")
	if err != nil {
		return nil, err
	}
	path, err := str(op.Get("path"), "op.path")
	if err != nil {
		return nil, err
	}
	sp := &spec{}
	if a := op.Get("args"); a != nil && a.Kind != jsonv.Null {
		if a.Kind != jsonv.Object {
			return nil, bad("op.args must be an object")
		}
		for i := range a.O {
			as, err := decodeArg(a.O[i].Key, &a.O[i].Value)
			if err != nil {
				return nil, err
			}
			sp.args = append(sp.args, as)
		}
	}
	sp.head = jsonv.AppendString([]byte(`{"method":`), method)
	sp.head = append(sp.head, `,"url":"https://`...)
	sp.head = append(sp.head, host...) // a DNS name: nothing to escape
	sp.path = sp.template(path)

	headers, err := strMap(root.Get("headers"), "headers")
	if err != nil {
		return nil, err
	}
	sp.headers = append(sp.headers, `,"headers":[`...)
	for i, h := range headers {
		if i > 0 {
			sp.headers = append(sp.headers, ',')
		}
		sp.headers = append(sp.headers, '[')
		sp.headers = jsonv.AppendString(sp.headers, h.Key)
		sp.headers = append(sp.headers, ',')
		sp.headers = jsonv.AppendString(sp.headers, h.Value.S)
		sp.headers = append(sp.headers, ']')
	}
	sp.headers = append(sp.headers, ']')

	query, err := strMap(op.Get("query"), "op.query")
	if err != nil {
		return nil, err
	}
	for _, q := range query {
		sp.query = append(sp.query, keyed{appendEscaped(nil, q.Key, false), sp.template(q.Value.S)})
	}
	form, err := strMap(op.Get("body_form"), "op.body_form")
	if err != nil {
		return nil, err
	}
	if v := op.Get("body_form"); v != nil && v.Kind == jsonv.Object {
		sp.hasForm = true
	}
	for _, f := range form {
		sp.bodyForm = append(sp.bodyForm, keyed{appendEscaped(nil, f.Key, true), sp.template(f.Value.S)})
	}
	if bj := op.Get("body_json"); bj != nil && bj.Kind != jsonv.Null {
		if bj.Kind != jsonv.Object {
			return nil, bad("op.body_json must be an object")
		}
		sp.bodyJSON = sp.jsonTemplate(bj)
	}
	return sp, nil
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

func (sp *spec) argIndex(name string) int {
	for i, a := range sp.args {
		if a.name == name {
			return i
		}
	}
	return -1
}

// template splits a template into pieces (the brace rule of
// docs/MANIFEST.md): "{name}" with name a declared arg is a placeholder;
// anything else is literal text.
func (sp *spec) template(t string) []piece {
	var out []piece
	last := 0
	for i := 0; i < len(t); {
		name, n := placeholder(t[i:])
		if n == 0 {
			i++
			continue
		}
		idx := sp.argIndex(name)
		if idx < 0 {
			i += n
			continue // not an arg: literal (the loader refuses this anyway)
		}
		if i > last {
			out = append(out, piece{lit: t[last:i], arg: -1})
		}
		out = append(out, piece{arg: idx})
		i += n
		last = i
	}
	if last < len(t) {
		out = append(out, piece{lit: t[last:], arg: -1})
	}
	return out
}

func (sp *spec) jsonTemplate(v *jsonv.Value) *node {
	n := &node{kind: v.Kind, exact: -1}
	switch v.Kind {
	case jsonv.String:
		n.pieces = sp.template(v.S)
		if len(n.pieces) == 1 && n.pieces[0].arg >= 0 {
			n.exact = n.pieces[0].arg
		}
	case jsonv.Array:
		for i := range v.A {
			n.elems = append(n.elems, sp.jsonTemplate(&v.A[i]))
		}
	case jsonv.Object:
		for i := range v.O {
			n.keys = append(n.keys, jsonv.AppendString(nil, v.O[i].Key))
			n.vals = append(n.vals, sp.jsonTemplate(&v.O[i].Value))
		}
	default:
		n.raw = jsonv.Append(nil, *v)
	}
	return n
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
				re, err := compilePattern(mv.S)
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
	if a.def != nil {
		dv, reason := a.checkRaw(jsonv.Append(nil, *a.def))
		if reason != 0 {
			return nil, bad("op.args." + name + ".default does not satisfy the declaration")
		}
		a.defVal = dv
	}
	return a, nil
}

// defaultMaxLength mirrors registry.DefaultMaxLength.
const defaultMaxLength = 4096

// maxSafeInteger is the largest integer a float64 holds exactly (2^53-1);
// integer args are bounded by it so every consumer reads the same value.
const maxSafeInteger = 1<<53 - 1

// value is one validated argument.
type value struct {
	set   bool
	kind  jsonv.Kind
	s     string  // strings
	i     int64   // integers
	f     float64 // numbers (and integers, for bounds)
	isInt bool
	b     bool
}

// appendText appends the value as text: a string as is, an integer in
// decimal, a number in the shortest form that round-trips, a boolean as
// true or false.
func (v value) appendText(dst []byte) []byte {
	switch v.kind {
	case jsonv.Bool:
		if v.b {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case jsonv.Number:
		if v.isInt {
			return strconv.AppendInt(dst, v.i, 10)
		}
		return strconv.AppendFloat(dst, v.f, 'g', -1, 64)
	}
	return append(dst, v.s...)
}

func (v value) text() string {
	if v.kind == jsonv.String {
		return v.s
	}
	var b [32]byte
	return string(v.appendText(b[:0]))
}

// maxArgs bounds the args an op may declare (the loader allows 32).
const maxArgs = 64

// validate checks the caller's args against the declarations and returns
// the effective values by arg index (defaults applied). It reads the args
// in two passes without building a tree: the first checks the syntax and
// that every key is declared and unique, the second checks each declared
// arg's value in the order of the declarations — so the first problem
// reported does not depend on the caller's key order.
func (sp *spec) validate(raw []byte) ([]value, *Reject) {
	if len(sp.args) > maxArgs {
		return nil, &Reject{Reason: abi.RejectSyntax}
	}
	var at [maxArgs]int32 // offset of each arg's value in raw, +1; 0 = absent
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
			var decoded string
			if bytes.IndexByte(key, '\\') >= 0 {
				v, err := jsonv.Parse(raw[i : i+n])
				if err != nil {
					return nil, &Reject{Reason: abi.RejectSyntax}
				}
				decoded = v.S
				key = []byte(decoded)
			}
			idx := sp.argIndexBytes(key)
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
	vals := make([]value, len(sp.args))
	for k, a := range sp.args {
		if at[k] == 0 {
			if a.required {
				return nil, &Reject{Reason: abi.RejectMissing, Arg: a.name}
			}
			if a.def != nil {
				vals[k] = a.defVal
			}
			continue
		}
		val, reason := a.checkRaw(raw[at[k]-1:])
		if reason != 0 {
			return nil, &Reject{Reason: reason, Arg: a.name}
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

func (sp *spec) argIndexBytes(name []byte) int {
	for i, a := range sp.args {
		if a.name == string(name) {
			return i
		}
	}
	return -1
}

// checkRaw validates the (syntactically valid) JSON value at the start of
// b against the declaration.
func (a *argSpec) checkRaw(b []byte) (value, int32) {
	switch b[0] {
	case '"':
		n := jsonv.ScanString(b)
		var s string
		if bytes.IndexByte(b[1:n-1], '\\') < 0 {
			s = string(b[1 : n-1])
		} else {
			v, err := jsonv.Parse(b[:n])
			if err != nil {
				return value{}, abi.RejectType
			}
			s = v.S
		}
		return a.check(value{kind: jsonv.String, s: s})
	case 't', 'f':
		return a.check(value{kind: jsonv.Bool, b: b[0] == 't'})
	case 'n':
		return a.check(value{kind: jsonv.Null})
	case '{':
		return a.check(value{kind: jsonv.Object})
	case '[':
		return a.check(value{kind: jsonv.Array})
	}
	n := jsonv.ScanNumber(b)
	v := value{kind: jsonv.Number}
	if i, ok := plainInt(b[:n]); ok {
		v.i, v.f, v.isInt = i, float64(i), true
	} else {
		f, err := strconv.ParseFloat(string(b[:n]), 64)
		if err != nil { // out of float64 range
			return value{}, abi.RejectType
		}
		v.f = f
		if f == float64(int64(f)) && f <= maxSafeInteger && f >= -maxSafeInteger {
			v.i, v.isInt = int64(f), true
		}
	}
	return a.check(v)
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

// check validates one value against its declaration and returns it
// canonical (marked set), or a reject reason.
func (a *argSpec) check(v value) (value, int32) {
	switch a.typ {
	case "string":
		if v.kind != jsonv.String {
			return value{}, abi.RejectType
		}
		s := v.s
		for i := 0; i < len(s); i++ {
			if c := s[i]; (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
				return value{}, abi.RejectValue
			}
		}
		if len(s) > a.maxLength && utf8.RuneCountInString(s) > a.maxLength {
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
	case "integer", "number":
		if v.kind != jsonv.Number {
			return value{}, abi.RejectType
		}
		if a.typ == "integer" {
			if !v.isInt || v.i > maxSafeInteger || v.i < -maxSafeInteger {
				return value{}, abi.RejectType
			}
		} else {
			v.isInt = false // numbers render in float form
		}
		if a.min != nil && v.f < *a.min {
			return value{}, abi.RejectMin
		}
		if a.max != nil && v.f > *a.max {
			return value{}, abi.RejectMax
		}
	case "boolean":
		if v.kind != jsonv.Bool {
			return value{}, abi.RejectType
		}
	default:
		return value{}, abi.RejectType
	}
	v.set = true
	return v, 0
}

// render builds the encoded request from validated values.
func (sp *spec) render(vals []value) ([]byte, *Reject) {
	out := make([]byte, 0, 512)
	out = append(out, sp.head...)
	for _, p := range sp.path {
		if p.arg < 0 {
			out = append(out, p.lit...)
			continue
		}
		v := vals[p.arg]
		if !v.set {
			return nil, &Reject{Reason: abi.RejectMissing, Arg: sp.args[p.arg].name}
		}
		var scratch [32]byte
		s := v.s
		if v.kind != jsonv.String {
			s = string(v.appendText(scratch[:0]))
		}
		if s == "" || s == "." || s == ".." {
			return nil, &Reject{Reason: abi.RejectValue, Arg: sp.args[p.arg].name}
		}
		out = appendEscaped(out, s, false)
	}
	sep := byte('?')
	for _, q := range sp.query {
		if !complete(q.pieces, vals) {
			continue
		}
		out = append(out, sep)
		sep = '&'
		out = append(out, q.key...)
		out = append(out, '=')
		out = appendPieces(out, q.pieces, vals, false)
	}
	out = append(out, '"')
	out = append(out, sp.headers...)
	switch {
	case sp.bodyJSON != nil:
		body := renderNode(make([]byte, 0, 256), sp.bodyJSON, vals)
		out = append(out, `,"body":`...)
		out = jsonv.AppendString(out, string(body))
	case sp.hasForm:
		body := make([]byte, 0, 128)
		for _, f := range sp.bodyForm {
			if !complete(f.pieces, vals) {
				continue
			}
			if len(body) > 0 {
				body = append(body, '&')
			}
			body = append(body, f.key...)
			body = append(body, '=')
			body = appendPieces(body, f.pieces, vals, true)
		}
		out = append(out, `,"body":`...)
		out = jsonv.AppendString(out, string(body)) // form text is ASCII without quotes: no escapes
	}
	return append(out, '}'), nil
}

// complete reports whether every arg a template names has a value; a key
// whose template names an absent optional arg is left out.
func complete(ps []piece, vals []value) bool {
	for _, p := range ps {
		if p.arg >= 0 && !vals[p.arg].set {
			return false
		}
	}
	return true
}

// appendPieces substitutes the values and percent-encodes the result
// (query or form encoding).
func appendPieces(dst []byte, ps []piece, vals []value, form bool) []byte {
	for _, p := range ps {
		switch v := vals[max(p.arg, 0)]; {
		case p.arg < 0:
			dst = appendEscaped(dst, p.lit, form)
		case v.kind == jsonv.String:
			dst = appendEscaped(dst, v.s, form)
		default:
			var scratch [32]byte
			dst = appendEscaped(dst, string(v.appendText(scratch[:0])), form)
		}
	}
	return dst
}

// renderNode renders a body_json template. Object members and array
// elements that name an absent optional arg are left out.
func renderNode(dst []byte, n *node, vals []value) []byte {
	switch n.kind {
	case jsonv.String:
		if n.exact >= 0 {
			return appendTyped(dst, vals[n.exact])
		}
		return appendText(dst, n.pieces, vals)
	case jsonv.Array:
		dst = append(dst, '[')
		first := true
		for _, e := range n.elems {
			if !present(e, vals) {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = renderNode(dst, e, vals)
		}
		return append(dst, ']')
	case jsonv.Object:
		dst = append(dst, '{')
		first := true
		for i, v := range n.vals {
			if !present(v, vals) {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = append(dst, n.keys[i]...)
			dst = append(dst, ':')
			dst = renderNode(dst, v, vals)
		}
		return append(dst, '}')
	}
	return append(dst, n.raw...)
}

// present reports whether a template value renders: a string naming an
// absent arg does not (containers always do).
func present(n *node, vals []value) bool {
	return n.kind != jsonv.String || complete(n.pieces, vals)
}

func appendTyped(dst []byte, v value) []byte {
	if v.kind == jsonv.String {
		return jsonv.AppendString(dst, v.s)
	}
	return v.appendText(dst)
}

func appendText(dst []byte, ps []piece, vals []value) []byte {
	if len(ps) == 1 && ps[0].arg < 0 {
		return jsonv.AppendString(dst, ps[0].lit)
	}
	var b []byte
	for _, p := range ps {
		if p.arg < 0 {
			b = append(b, p.lit...)
		} else {
			b = vals[p.arg].appendText(b)
		}
	}
	return jsonv.AppendString(dst, string(b))
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
