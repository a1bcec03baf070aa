// Package egress is the host's rule of what may leave the sandbox (ABI
// invariants 2 and 4; docs/SECURITY.md): the guest's request decoded
// (DecodeRequest) and held to the shape of its op (Policy: method, the
// pinned host, the path template, encodings, body kind, no header the host
// owns), then to exactly the request the caller's validated args render
// from the manifest's templates (Binding: request binding, bind.go), and
// the dialer that connects only to public addresses of the pinned host
// (Dialer, PublicAddr) under the one HTTP transport (no proxy, TLS 1.2 or
// later, compression owned by the host). Refusals are host/api's
// DenyReason values, which the host reports as they are.
//
// It imports registry, host/api, internal/abi, internal/argrules,
// internal/jsonv and internal/jsonenc; only the host and its internal
// packages import it.
package egress

import (
	"bytes"
	"net/textproto"
	"slices"
	"strings"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/jsonv"
	"github.com/elevenmessenger/pinned/registry"
)

// Request is the guest's request as DecodeRequest read it; once Admit
// accepted it (Policy.Check, then Binding.Check), the one the host sends.
// It is read-only: its parts are read through its methods, which return
// copies, so an admitted request stays the one the checks saw.
type Request struct {
	method  string
	url     string
	headers [][2]string
	body    []byte
	hasBody bool
	json    *jsonv.Value // the parsed body of a body_json op (set by the policy)
	// admitted is the pinned host Admit accepted the request for; "" until
	// then. The upstream exchange sends nothing else (Admitted).
	admitted string
	// hbuf is headers' storage while it fits: a request carries a few.
	hbuf [4][2]string
}

// Method is the request's HTTP method.
func (r *Request) Method() string { return r.method }

// URL is the request's absolute URL ("https://" + the pinned host + path
// and query), exactly as the guest wrote it.
func (r *Request) URL() string { return r.url }

// Headers are the guest's headers, [name, value], in its order (a copy).
func (r *Request) Headers() [][2]string { return slices.Clone(r.headers) }

// Body is the request body (a copy) and whether there is one.
func (r *Request) Body() ([]byte, bool) { return bytes.Clone(r.body), r.hasBody }

// Admit runs every check a guest's request must pass before it may be
// sent, in the one order: the policy (Policy.Check: the shape any request
// of the op must have, the pinned host first), then the binding
// (Binding.Check: exactly the request want renders; it reads the URL
// past the pinned host, so it runs only on what the policy accepted). A
// request Admit accepts is marked admitted for the policy's pinned host;
// it returns the rule broken otherwise (api.DenyNotBound for the binding, or
// with no binding) and r stays unadmitted. pin_v1.request calls it
// (host/internal/sandbox), and the upstream exchange sends only an admitted
// request, to the host it was admitted for.
func Admit(p *Policy, b *Binding, want *Bound, r *Request) api.DenyReason {
	if d := p.Check(r); d != "" {
		return d
	}
	if b == nil || !b.Check(want, r, p.Host()) {
		return api.DenyNotBound
	}
	r.admitted = p.host
	return ""
}

// Admitted reports whether Admit accepted r for the pinned host host.
func (r *Request) Admitted(host string) bool { return r.admitted != "" && r.admitted == host }

// Policy is what the request check needs of one op, precomputed. It
// holds every request to the shape any request must have (the pinned
// host, the path's literal segments, well-formed encodings, no header the
// host owns); bind.go then holds it to the exact request the caller's
// args render.
type Policy struct {
	host        string
	method      string
	segments    []pathSeg
	bodyKind    string // "", "json", "form"
	authHeader  string // canonical name of the credential header
	contentType string
	// repeat holds the query keys that may come more than once: those
	// whose template is exactly an exploded array arg (the key repeated
	// per value, OpenAPI 3 style form). The binding holds their values to
	// the args, in order.
	repeat []string
}

type pathSeg struct {
	lit string
	arg bool
}

