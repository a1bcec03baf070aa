package host

import (
	"encoding/json"

	"github.com/elevenmessenger/pinned/registry"
)

// Request is the request an op's args bind it to (request binding,
// host/internal/egress): what the host
// accepts from the guest for those args and nothing else. It is built by
// the binding code itself, so it is by construction the request the host
// checks the guest's against.
type Request struct {
	// Method is the op's HTTP method, e.g. "POST".
	Method string `json:"method"`
	// URL is "https://" + the manifest's host + the path and query as
	// sent: each {arg} path segment and every query pair percent-encoded
	// in the one canonical form the host accepts (RFC 3986: unreserved
	// characters as they are, every other byte %XX), the query pairs in
	// the order of their keys (the host accepts any order of exactly
	// these pairs). A query key whose arg is absent is left out.
	URL string `json:"url"`
	// Headers are the headers the manifest declares, by canonical name
	// (RFC 9110), sorted: the guest must send each exactly once and no
	// other. The host adds Content-Type, Accept-Encoding, User-Agent and
	// the credential header on its own; the credential is never here.
	Headers []Header `json:"headers"`
	// ContentType is the Content-Type the host sends with a body:
	// "application/json" (body_json) or
	// "application/x-www-form-urlencoded" (body_form); "" for none.
	ContentType string `json:"content_type,omitempty"`
	// Body is the body's bytes: body_json rendered as compact JSON (the
	// host compares a JSON body structurally: member order is free, the
	// members and typed values are not), or the body_form pairs joined by
	// "&" (like the query, any order). "" when the op has no body.
	Body string `json:"body,omitempty"`
	// Confirm is a write op's confirm line with the args filled in, its
	// target first, as a member's consent shows it ("" for reads;
	// Checked.Confirm).
	Confirm string `json:"confirm,omitempty"`
	// Sends is every other arg value a write's request carries, as the
	// consent shows it besides Confirm (Checked.Sends).
	Sends []Shown `json:"sends,omitempty"`
}

// Header is one declared request header.
type Header struct {
	// Name is the canonical name (RFC 9110, textproto's canonical form).
	Name string `json:"name"`
	// Value is the manifest's value, exactly.
	Value string `json:"value"`
}

// Render validates args for the op opName of m with the host's own rules
// (exactly as Run and ValidateArgs do: package argrules, defaults applied,
// args over DefaultMaxArgsBytes refused; empty args are {}) and returns
// the request they bind the op to, built by the same code that checks the
// guest's request. Nothing is sent, no guest runs and no credential is
// needed. The value of every arg the manifest marks secret is shown as
// secret.Redacted (in the URL, percent-encoded there as "[redacted]" too,
// the body and the confirm sentence).
//
// The egress policy's checks of every request's shape apply as well; the
// one a Render result can fail is the size cap (abi.MaxRequestBytes for
// the request as the guest submits it), reachable only with args near
// DefaultMaxArgsBytes that a template repeats.
//
// The error is an *Error: api.CodeUnknownOp, api.CodeBadArgs (Arg and
// Message as Run gives them), or api.CodeSandboxError when the op cannot
// be prepared.
func Render(m *registry.Manifest, opName string, args json.RawMessage) (*Request, error) {
	r, herr := render(m, opName, args, true)
	if herr != nil {
		return nil, herr
	}
	return r, nil
}

// render is Render; with redact false, secret values are shown as they
// are (for tests comparing with what a provider receives).
func render(m *registry.Manifest, opName string, args json.RawMessage, redact bool) (*Request, *Error) {
	p, herr := prepareOp(m, opName)
	if herr != nil {
		return nil, herr
	}
	_, want, herr := p.bindArgs(args, DefaultMaxArgsBytes)
	if herr != nil {
		return nil, herr
	}
	rr := p.bind.Render(want, redact)
	r := &Request{Method: p.op.Method, URL: "https://" + m.Host + rr.Target, Headers: []Header{},
		ContentType: rr.ContentType, Body: rr.Body}
	for _, h := range rr.Headers {
		r.Headers = append(r.Headers, Header{Name: h[0], Value: h[1]})
	}
	if p.op.Confirm != "" {
		r.Confirm, _, r.Sends = consent(p, want, redact)
	}
	return r, nil
}
