// Package upstream is the exchange with the provider, the origin server
// of RFC 9110 ("upstream" is HTTP's word for it): it sends a request the
// egress checks accepted (host/internal/egress) with the credential injected
// after them (ABI invariant 3), reads at most the raw cap of the decoded
// answer, classifies what went wrong — an unreachable step, a rate limit
// with its Retry-After, a non-2xx answer with the manifest's
// error_message and error_details, GraphQL errors, an answer too large
// or invalid — with a message safe to show (the credential redacted,
// never Go error text or a raw body), tracks whether a write's request
// went out (Applied), and projects a success (host/internal/pick).
//
// A failure carries the host's code (host/api) as it is. It imports
// host/api, the registry, host/internal/egress, host/internal/pick,
// internal/display and secret; only the host imports it.
package upstream

import (
	"bytes"
	"context"
	"fmt"
	"github.com/elevenmessenger/pinned/internal/tracing"
	"io"
	"net/http"
	"strings"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/host/internal/egress"
	"github.com/elevenmessenger/pinned/host/internal/pick"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/secret"
)

// Config configures a Client.
type Config struct {
	// Transport carries every request: the egress transport
	// (egress.NewTransport), which dials only public addresses of the
	// pinned host.
	Transport http.RoundTripper
	// UserAgent is sent with every request.
	UserAgent string
	// MaxResponseBytes caps the decoded body of an answer, in bytes.
	MaxResponseBytes int64
	// MaxResultBytes caps the projected result, in bytes.
	MaxResultBytes int
}

// Client sends ops' requests. It is safe for concurrent use.
type Client struct {
	http             *http.Client
	userAgent        string
	maxResponseBytes int64
	maxResultBytes   int
}