// NewPolicy compiles the request check of op of m: its method, the
// pinned host, the path template's segments, the body kind and the
// credential header. The error is a template the loader would refuse.
func NewPolicy(m *registry.Manifest, op *registry.Op) (*Policy, error) {
	p := &Policy{
		host:       m.Host,
		method:     op.Method,
		bodyKind:   op.BodyKind(),
		authHeader: "Authorization",
	}
	if m.Auth.Scheme == registry.SchemeHeader {
		p.authHeader = textproto.CanonicalMIMEHeaderKey(m.Auth.Header)
	}
	for _, seg := range strings.Split(op.Path, "/")[1:] {
		pieces, err := registry.ParseTemplate(seg)
		if err != nil {
			return nil, err
		}
		if len(pieces) == 1 && pieces[0].Arg != "" {
			p.segments = append(p.segments, pathSeg{arg: true})
		} else {
			p.segments = append(p.segments, pathSeg{lit: seg})
		}
	}
	for _, k := range op.QueryKeys() {
		if t := op.Query[k]; len(t) > 2 && t[0] == '{' && t[len(t)-1] == '}' {
			if a := op.Args[t[1:len(t)-1]]; a != nil && a.Type == registry.TypeArray && a.Delimiter() == 0 {
				p.repeat = append(p.repeat, k)
			}
		}
	}
	switch p.bodyKind {
	case "json":
		p.contentType = "application/json"
	case "form":
		p.contentType = "application/x-www-form-urlencoded"
	}
	return p, nil
}

// Host is the pinned host (the manifest's host) every request must name.
func (p *Policy) Host() string { return p.host }

// ContentType is the Content-Type the host sends with the op's body:
// "application/json", "application/x-www-form-urlencoded" or "" (none).
func (p *Policy) ContentType() string { return p.contentType }

// DecodeRequest decodes the guest's request encoding (docs/ABI.md, "The
// request"): a JSON object with exactly the members method (string), url
// (string), headers (array of [name, value] string pairs) and optionally
// body (string). Anything else is api.DenyMalformed: what jsonv.Parse
// refuses (invalid JSON or UTF-8, a duplicate key, trailing data), another
// member or another type. It reads the one shape it accepts directly,
// without building a jsonv.Value tree (a third of the host's work per op
// went to the tree); FuzzDecodeRequest checks it against that tree,
// decodeRequestTree, on every input.
func DecodeRequest(b []byte) (*Request, api.DenyReason) {
	d := requestDecoder{b: b}
	r, ok := d.request()
	if !ok {
		return nil, api.DenyMalformed
	}
	return r, ""
}

// requestDecoder reads DecodeRequest's shape: jsonv's strings, RFC
// 8259's white space.
type requestDecoder struct {
	b []byte
	i int
}

