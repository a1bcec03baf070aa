package egress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	"github.com/elevenmessenger/pinned/internal/abi"
	"github.com/elevenmessenger/pinned/internal/argrules"
	"github.com/elevenmessenger/pinned/internal/jsonv"
	"github.com/elevenmessenger/pinned/registry"
)

// Request binding (docs/SECURITY.md, rule 2b; docs/RATIONALE.md, "Why
// does the host verify every request if the guest renders it?"). The host
// sends a request only if it is exactly the request the op's manifest
// templates render from the caller's args after validation and defaults:
//
//   - the path: every segment equal, an {arg} segment in one canonical
//     percent-encoding (RFC 3986 unreserved characters as they are, every
//     other byte %XX with upper-case hex);
//   - the query: exactly the declared keys whose templates are complete,
//     each once with its canonical value; the ORDER of the pairs is free
//     (the set of pairs is compared), every pair's bytes are not;
//   - the body: body_json compared structurally with typed values
//     (member order free, no member or element more or less, a string
//     equal after decoding (and no escaped lone surrogate, which decodes
//     to U+FFFD), a number arg as exactly its canonical text (an integer
//     in decimal, a number in the shortest form that round-trips), a
//     number literal as exactly the manifest's text); body_form field by
//     field like the query (form encoding: a space is "+");
//   - the headers: every header the manifest declares exactly once with
//     its exact value, and no other.
//
// Anything else is api.DenyNotBound. The expected request is built here from
// the manifest (registry.ParseTemplate and this file's own encoder), never
// by running the executor's renderer: a renderer bug cannot pass its own
// Check. The argument rules are package argrules, which the guest runs as
// well: one implementation, read once by a reviewer, run on both sides.

// bindPiece is a template piece: literal text, or the arg at index arg.
type bindPiece struct {
	lit string
	arg int // -1 for literal text
}

// bindKV is a query or form entry: its canonical encoded key and its value
// template.
type bindKV struct {
	key    string
	pieces []bindPiece
}

// bindNode is a compiled body_json template value.
type bindNode struct {
	kind   jsonv.Kind
	pieces []bindPiece // strings
	exact  int         // a string exactly "{arg}": the arg's index; else -1
	num    string      // number literals: the manifest's literal text
	b      bool        // boolean literals
	keys   []string    // objects
	vals   []*bindNode // objects (by keys) and arrays
}

// Binding is what the binding check needs of one op, compiled once.
type Binding struct {
	args    []*argrules.Arg // in the op spec's order
	secret  []bool          // by arg index: registry Arg.Secret
	path    [][]bindPiece   // segments after the leading "/"
	query   []bindKV
	form    []bindKV
	hasForm bool
	body    *bindNode
	headers []bindHeader // canonical name, exact value; sorted by name
}

type bindHeader struct{ name, value string }

// Bound is the request one op's args bind the guest to.
type Bound struct {
	vals   []argrules.Value
	target string   // path and query as they must be sent, canonical query order
	path   string   // target up to the query
	query  []string // target's "key=value" pairs (substrings of target)
	form   []string // the body_form's pairs, canonical
	// Inline storage, so that binding an op usually allocates only this
	// struct and the target string.
	qbuf   [8]string
	valBuf [8]argrules.Value
	buf    [256]byte
}

// Prepared is one op's egress checks, compiled once: the op input's
// prefix the guest reads (InputPrefix), the request policy (NewPolicy)
// and the request binding read from that same prefix (NewBinding).
type Prepared struct {
	Prefix  []byte
	Policy  *Policy
	Binding *Binding
}

// Prepare compiles the egress checks of op of m, as the host runs them.
// The error is a manifest the loader would refuse.
func Prepare(m *registry.Manifest, op *registry.Op) (*Prepared, error) {
	pol, err := NewPolicy(m, op)
	if err != nil {
		return nil, err
	}
	prefix, err := InputPrefix(m, op)
	if err != nil {
		return nil, err
	}
	b, err := NewBinding(m, op, prefix)
	if err != nil {
		return nil, err
	}
	return &Prepared{Prefix: prefix, Policy: pol, Binding: b}, nil
}

