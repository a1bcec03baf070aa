package egress

import (
	"strconv"
	"strings"

	"github.com/elevenmessenger/pinned/internal/argrules"
	"github.com/elevenmessenger/pinned/internal/jsonenc"
	"github.com/elevenmessenger/pinned/internal/jsonv"
)

// Rendered is the request a Bound describes, for a person to read
// (host.Render): built by the binding code itself, so it is by
// construction the request Binding.Check accepts for those args.
type Rendered struct {
	// Target is the path and query as sent (canonical encoding, query
	// pairs in key order).
	Target string
	// Headers are the declared headers, [canonical name, value], sorted
	// by name.
	Headers [][2]string
	// ContentType is the body's media type, "" for none.
	ContentType string
	// Body is body_json as compact JSON or the body_form pairs joined by
	// "&"; "" for none.
	Body string
	// Values are the effective values as text by arg name (a confirm
	// sentence's).
	Values map[string]string
}

// Redacted replaces the value of an arg the manifest marks secret in
// what is shown or audited (Binding.Target, Render with redact).
const Redacted = "[redacted]"

// Render renders want: with redact, the value of every arg the manifest
// marks secret is Redacted (unencoded in Target and Body, for a person).
func (b *Binding) Render(want *Bound, redact bool) Rendered {
	vals := want.vals
	target := want.target
	if redact {
		vals = b.redacted(want.vals)
		// b.target is what the audit event records; the marker is shown
		// unencoded here, for a person.
		target = strings.ReplaceAll(b.Target(want), string(pctEncode(nil, Redacted, false)), Redacted)
	}
	r := Rendered{Target: target, Headers: [][2]string{}}
	for _, h := range b.headers {
		r.Headers = append(r.Headers, [2]string{h.name, h.value})
	}
	switch {
	case b.body != nil:
		r.ContentType = "application/json"
		r.Body = string(b.body.appendJSON(nil, vals))
	case b.hasForm:
		r.ContentType = "application/x-www-form-urlencoded"
		form := want.form
		if redact {
			form = b.pairs(b.form, vals, true)
			for i := range form {
				form[i] = strings.ReplaceAll(form[i], string(pctEncode(nil, Redacted, true)), Redacted)
			}
		}
		r.Body = strings.Join(form, "&")
	}
	r.Values = b.ConfirmValues(&Bound{vals: vals})
	return r
}

// redacted is vals with the value of every set secret arg replaced by
// the string Redacted.
func (b *Binding) redacted(vals []argrules.Value) []argrules.Value {
	out := append([]argrules.Value(nil), vals...)
	for i, s := range b.secret {
		if s && out[i].Set {
			out[i] = argrules.Value{Set: true, Kind: jsonv.String, S: Redacted}
		}
	}
	return out
}

// appendJSON appends the body_json template rendered from vals as compact
// JSON: a string that is exactly "{arg}" as the arg's typed value, any
// other string template as a string of the values' text, a member or
// element whose string names an absent arg left out. It is the value
// equal accepts (TestRenderBodyIsBound checks that for every op).
func (n *bindNode) appendJSON(dst []byte, vals []argrules.Value) []byte {
	str := func(dst []byte, s string) []byte {
		q, _ := jsonenc.Marshal(s)
		return append(dst, q...)
	}
	if n.exact >= 0 {
		return appendTypedJSON(dst, vals[n.exact])
	}
	switch n.kind {
	case jsonv.String:
		return str(dst, text(n.pieces, vals))
	case jsonv.Number:
		return append(dst, n.num...) // the manifest's literal text, which equal requires
	case jsonv.Bool:
		return strconv.AppendBool(dst, n.b)
	case jsonv.Null:
		return append(dst, "null"...)
	case jsonv.Array:
		dst = append(dst, '[')
		first := true
		for _, e := range n.vals {
			if !e.present(vals) {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = e.appendJSON(dst, vals)
		}
		return append(dst, ']')
	case jsonv.Object:
		dst = append(dst, '{')
		first := true
		for i, e := range n.vals {
			if !e.present(vals) {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = str(dst, n.keys[i])
			dst = append(dst, ':')
			dst = e.appendJSON(dst, vals)
		}
		return append(dst, '}')
	}
	return dst
}

// appendTypedJSON appends an arg's value as a JSON value of its type: a
// string quoted, an array of its values in order, a number or boolean as
// its canonical text.
func appendTypedJSON(dst []byte, a argrules.Value) []byte {
	switch a.Kind {
	case jsonv.String:
		q, _ := jsonenc.Marshal(a.S)
		return append(dst, q...)
	case jsonv.Array:
		dst = append(dst, '[')
		for i, e := range a.A {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendTypedJSON(dst, e)
		}
		return append(dst, ']')
	}
	return a.AppendText(dst)
}

// SentArg is one arg the bound request carries.
type SentArg struct {
	// Name is the arg's name.
	Name string
	// Text is its effective value as text (given or defaulted): a string
	// as is, a number in its canonical text, a boolean as true or false,
	// an array as a JSON array of every value (["bug", "ui"]).
	Text string
	// IsString is true for a string value.
	IsString bool
	// Secret is true when the manifest marks the arg secret.
	Secret bool
}

// Sent lists the args the request want describes carries — in a path
// segment, a query or form value that is sent, or a body_json member that
// is rendered — in the op spec's order (by name). An optional arg left
// out (no value, no default) is not carried. It is what a consent must
// show besides its sentence (host.Checked.Sends).
func (b *Binding) Sent(want *Bound) []SentArg {
	used := make([]bool, len(b.args))
	mark := func(ps []bindPiece) {
		for _, p := range ps {
			if p.arg >= 0 {
				used[p.arg] = true
			}
		}
	}
	for _, seg := range b.path {
		mark(seg)
	}
	for _, kvs := range [][]bindKV{b.query, b.form} {
		for _, kv := range kvs {
			if complete(kv.pieces, want.vals) {
				mark(kv.pieces)
			}
		}
	}
	var walk func(n *bindNode)
	walk = func(n *bindNode) {
		if n == nil || !n.present(want.vals) {
			return
		}
		if n.exact >= 0 {
			used[n.exact] = true
		}
		mark(n.pieces)
		for _, c := range n.vals {
			walk(c)
		}
	}
	walk(b.body)
	var out []SentArg
	for i, v := range want.vals {
		if used[i] && v.Set {
			out = append(out, SentArg{Name: b.args[i].Name, Text: v.Text(), IsString: v.Kind == jsonv.String, Secret: b.secret[i]})
		}
	}
	return out
}