func (d *requestDecoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next consumes c after white space, if it is next.
func (d *requestDecoder) next(c byte) bool {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// str consumes a string after white space, decoded by
// jsonv.DecodeString (as jsonv.Parse decodes a string alone).
func (d *requestDecoder) str() (string, bool) {
	d.ws()
	n, s, ok := jsonv.DecodeString(d.b[d.i:])
	if !ok {
		return "", false
	}
	d.i += n
	return s, true
}

func (d *requestDecoder) request() (*Request, bool) {
	const (
		haveMethod = 1 << iota
		haveURL
		haveHeaders
		haveBody
		required = haveMethod | haveURL | haveHeaders
	)
	if !d.next('{') {
		return nil, false
	}
	r := &Request{}
	have := 0
	for !d.next('}') {
		if have != 0 && !d.next(',') {
			return nil, false
		}
		k, ok := d.str()
		if !ok || !d.next(':') {
			return nil, false
		}
		var bit int
		switch k {
		case "method":
			bit = haveMethod
			r.method, ok = d.str()
		case "url":
			bit = haveURL
			r.url, ok = d.str()
		case "headers":
			bit = haveHeaders
			ok = d.headers(r)
		case "body":
			bit = haveBody
			var s string
			s, ok = d.str()
			r.body, r.hasBody = []byte(s), true
		default:
			return nil, false
		}
		if !ok || have&bit != 0 { // a duplicate key: jsonv refuses it
			return nil, false
		}
		have |= bit
	}
	d.ws()
	if d.i != len(d.b) || have&required != required {
		return nil, false
	}
	return r, true
}

// headers consumes an array of [name, value] string pairs.
func (d *requestDecoder) headers(r *Request) bool {
	if !d.next('[') {
		return false
	}
	for first := true; !d.next(']'); first = false {
		if !first && !d.next(',') {
			return false
		}
		if !d.next('[') {
			return false
		}
		name, ok := d.str()
		if !ok || !d.next(',') {
			return false
		}
		value, ok := d.str()
		if !ok || !d.next(']') {
			return false
		}
		if r.headers == nil {
			r.headers = r.hbuf[:0]
		}
		r.headers = append(r.headers, [2]string{name, value})
	}
	return true
}

// Check applies ABI invariant 2 to a decoded request: the request's
// shape. It returns "" when the request may go on to the binding check
// (bind.go), which decides whether it is sent.
func (p *Policy) Check(r *Request) api.DenyReason {
	if r.method != p.method {
		return api.DenyMethod
	}
	if d := p.checkURL(r.url); d != "" {
		return d
	}
	if d := p.checkBody(r); d != "" {
		return d
	}
	return p.checkHeaders(r.headers)
}

func (p *Policy) checkURL(u string) api.DenyReason {
	for i := 0; i < len(u); i++ {
		if c := u[i]; c <= 0x20 || c >= 0x7f {
			return api.DenyURLChar
		}
	}
	if strings.IndexByte(u, '#') >= 0 {
		return api.DenyFragment
	}
	const scheme = "https://"
	if len(u) < len(scheme) || u[:len(scheme)] != scheme {
		return api.DenyScheme
	}
	rest := u[len(scheme):]
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	authority := rest[:end]
	if authority != p.host {
		switch {
		case strings.IndexByte(authority, '@') >= 0:
			return api.DenyUserinfo
		case hasPort(authority):
			return api.DenyPort
		}
		return api.DenyHost
	}
	rest = rest[end:]
	if rest == "" || rest[0] != '/' {
		return api.DenyPath
	}
	path, query, hasQuery := strings.Cut(rest, "?")
	if d := p.checkPath(path); d != "" {
		return d
	}
	if hasQuery {
		return p.checkQuery(query)
	}
	return ""
}

// hasPort reports whether an authority ends in ":digits" (after any
// bracketed IPv6 literal).
func hasPort(a string) bool {
	i := strings.LastIndexByte(a, ':')
	if i < 0 || strings.IndexByte(a[i:], ']') >= 0 {
		return false
	}
	return true
}

func (p *Policy) checkPath(path string) api.DenyReason {
	rest := path[1:]
	if strings.Count(rest, "/")+1 != len(p.segments) {
		return api.DenyPath
	}
	k := 0
	for seg := range strings.SplitSeq(rest, "/") { // no slice of segments per op
		t := p.segments[k]
		k++
		if !t.arg {
			if seg != t.lit {
				return api.DenyPath
			}
			continue
		}
		if seg == "" {
			return api.DenyPath
		}
		for i := 0; i < len(seg); i++ {
			if !isExecutorByte(seg[i]) { // e.g. ";" (path parameters), sub-delims
				return api.DenyPath
			}
		}
		dec, ok := percentDecode(seg)
		if !ok {
			return api.DenyPathEncoding
		}
		if strings.ContainsAny(dec, "/\\") {
			return api.DenyEncodedSlash
		}
		if dec == "." || dec == ".." {
			return api.DenyDotSegment
		}
	}
	return ""
}

func isUnreserved(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// percentDecode decodes %XX escapes; ok is false for a malformed escape.
// It does not treat '+' as a space.
func percentDecode(s string) (string, bool) {
	if strings.IndexByte(s, '%') < 0 {
		return s, true
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			out = append(out, s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		h, ok1 := unhex(s[i+1])
		l, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return "", false
		}
		out = append(out, h<<4|l)
		i += 2
	}
	return string(out), true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// checkQuery: pairs of key=value joined by "&", in the executor's
// alphabet only (unreserved characters and %XX: no ";", which some
// servers also split on), valid encoding, no key twice but an exploded
// array arg's. Which keys and values is the binding's check (bind.go).
func (p *Policy) checkQuery(q string) api.DenyReason {
	if q == "" {
		return api.DenyQuerySyntax
	}
	seen := make(map[string]bool, 4)
	for pair := range strings.SplitSeq(q, "&") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok || k == "" {
			return api.DenyQuerySyntax
		}
		for i := 0; i < len(pair); i++ {
			if c := pair[i]; !isExecutorByte(c) && c != '=' {
				return api.DenyQuerySyntax
			}
		}
		key, ok1 := percentDecode(k)
		_, ok2 := percentDecode(v)
		if !ok1 || !ok2 {
			return api.DenyQuerySyntax
		}
		if seen[key] && !slices.Contains(p.repeat, key) {
			return api.DenyQueryDuplicate
		}
		seen[key] = true
	}
	return ""
}

func (p *Policy) checkBody(r *Request) api.DenyReason {
	switch {
	case p.bodyKind == "" && r.hasBody:
		return api.DenyBodyNotAllowed
	case p.bodyKind != "" && !r.hasBody:
		return api.DenyBodyMissing
	case p.bodyKind == "json":
		v, err := jsonv.Parse(r.body)
		if err != nil || v.Kind != jsonv.Object {
			return api.DenyBodyInvalid
		}
		r.json = &v
	case p.bodyKind == "form":
		if len(r.body) == 0 {
			return ""
		}
		seen := make(map[string]bool, 4)
		for _, pair := range strings.Split(string(r.body), "&") {
			k, v, ok := strings.Cut(pair, "=")
			if !ok || k == "" {
				return api.DenyBodyInvalid
			}
			for i := 0; i < len(pair); i++ {
				if c := pair[i]; !isExecutorByte(c) && c != '+' && c != '=' {
					return api.DenyBodyInvalid
				}
			}
			key, ok1 := percentDecode(strings.ReplaceAll(k, "+", " "))
			_, ok2 := percentDecode(strings.ReplaceAll(v, "+", " "))
			if !ok1 || !ok2 || seen[key] {
				return api.DenyBodyInvalid
			}
			seen[key] = true
		}
	}
	return ""
}

// isExecutorByte reports whether c may appear in a percent-encoded value
// the executor renders: RFC 3986 unreserved characters and "%" (of %XX).
// The executor encodes every other byte, so anything else in an
// argument's place is not its output.
func isExecutorByte(c byte) bool {
	return isUnreserved(c) || c == '%'
}

// ForbiddenHeader reports whether a canonical header name is the host's:
// registry.HostOwnedHeader (the one list, shared with the manifest
// loader) or the manifest's credential header (ABI invariant 2); the guest
// may not send them whatever the manifest says.
func (p *Policy) ForbiddenHeader(name string) bool {
	return registry.HostOwnedHeader(name) || name == p.authHeader
}

func (p *Policy) checkHeaders(hs [][2]string) api.DenyReason {
	seen := make(map[string]bool, len(hs))
	for _, h := range hs {
		if !validToken(h[0]) {
			return api.DenyHeaderInvalid
		}
		name := textproto.CanonicalMIMEHeaderKey(h[0])
		if p.ForbiddenHeader(name) {
			return api.DenyHeaderForbidden
		}
		for i := 0; i < len(h[1]); i++ {
			if c := h[1][i]; (c < 0x20 && c != '\t') || c == 0x7f {
				return api.DenyHeaderInvalid
			}
		}
		if seen[name] {
			return api.DenyHeaderDuplicate
		}
		seen[name] = true
	}
	return ""
}

// validToken reports whether s is an RFC 9110 token (a header field name).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isUnreserved(c) {
			continue
		}
		switch c {
		case '!', '#', '$', '%', '&', '\'', '*', '+', '^', '`', '|':
			continue
		}
		return false
	}
	return true
}