// InputPrefix encodes the op input (docs/ABI.md, "The op input") up to
// the caller's args: the op spec (host, headers, op) as one line of
// JSON, then a newline. The guest reads it; NewBinding reads the arg
// declarations from it, so both sides apply the rules to the same bytes.
func InputPrefix(m *registry.Manifest, op *registry.Op) ([]byte, error) {
	type opIn struct {
		Method   string                   `json:"method"`
		Path     string                   `json:"path"`
		Args     map[string]*registry.Arg `json:"args,omitempty"`
		Query    map[string]string        `json:"query,omitempty"`
		BodyJSON json.RawMessage          `json:"body_json,omitempty"`
		BodyForm map[string]string        `json:"body_form,omitempty"`
	}
	head, err := json.Marshal(struct {
		Host    string            `json:"host"`
		Headers map[string]string `json:"headers,omitempty"`
		Op      opIn              `json:"op"`
	}{m.Host, m.HeadersOf(op), opIn{op.Method, op.Path, op.Args, op.Query, op.BodyJSON, op.BodyForm}})
	if err != nil {
		return nil, err
	}
	return append(head, '\n'), nil
}

// NewBinding compiles the request binding of op from the op spec line
// prefix (InputPrefix) and the manifest m.
func NewBinding(m *registry.Manifest, op *registry.Op, prefix []byte) (*Binding, error) {
	// The declarations are read from the op spec line the guest receives
	// (the host built it from the manifest), so both sides apply the
	// rules to exactly the same declarations.
	nl := strings.IndexByte(string(prefix), '\n')
	if nl < 0 {
		return nil, errors.New("op input prefix has no newline")
	}
	spec, err := jsonv.Parse(prefix[:nl])
	if err != nil {
		return nil, err
	}
	var argsJSON *jsonv.Value
	if o := spec.Get("op"); o != nil {
		argsJSON = o.Get("args")
	}
	b := &Binding{}
	if b.args, err = argrules.DecodeAll(argsJSON, compilePattern); err != nil {
		return nil, err
	}
	if len(b.args) != len(op.Args) {
		return nil, errors.New("op spec args differ from the manifest's")
	}
	b.secret = make([]bool, len(b.args))
	for i, a := range b.args {
		ra := op.Args[a.Name]
		if ra == nil {
			return nil, fmt.Errorf("op spec arg %q not in the manifest", a.Name)
		}
		b.secret[i] = ra.Secret
	}
	if !strings.HasPrefix(op.Path, "/") {
		return nil, errors.New("path does not start with /")
	}
	for _, seg := range strings.Split(op.Path[1:], "/") {
		ps, err := b.template(seg)
		if err != nil {
			return nil, err
		}
		b.path = append(b.path, ps)
	}
	for _, k := range op.QueryKeys() {
		ps, err := b.template(op.Query[k])
		if err != nil {
			return nil, err
		}
		b.query = append(b.query, bindKV{key: string(pctEncode(nil, k, false)), pieces: ps})
	}
	b.hasForm = op.BodyForm != nil
	for _, k := range op.FormKeys() {
		ps, err := b.template(op.BodyForm[k])
		if err != nil {
			return nil, err
		}
		b.form = append(b.form, bindKV{key: string(pctEncode(nil, k, true)), pieces: ps})
	}
	if len(op.BodyJSON) > 0 {
		tv, err := jsonv.Parse(op.BodyJSON)
		if err != nil {
			return nil, err
		}
		if tv.Kind != jsonv.Object {
			return nil, errors.New("body_json is not an object")
		}
		if b.body, err = b.node(&tv); err != nil {
			return nil, err
		}
	}
	hs := m.HeadersOf(op)
	for _, k := range slices.Sorted(maps.Keys(hs)) {
		b.headers = append(b.headers, bindHeader{textproto.CanonicalMIMEHeaderKey(k), hs[k]})
	}
	return b, nil
}