// NewClient returns a client over cfg.Transport that follows no redirect
// (ABI invariant 4: a 3xx is the answer, and a failure).
func NewClient(cfg Config) *Client {
	return &Client{
		http: &http.Client{
			Transport:     cfg.Transport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		userAgent:        cfg.UserAgent,
		maxResponseBytes: cfg.MaxResponseBytes,
		maxResultBytes:   cfg.MaxResultBytes,
	}
}

// CloseIdleConnections closes the transport's idle connections.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// Op is what the exchange needs of one op, prepared once: where the
// credential goes, how errors are read, the projection.
type Op struct {
	m           *registry.Manifest
	contentType string
	write       bool
	errMsg      []string // the error_message path
	proj        *pick.Projection
}

// NewOp prepares op of m. contentType is the Content-Type sent with a
// body (egress.Policy.ContentType; "" for none).
func NewOp(m *registry.Manifest, op *registry.Op, contentType string) *Op {
	return &Op{
		m: m, contentType: contentType, write: op.Access == registry.AccessWrite,
		errMsg: splitPath(m.ErrorMessagePath()), proj: pick.New(op.Pick.Root, op.Pick.Fields),
	}
}

// Answer is a successful exchange: a 2xx answer, projected.
type Answer struct {
	// Status is the HTTP status (2xx).
	Status int
	// Data is the projected answer ("null" when the body was empty).
	Data []byte
	// Body is the decoded body, nil when it was empty: for reading the
	// paging cursor beside the pick. It MUST NOT be passed on.
	Body []byte
	// Header is the answer's header.
	Header http.Header
}

// Send performs r, a request the egress checks admitted for op's pinned
// host (egress.Admit; any other is refused, api.CodeEgressDenied with DenyNotBound,
// and nothing is sent), with the credential (kind "oauth" is always
// Bearer, RFC 6750; else the manifest's auth scheme) injected after them. It returns the answer or
// the failure, and the decoded size of the body read either way. For a
// write op whose request was written to a connection, a failure carries
// Applied.
func (c *Client) Send(ctx context.Context, op *Op, r *egress.Request, kind string, user, cred secret.Secret) (*Answer, int64, *Failure) {
	if !op.write {
		return c.send(ctx, op, r, kind, user, cred)
	}
	var sent sentTracker
	ans, n, f := c.send(sent.trace(ctx), op, r, kind, user, cred)
	markApplied(f, sent.wrote.Load())
	return ans, n, f
}

func (c *Client) send(ctx context.Context, op *Op, r *egress.Request, kind string, user, cred secret.Secret) (*Answer, int64, *Failure) {
	if !r.Admitted(op.m.Host) {
		// Only what the egress checks admitted for this op's pinned host
		// goes out with its credential (egress.Admit).
		return nil, 0, &Failure{Code: api.CodeEgressDenied, Message: "the request was not admitted by the egress checks", Deny: api.DenyNotBound}
	}
	var body io.Reader
	if b, ok := r.Body(); ok {
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method(), r.URL(), body)
	if err != nil {
		// The policy accepted a URL net/url cannot parse: refuse.
		return nil, 0, &Failure{Code: api.CodeEgressDenied, Message: "the request URL cannot be sent", Deny: api.DenyMalformed, Cause: err}
	}
	for _, h := range r.Headers() {
		req.Header.Set(h[0], h[1])
	}
	if op.contentType != "" {
		req.Header.Set("Content-Type", op.contentType)
	}
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("User-Agent", c.userAgent)
	name, value := authHeader(op.m, kind, user, cred)
	secrets := credentialForms(op.m, kind, user, cred)
	req.Header.Set(name, value)

	_, span := tracing.Start(ctx, tracing.SpanUpstream)
	resp, err := c.http.Do(req)
	if err != nil {
		f := transportFailure(ctx, err, op.m.Host)
		span.Fail(string(f.Code))
		span.End()
		return nil, 0, f
	}
	defer resp.Body.Close()

	raw, rerr := readCapped(resp, c.maxResponseBytes)
	n := int64(len(raw))
	if span.Recording() {
		endUpstreamSpan(span, resp.StatusCode, n, rerr)
	}
	if rerr != nil {
		if rerr.Code == "" {
			rerr = transportFailure(ctx, rerr.Cause, op.m.Host)
		}
		// After transportFailure: a write whose 2xx headers arrived
		// before the body failed was applied, and says so (markApplied).
		rerr.Status = resp.StatusCode
		return nil, n, rerr
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return nil, n, &Failure{Code: api.CodeUpstreamError, Status: resp.StatusCode, Deny: api.DenyRedirect,
			Message: "the provider answered with a redirect, which is not followed"}
	}
	if ra, limited := rateLimited(op.m, resp, raw); limited {
		return nil, n, &Failure{Code: api.CodeRateLimited, Status: resp.StatusCode, RetryAfter: ra,
			Message: fmt.Sprintf("the provider asked to wait %d seconds", ra)}
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return nil, n, &Failure{Code: api.CodeUpstreamError, Status: resp.StatusCode, Message: redactAll(errorMessage(op, raw, resp.StatusCode), secrets)}
	}
	if op.m.GraphQL {
		if _, _, dup := pick.GraphQLErrors(raw); dup {
			return nil, n, &Failure{Code: api.CodeUpstreamInvalid, Status: resp.StatusCode, unsure: true,
				Message: `the provider's answer has "errors" twice, so whether it failed cannot be told`}
		}
		if msg, ok := graphQLError(raw, op); ok {
			return nil, n, &Failure{Code: api.CodeUpstreamError, Status: resp.StatusCode, Message: redactAll(msg, secrets)}
		}
	}
	ans := &Answer{Status: resp.StatusCode, Header: resp.Header}
	if len(bytes.TrimSpace(raw)) == 0 {
		ans.Data = []byte("null")
		return ans, n, nil
	}
	_, pspan := tracing.Start(ctx, tracing.SpanPick)
	// The projection keeps a subset of the answer's fields, so it is
	// rarely longer than the answer: a small answer gets a small buffer
	// (held until the result is written), a large one starts at 4 KiB
	// and grows.
	out, err := op.proj.Project(make([]byte, 0, min(len(raw), 4096)), raw)
	if pspan.Recording() {
		endPickSpan(pspan, len(out), err)
	}
	if err != nil {
		msg := "the provider's answer is not valid JSON"
		if d := pick.Disagreement(err); d != "" {
			msg = "the provider's answer holds what JSON readers disagree on: " + d
		}
		return nil, n, &Failure{Code: api.CodeUpstreamInvalid, Status: resp.StatusCode, Message: msg, Cause: err}
	}
	if msg, ok := errorEnvelope(op, out, raw); ok {
		// A 2xx whose body is the provider's error envelope, nothing the
		// pick names in it: a failure, never an empty success.
		return nil, n, &Failure{Code: api.CodeUpstreamError, Status: resp.StatusCode, unsure: true, Message: redactAll(msg, secrets)}
	}
	if len(out) > c.maxResultBytes {
		return nil, n, &Failure{Code: api.CodeResultTooLarge, Status: resp.StatusCode,
			Message: fmt.Sprintf("the projected result is %d bytes, over the %d-byte limit; ask for fewer items (e.g. a smaller per_page or limit)", len(out), c.maxResultBytes)}
	}
	ans.Data, ans.Body = out, raw
	return ans, n, nil
}

// authHeader returns the header carrying the credential (DESIGN.md,
// "Manifest format v1": an oauth credential is always Bearer, RFC 6750).
func authHeader(m *registry.Manifest, kind string, user, cred secret.Secret) (string, string) {
	if kind == "oauth" {
		return "Authorization", "Bearer " + string(cred)
	}
	return m.Auth.Present(string(user), string(cred))
}

// credentialForms are the spellings of a credential an error message
// must not repeat: the secret, the user part, and HTTP Basic's encoded
// pair.
func credentialForms(m *registry.Manifest, kind string, user, cred secret.Secret) []string {
	out := []string{string(cred)}
	if user != "" && kind != "oauth" {
		out = append(out, string(user))
		if m.Auth.Scheme == registry.SchemeBasic {
			out = append(out, m.Auth.BasicEncoded(string(user), string(cred)))
		}
	}
	return out
}

// redactAll is Redact for each of secrets in turn.
func redactAll(msg string, secrets []string) string {
	for _, s := range secrets {
		msg = Redact(msg, s)
	}
	return msg
}

func splitPath(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, ".")
}
