// Package executor turns an op and its arguments into an HTTP request. It
// is the logic of the guest: compiled to wasm (guest/wasm) it runs inside
// the sandbox; compiled natively it is the baseline the sandbox's overhead
// is measured against, and the reference the host's own checks are fuzzed
// with.
//
// The executor is deliberately small (it imports internal/abi, argrules
// and jsonv only): every package it imports grows the wasm module and its
// per-instance cost. The argument rules are package argrules': the host
// runs them all first, this package all but the patterns (GuestPatterns).
// The host then verifies the rendered request against its own,
// independent rendering of the manifest's templates (docs/SECURITY.md,
// "Request binding"), so this package's output is never trusted.
//
// Input and output encodings are specified in docs/ABI.md ("The op input",
// "The request").
package executor

import (
	"bytes"
	"sync"

	"github.com/elevenmessenger/pinned/internal/abi"
	"github.com/elevenmessenger/pinned/internal/argrules"
	"github.com/elevenmessenger/pinned/internal/jsonv"
)

// Reject says which argument broke which rule (an abi.Reject* reason).
// Arg is empty for abi.RejectSyntax. The rules are package argrules'.
type Reject = argrules.Reject

// InputError reports op input the executor cannot use. The host builds the
// input, so this means a host bug, never a caller mistake.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return "executor: bad op input: " + e.Msg }

func bad(msg string) error { return &InputError{Msg: msg} }

// Render decodes the op input, validates the arguments against the op's
// declarations (patterns excepted: argrules.GuestPatterns) and renders
// the request. Exactly one result is non-nil: the
// encoded request, a Reject for arguments that break a declaration, or an
// *InputError for input the host should never have sent.
func Render(input []byte) ([]byte, *Reject, error) {
	var r Renderer
	return r.Render(input)
}

// Renderer is Render with buffers kept from one call to the next: the
// argument values and the request. The guest keeps one, so the warm-up
// ops grow its buffers in the template instance and an op then renders
// without allocating (each allocation costs the guest a trip through the
// Go runtime's allocator, and may write a heap page the reset then
// restores). The zero Renderer is ready to use. It is not safe for
// concurrent use, and the request a call returns is valid until the next
// call.
type Renderer struct {
	vals      []argrules.Value
	out, body []byte
}

// Render is the package's Render, into r's buffers.
func (r *Renderer) Render(input []byte) ([]byte, *Reject, error) {
	sp, args, err := split(input)
	if err != nil {
		return nil, nil, err
	}
	vals, rej := argrules.ValidateInto(r.vals[:0], sp.args, args)
	if rej != nil {
		return nil, rej, nil
	}
	r.vals = vals
	req, rej := sp.render(r, vals)
	if rej != nil {
		return nil, rej, nil
	}
	r.out = req
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
	vals, rej := argrules.Validate(sp.args, args)
	if rej != nil {
		return nil, rej, nil
	}
	out := make(map[string]string, len(vals))
	for i, v := range vals {
		if v.Set {
			out[sp.args[i].Name] = v.Text()
		}
	}
	return out, nil, nil
}