// template compiles a template; a placeholder must name a declared arg
// (the loader guarantees it; fail closed anyway).
func (b *Binding) template(t string) ([]bindPiece, error) {
	pieces, err := registry.ParseTemplate(t)
	if err != nil {
		return nil, err
	}
	out := make([]bindPiece, 0, len(pieces))
	for _, p := range pieces {
		if p.Arg == "" {
			out = append(out, bindPiece{lit: p.Text, arg: -1})
			continue
		}
		i := argrules.Index(b.args, p.Arg)
		if i < 0 {
			return nil, fmt.Errorf("template names undeclared arg %q", p.Arg)
		}
		out = append(out, bindPiece{arg: i})
	}
	return out, nil
}

func (b *Binding) node(v *jsonv.Value) (*bindNode, error) {
	n := &bindNode{kind: v.Kind, exact: -1}
	switch v.Kind {
	case jsonv.String:
		ps, err := b.template(v.S)
		if err != nil {
			return nil, err
		}
		n.pieces = ps
		if len(ps) == 1 && ps[0].arg >= 0 {
			n.exact = ps[0].arg
		}
	case jsonv.Number:
		if _, err := strconv.ParseFloat(v.S, 64); err != nil {
			return nil, err
		}
		n.num = v.S
	case jsonv.Bool:
		n.b = v.B
	case jsonv.Array:
		for i := range v.A {
			e, err := b.node(&v.A[i])
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, e)
		}
	case jsonv.Object:
		for i := range v.O {
			e, err := b.node(&v.O[i].Value)
			if err != nil {
				return nil, err
			}
			n.keys = append(n.keys, v.O[i].Key)
			n.vals = append(n.vals, e)
		}
	}
	return n, nil
}

// Bind validates the caller's args (package argrules: the same rules the
// guest runs) and renders the request they bind the op to. A reject is
// the caller's bad args: the op fails with bad_args and no guest runs.
func (b *Binding) Bind(raw []byte) (*Bound, *argrules.Reject) {
	out := &Bound{}
	vals, rej := argrules.ValidateInto(out.valBuf[:0], b.args, raw)
	if rej != nil {
		return nil, rej
	}
	out.vals = vals
	buf := out.buf[:0]
	var scratch [32]byte
	for _, seg := range b.path {
		buf = append(buf, '/')
		for _, p := range seg {
			if p.arg < 0 {
				buf = append(buf, p.lit...)
				continue
			}
			v := vals[p.arg]
			if !v.Set {
				return nil, &argrules.Reject{Reason: abi.RejectMissing, Arg: b.args[p.arg].Name}
			}
			text := v.AppendText(scratch[:0])
			if !argrules.PathSegmentOK(string(text)) {
				return nil, &argrules.Reject{Reason: abi.RejectValue, Arg: b.args[p.arg].Name}
			}
			buf = pctEncode(buf, text, false)
		}
	}
	pathEnd := len(buf)
	var starts, stops [len(out.qbuf)]int // each pair's bytes in buf, while they fit
	n := 0
	sep := byte('?')
	for _, kv := range b.query {
		if !complete(kv.pieces, vals) {
			continue
		}
		for item := 0; item < b.pairCount(kv, vals); item++ {
			buf = append(buf, sep)
			sep = '&'
			start := len(buf)
			buf = b.appendPair(buf, kv, vals, item, false)
			if n < len(starts) {
				starts[n], stops[n] = start, len(buf)
			}
			n++
		}
	}
	out.target = string(buf)
	out.path = out.target[:pathEnd]
	if n <= len(out.qbuf) {
		out.query = out.qbuf[:0]
		for i := 0; i < n; i++ {
			out.query = append(out.query, out.target[starts[i]:stops[i]])
		}
	} else {
		out.query = b.pairs(b.query, vals, false)
	}
	if b.hasForm {
		out.form = b.pairs(b.form, vals, true)
	}
	return out, nil
}