// split separates the op input into the (cached) spec and the raw args.
func split(input []byte) (*spec, []byte, error) {
	nl, h := scanSpec(input)
	if nl < 0 {
		return nil, nil, bad("no newline between the op spec and the args")
	}
	sp, err := specFor(input[:nl], h)
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
//
// It is an open-addressed hash table keyed by scanSpec's hash, and each
// entry is compared whole with equalBytes, 32 bytes a step, rather than
// a map[string]: on wasm the Go runtime compares strings a byte at a
// time (memeqbody), and hashing and comparing the spec's few hundred
// bytes that way, with the map's own work, was a third of the guest's
// run (docs/RATIONALE.md says how it was profiled, and what changed).
var (
	specMu    sync.Mutex
	specSlots [2 * maxSpecs]uint16 // index+1 into specs; 0 = empty; at most half full
	specs     []cachedSpec
)

// cachedSpec is one spec cache entry: the spec's exact bytes, their
// scanSpec hash and their parse.
type cachedSpec struct {
	h  uint64
	b  []byte
	sp *spec
}

const maxSpecs = 512

// specFor returns the parse of spec b, whose scanSpec hash is h.
func specFor(b []byte, h uint64) (*spec, error) {
	specMu.Lock()
	slot := lookupSpec(b, h)
	if e := specSlots[slot]; e != 0 {
		sp := specs[e-1].sp
		specMu.Unlock()
		return sp, nil
	}
	specMu.Unlock()
	sp, err := parseSpec(b)
	if err != nil {
		return nil, err
	}
	specMu.Lock()
	if len(specs) < maxSpecs {
		// Look again: another caller may have added it meanwhile.
		if slot = lookupSpec(b, h); specSlots[slot] == 0 {
			specs = append(specs, cachedSpec{h, bytes.Clone(b), sp})
			specSlots[slot] = uint16(len(specs))
		}
	}
	specMu.Unlock()
	return sp, nil
}

// lookupSpec returns the slot of b's entry, or the empty slot where it
// would go (linear probing; the table is never more than half full).
// specMu is held.
func lookupSpec(b []byte, h uint64) uint64 {
	const mask = uint64(len(specSlots) - 1)
	for slot := h & mask; ; slot = (slot + 1) & mask {
		e := specSlots[slot]
		if e == 0 {
			return slot
		}
		if c := &specs[e-1]; c.h == h && equalBytes(c.b, b) {
			return slot
		}
	}
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
	args     []*argrules.Arg // in the order the host sends them (sorted)
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
	// The host matched every pattern before this guest ran
	// (argrules.GuestPatterns): no regular expression engine in the guest.
	if sp.args, err = argrules.DecodeAll(op.Get("args"), argrules.GuestPatterns); err != nil {
		return nil, bad(err.Error())
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

func (sp *spec) argIndex(name string) int { return argrules.Index(sp.args, name) }

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

// render builds the encoded request from validated values, in r's
// buffers.
func (sp *spec) render(r *Renderer, vals []argrules.Value) ([]byte, *Reject) {
	out := r.out[:0]
	if out == nil {
		out = make([]byte, 0, 512)
	}
	out = append(out, sp.head...)
	for _, p := range sp.path {
		if p.arg < 0 {
			out = append(out, p.lit...)
			continue
		}
		v := vals[p.arg]
		if !v.Set {
			return nil, &Reject{Reason: abi.RejectMissing, Arg: sp.args[p.arg].Name}
		}
		var scratch [32]byte
		s := v.S
		if v.Kind != jsonv.String {
			s = string(v.AppendText(scratch[:0]))
		}
		if !argrules.PathSegmentOK(s) {
			return nil, &Reject{Reason: abi.RejectValue, Arg: sp.args[p.arg].Name}
		}
		out = appendEscaped(out, s, false)
	}
	sep := byte('?')
	for _, q := range sp.query {
		if !complete(q.pieces, vals) {
			continue
		}
		if len(q.pieces) == 1 && q.pieces[0].arg >= 0 && vals[q.pieces[0].arg].Kind == jsonv.Array {
			out = sp.appendArray(out, &sep, q.key, q.pieces[0].arg, vals)
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
		body := renderNode(r.body[:0], sp.bodyJSON, vals)
		r.body = body
		out = append(out, `,"body":`...)
		out = jsonv.AppendString(out, string(body))
	case sp.hasForm:
		body := r.body[:0]
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
		r.body = body
		out = append(out, `,"body":`...)
		out = jsonv.AppendString(out, string(body)) // form text is ASCII without quotes: no escapes
	}
	return append(out, '}'), nil
}

// appendArray appends the query pairs of an array arg: with the arg's
// delimiter, one pair of its values joined by the delimiter (itself
// percent-encoded: the values cannot hold it); without, one pair per
// value, none for an empty array.
func (sp *spec) appendArray(out []byte, sep *byte, key []byte, idx int, vals []argrules.Value) []byte {
	v, delim := vals[idx], sp.args[idx].Delim
	var scratch [32]byte
	if delim != 0 {
		out = append(out, *sep)
		*sep = '&'
		out = append(out, key...)
		out = append(out, '=')
		for i, e := range v.A {
			if i > 0 {
				out = appendEscaped(out, string(delim), false)
			}
			out = appendEscaped(out, string(e.AppendText(scratch[:0])), false)
		}
		return out
	}
	for _, e := range v.A {
		out = append(out, *sep)
		*sep = '&'
		out = append(out, key...)
		out = append(out, '=')
		out = appendEscaped(out, string(e.AppendText(scratch[:0])), false)
	}
	return out
}

// complete reports whether every arg a template names has a value; a key
// whose template names an absent optional arg is left out.
func complete(ps []piece, vals []argrules.Value) bool {
	for _, p := range ps {
		if p.arg >= 0 && !vals[p.arg].Set {
			return false
		}
	}
	return true
}

// appendPieces substitutes the values and percent-encodes the result
// (query or form encoding).
func appendPieces(dst []byte, ps []piece, vals []argrules.Value, form bool) []byte {
	for _, p := range ps {
		if p.arg < 0 { // literal text: an op may have no args at all
			dst = appendEscaped(dst, p.lit, form)
			continue
		}
		switch v := vals[p.arg]; {
		case v.Kind == jsonv.String:
			dst = appendEscaped(dst, v.S, form)
		default:
			var scratch [32]byte
			dst = appendEscaped(dst, string(v.AppendText(scratch[:0])), form)
		}
	}
	return dst
}

// renderNode renders a body_json template. Object members and array
// elements that name an absent optional arg are left out.
func renderNode(dst []byte, n *node, vals []argrules.Value) []byte {
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
func present(n *node, vals []argrules.Value) bool {
	return n.kind != jsonv.String || complete(n.pieces, vals)
}

func appendTyped(dst []byte, v argrules.Value) []byte {
	switch v.Kind {
	case jsonv.String:
		return jsonv.AppendString(dst, v.S)
	case jsonv.Array:
		dst = append(dst, '[')
		for i, e := range v.A {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendTyped(dst, e)
		}
		return append(dst, ']')
	}
	return v.AppendText(dst)
}

func appendText(dst []byte, ps []piece, vals []argrules.Value) []byte {
	if len(ps) == 1 && ps[0].arg < 0 {
		return jsonv.AppendString(dst, ps[0].lit)
	}
	var b []byte
	for _, p := range ps {
		if p.arg < 0 {
			b = append(b, p.lit...)
		} else {
			b = vals[p.arg].AppendText(b)
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