// arrayArg returns the index of the array arg whose value is kv's whole
// template, or -1.
func arrayArg(kv bindKV, vals []argrules.Value) int {
	if len(kv.pieces) == 1 && kv.pieces[0].arg >= 0 && vals[kv.pieces[0].arg].Kind == jsonv.Array {
		return kv.pieces[0].arg
	}
	return -1
}

// pairCount is how many pairs kv sends: one per value of an array arg
// that is exploded (OpenAPI 3: the key repeated, none for no values),
// else one.
func (b *Binding) pairCount(kv bindKV, vals []argrules.Value) int {
	if a := arrayArg(kv, vals); a >= 0 && b.args[a].Delim == 0 {
		return len(vals[a].A)
	}
	return 1
}

// appendPair appends kv's canonical "key=value": for an exploded array
// arg, the pair of its value number item; for a delimited one, its
// values joined by the delimiter, percent-encoded like them (a value
// never holds it: argrules refuses that).
func (b *Binding) appendPair(dst []byte, kv bindKV, vals []argrules.Value, item int, form bool) []byte {
	dst = append(dst, kv.key...)
	dst = append(dst, '=')
	var scratch [32]byte
	if a := arrayArg(kv, vals); a >= 0 {
		v, delim := vals[a], b.args[a].Delim
		if delim == 0 {
			return pctEncode(dst, v.A[item].AppendText(scratch[:0]), form)
		}
		for i, e := range v.A {
			if i > 0 {
				dst = pctEncode(dst, []byte{delim}, form)
			}
			dst = pctEncode(dst, e.AppendText(scratch[:0]), form)
		}
		return dst
	}
	for _, p := range kv.pieces {
		if p.arg < 0 {
			dst = pctEncode(dst, p.lit, form)
		} else if v := vals[p.arg]; v.Kind == jsonv.String {
			dst = pctEncode(dst, v.S, form)
		} else {
			dst = pctEncode(dst, v.AppendText(scratch[:0]), form)
		}
	}
	return dst
}

// pairs renders the complete entries (every arg their template names is
// set) as canonical "key=value" pairs.
func (b *Binding) pairs(kvs []bindKV, vals []argrules.Value, form bool) []string {
	var out []string
	for _, kv := range kvs {
		if !complete(kv.pieces, vals) {
			continue
		}
		for item := 0; item < b.pairCount(kv, vals); item++ {
			out = append(out, string(b.appendPair(nil, kv, vals, item, form)))
		}
	}
	return out
}

func complete(ps []bindPiece, vals []argrules.Value) bool {
	for _, p := range ps {
		if p.arg >= 0 && !vals[p.arg].Set {
			return false
		}
	}
	return true
}

// text renders a string template with the values as text.
func text(ps []bindPiece, vals []argrules.Value) string {
	if len(ps) == 1 && ps[0].arg < 0 {
		return ps[0].lit
	}
	var s []byte
	for _, p := range ps {
		if p.arg < 0 {
			s = append(s, p.lit...)
		} else {
			s = vals[p.arg].AppendText(s)
		}
	}
	return string(s)
}

// pctEncode appends s percent-encoded in the one canonical form the host
// accepts (RFC 3986 section 2.1 and 6.2.2): unreserved characters (ALPHA,
// DIGIT, "-", ".", "_", "~") as they are, every other byte as %XX with
// upper-case hex digits; with form, a space is "+"
// (application/x-www-form-urlencoded, WHATWG URL section 5).
func pctEncode[T string | []byte](dst []byte, s T, form bool) []byte {
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isUnreserved(c):
			dst = append(dst, c)
		case form && c == ' ':
			dst = append(dst, '+')
		default:
			dst = append(dst, '%', hexDigits[c>>4], hexDigits[c&15])
		}
	}
	return dst
}

// Check reports whether the request (already through the egress policy:
// the pinned host, a well-formed path and query, a body of the op's kind,
// no forbidden header) is exactly the bound request.
func (b *Binding) Check(want *Bound, r *Request, host string) bool {
	if want == nil {
		return false // no args were bound (fail closed)
	}
	const scheme = "https://"
	rest := r.url[len(scheme)+len(host):]
	path, query, hasQuery := strings.Cut(rest, "?")
	if path != want.path {
		return false
	}
	if hasQuery != (len(want.query) > 0) || (hasQuery && !samePairs(query, want.query)) {
		return false
	}
	switch {
	case b.body != nil:
		if r.json == nil || loneSurrogate(r.body) || !b.body.equal(r.json, want.vals) {
			return false
		}
	case b.hasForm:
		if len(r.body) == 0 {
			if len(want.form) != 0 {
				return false
			}
		} else if !samePairs(string(r.body), want.form) {
			return false
		}
	}
	return b.sameHeaders(r.headers)
}

// samePairs reports whether the "&"-joined pairs of s are exactly want,
// each once: pairs of different keys in any order, the pairs of one key
// (an array's values) in want's order, so a value added, dropped or moved
// is refused.
func samePairs(s string, want []string) bool {
	if s == "" {
		return len(want) == 0
	}
	var usedBuf [64]bool
	var used []bool
	if len(want) > len(usedBuf) {
		used = make([]bool, len(want))
	} else {
		used = usedBuf[:len(want)]
	}
	n := 0
	for more := true; more; {
		var pair string
		pair, s, more = strings.Cut(s, "&")
		n++
		if n > len(want) {
			return false
		}
		key, _, _ := strings.Cut(pair, "=")
		found := false
		for i, w := range want {
			if used[i] {
				continue
			}
			if w == pair {
				used[i] = true
				found = true
				break
			}
			if wk, _, _ := strings.Cut(w, "="); wk == key {
				return false // an earlier value of this key is due first
			}
		}
		if !found {
			return false
		}
	}
	return n == len(want)
}

// sameHeaders: every declared header exactly once with its exact value,
// and no other header.
func (b *Binding) sameHeaders(hs [][2]string) bool {
	if len(hs) != len(b.headers) || len(hs) > 64 {
		return false
	}
	var seen uint64
	for _, h := range hs {
		i := b.headerIndex(h[0])
		if i < 0 || h[1] != b.headers[i].value || seen&(1<<i) != 0 {
			return false
		}
		seen |= 1 << i
	}
	return true
}

// headerIndex finds a declared header by name, in any ASCII case (the
// policy has checked that the name is an RFC 9110 token: ASCII only).
func (b *Binding) headerIndex(name string) int {
	for i, h := range b.headers {
		if strings.EqualFold(h.name, name) {
			return i
		}
	}
	return -1
}

// present reports whether a template value renders: a string naming an
// absent arg does not (containers and literals always do).
func (n *bindNode) present(vals []argrules.Value) bool {
	return n.kind != jsonv.String || complete(n.pieces, vals)
}

// equal compares a body value with the template rendered from vals,
// structurally (see the comment at the top of the file).
func (n *bindNode) equal(v *jsonv.Value, vals []argrules.Value) bool {
	if n.exact >= 0 {
		return equalTyped(vals[n.exact], v)
	}
	if v.Kind != n.kind {
		return false
	}
	switch n.kind {
	case jsonv.String:
		return v.S == text(n.pieces, vals)
	case jsonv.Number:
		return v.S == n.num
	case jsonv.Bool:
		return v.B == n.b
	case jsonv.Null:
		return true
	case jsonv.Array:
		j := 0
		for _, e := range n.vals {
			if !e.present(vals) {
				continue
			}
			if j >= len(v.A) || !e.equal(&v.A[j], vals) {
				return false
			}
			j++
		}
		return j == len(v.A)
	case jsonv.Object:
		want := 0
		for i, e := range n.vals {
			if !e.present(vals) {
				continue
			}
			want++
			m := v.Get(n.keys[i])
			if m == nil || !e.equal(m, vals) {
				return false
			}
		}
		return want == len(v.O) // jsonv refuses duplicate keys
	}
	return false
}

// equalTyped compares a body value with an arg's value as a JSON value
// of its type: an array element by element, in order.
func equalTyped(a argrules.Value, v *jsonv.Value) bool {
	switch a.Kind {
	case jsonv.Array:
		if v.Kind != jsonv.Array || len(v.A) != len(a.A) {
			return false
		}
		for i := range a.A {
			if !equalTyped(a.A[i], &v.A[i]) {
				return false
			}
		}
		return true
	case jsonv.String:
		return v.Kind == jsonv.String && v.S == a.S
	case jsonv.Bool:
		return v.Kind == jsonv.Bool && v.B == a.B
	case jsonv.Number:
		// The literal's text, not its value: "-0" for 0, "1.0" for
		// 1 or 17 significant digits for a float64 are the same
		// float64 but not the same number to a provider that reads
		// integers or decimals (red team, TestBindComparesNumberText).
		var scratch [32]byte
		return v.Kind == jsonv.Number && v.S == string(a.AppendText(scratch[:0]))
	}
	return false
}

// loneSurrogate reports whether a JSON text (valid: the policy parsed
// it) has a \u escape of a UTF-16 surrogate that is not half of a pair.
// jsonv decodes every such escape to U+FFFD, so 2,048 spellings of it
// would compare equal to a caller's U+FFFD while a provider may read each
// differently: a channel the guest could write into the caller's text
// (red team, TestBindRefusesBodies). The executor never writes an escaped
// surrogate (jsonv.AppendString writes non-ASCII as UTF-8).
func loneSurrogate(b []byte) bool {
	if bytes.IndexByte(b, '\\') < 0 {
		return false
	}
	for i := 0; i+1 < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		i++ // the escaped character
		if b[i] != 'u' {
			continue
		}
		r, ok := hex4(b[i+1:])
		if !ok {
			return true // not valid JSON after all: fail closed
		}
		i += 4
		switch {
		case r < 0xD800 || r > 0xDFFF:
			continue
		case r >= 0xDC00:
			return true // a low surrogate first
		}
		// A high surrogate: "\uDC00"-"\uDFFF" must follow.
		if i+2 < len(b) && b[i+1] == '\\' && b[i+2] == 'u' {
			if lo, ok := hex4(b[i+3:]); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				i += 6
				continue
			}
		}
		return true
	}
	return false
}

// hex4 reads four hex digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		d, ok := unhex(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// Target is the request target as sent (path and query), with the value
// of every arg the manifest marks secret replaced by "[redacted]": what
// the audit event records.
func (b *Binding) Target(want *Bound) string {
	if want == nil {
		return ""
	}
	hasSecret := false
	for i, s := range b.secret {
		if s && want.vals[i].Set {
			hasSecret = true
		}
	}
	if !hasSecret {
		return want.target
	}
	vals := append([]argrules.Value(nil), want.vals...)
	for i, s := range b.secret {
		if s && vals[i].Set {
			vals[i] = argrules.Value{Set: true, Kind: jsonv.String, S: "[redacted]"}
		}
	}
	var path []byte
	for _, seg := range b.path {
		path = append(path, '/')
		for _, p := range seg {
			if p.arg < 0 {
				path = append(path, p.lit...)
			} else {
				path = pctEncode(path, vals[p.arg].Text(), false)
			}
		}
	}
	q := b.pairs(b.query, vals, false)
	if len(q) == 0 {
		return string(path)
	}
	return string(path) + "?" + strings.Join(q, "&")
}

// ConfirmValues are the effective values as text by arg name (what a
// confirm sentence shows).
func (b *Binding) ConfirmValues(want *Bound) map[string]string {
	out := make(map[string]string, len(b.args))
	for i, v := range want.vals {
		if v.Set {
			out[b.args[i].Name] = v.Text()
		}
	}
	return out
}
