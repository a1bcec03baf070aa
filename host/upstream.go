package host

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/elevenmessenger/pinned/internal/display"
	"github.com/elevenmessenger/pinned/internal/egress"
	"github.com/elevenmessenger/pinned/internal/pick"
	"github.com/elevenmessenger/pinned/registry"
)

// send performs an accepted request: it injects the credential (ABI
// invariant 3), reads at most the raw cap of the decoded body, maps errors
// and rate limits, and projects a success.
func (e *Engine) send(ctx context.Context, p *prepared, r *egress.Request, cred Credential) (*Result, int64, *Error) {
	var body io.Reader
	if b, ok := r.Body(); ok {
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method(), r.URL(), body)
	if err != nil {
		// The policy accepted a URL net/url cannot parse: refuse.
		return nil, 0, &Error{Code: CodeEgressDenied, Message: "the request URL cannot be sent", Deny: egress.DenyMalformed, cause: err}
	}
	for _, h := range r.Headers() {
		req.Header.Set(h[0], h[1])
	}
	if p.policy.ContentType() != "" {
		req.Header.Set("Content-Type", p.policy.ContentType())
	}
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("User-Agent", e.cfg.UserAgent)
	name, value := authHeader(p.m, cred)
	req.Header.Set(name, value)

	resp, err := e.client.Do(req)
	if err != nil {
		return nil, 0, transportError(ctx, err, p.m.Host)
	}
	defer resp.Body.Close()

	raw, rerr := readCapped(resp, e.cfg.MaxResponseBytes)
	n := int64(len(raw))
	if rerr != nil {
		if rerr.Code == "" {
			rerr = transportError(ctx, rerr.cause, p.m.Host)
		}
		// After transportError: a write whose 2xx headers arrived before
		// the body failed was applied, and says so (markApplied).
		rerr.Status = resp.StatusCode
		return nil, n, rerr
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return nil, n, &Error{Code: CodeUpstreamError, Status: resp.StatusCode, Deny: egress.DenyRedirect,
			Message: "the provider answered with a redirect, which is not followed"}
	}
	if ra, limited := rateLimited(p.m, resp, raw); limited {
		return nil, n, &Error{Code: CodeRateLimited, Status: resp.StatusCode, RetryAfter: ra,
			Message: fmt.Sprintf("the provider asked to wait %d seconds", ra)}
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return nil, n, &Error{Code: CodeUpstreamError, Status: resp.StatusCode, Message: redactCredential(errorMessage(p, raw, resp.StatusCode), string(cred.Secret))}
	}
	if p.m.GraphQL {
		if msg, ok := graphQLError(raw, p); ok {
			return nil, n, &Error{Code: CodeUpstreamError, Status: resp.StatusCode, Message: redactCredential(msg, string(cred.Secret))}
		}
	}
	res := &Result{Status: resp.StatusCode}
	if len(bytes.TrimSpace(raw)) == 0 {
		res.Data = []byte("null")
		return res, n, nil
	}
	out, err := p.proj.Project(make([]byte, 0, 4096), raw)
	if err != nil {
		return nil, n, &Error{Code: CodeUpstreamInvalid, Status: resp.StatusCode, Message: "the provider's answer is not valid JSON", cause: err}
	}
	if len(out) > e.cfg.MaxResultBytes {
		return nil, n, &Error{Code: CodeResultTooLarge, Status: resp.StatusCode,
			Message: fmt.Sprintf("the projected result is %d bytes, over the %d-byte limit; ask for fewer items (e.g. a smaller per_page or limit)", len(out), e.cfg.MaxResultBytes)}
	}
	res.Data = out
	if p.pager != nil {
		res.cursor = p.pager.read(raw, resp.Header, r.URL())
	}
	return res, n, nil
}

// authHeader returns the header carrying the credential (DESIGN.md,
// "Manifest format v1": an oauth credential is always Bearer, RFC 6750).
func authHeader(m *registry.Manifest, c Credential) (string, string) {
	secret := string(c.Secret)
	if c.Kind == "oauth" {
		return "Authorization", "Bearer " + secret
	}
	switch m.Auth.Scheme {
	case registry.SchemeNone:
		return "Authorization", secret
	case registry.SchemeHeader:
		return m.Auth.Header, secret
	}
	return "Authorization", "Bearer " + secret
}

func transportError(ctx context.Context, err error, host string) *Error {
	var denied *egress.DialDeniedError
	switch {
	case errors.As(err, &denied):
		return &Error{Code: CodeEgressDenied, Deny: egress.DenyDial, Message: "the pinned host resolved to an address that is not public", cause: err}
	case ctx.Err() == context.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: CodeTimeout, Message: "the provider did not answer before the op's deadline", cause: err}
	case ctx.Err() == context.Canceled:
		return &Error{Code: CodeCanceled, Message: "the op was canceled", cause: err}
	}
	return &Error{Code: CodeUpstreamUnreachable, Message: "the provider could not be reached: " + unreachableReason(err, host), cause: err}
}

// unreachableReason says which step of reaching the pinned host failed —
// DNS, connect, TLS or a network timeout — so the message points at the
// fix. It names the pinned host (public, in the manifest) and never an
// address, a port other than 443, or Go error text.
func unreachableReason(err error, host string) string {
	var (
		dnsErr   *net.DNSError
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		record   tls.RecordHeaderError
		alert    tls.AlertError
		opErr    *net.OpError
		netErr   net.Error
	)
	switch {
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "DNS: " + host + " does not resolve (no such host); check this machine's resolver"
		}
		return "DNS: the lookup of " + host + " failed; check this machine's resolver and network"
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid):
		return "TLS: " + host + " was reached but its certificate was not accepted (an unknown authority, another name, or expired); a TLS-intercepting proxy or a wrong system clock does this"
	case errors.As(err, &record), errors.As(err, &alert), strings.Contains(err.Error(), "tls: "),
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		// crypto/tls reports a refused version or a non-TLS answer as a
		// plain error; its text is matched here and never sent.
		return "TLS: the handshake with " + host + " failed (no TLS 1.2 or later there, or not an HTTPS server)"
	case errors.As(err, &opErr) && opErr.Op == "dial":
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			return "connect: " + host + ":443 refused the connection"
		case opErr.Timeout():
			return "connect: connecting to " + host + ":443 timed out; check the network or firewall"
		}
		return "connect: no connection to " + host + ":443 (network unreachable?); check the network or firewall"
	case errors.As(err, &netErr) && netErr.Timeout():
		if strings.Contains(err.Error(), "TLS handshake timeout") {
			return "timeout: the TLS handshake with " + host + " timed out"
		}
		return "timeout: " + host + " stopped answering (a network timeout)"
	}
	return "the connection to " + host + " failed"
}

// readCapped reads the decoded body, at most max bytes. Content-Encoding
// is the host's: only identity and gzip are accepted, and the cap applies
// to the decoded stream (a gzip bomb stops at the cap).
func readCapped(resp *http.Response, max int64) ([]byte, *Error) {
	var r io.Reader = io.LimitReader(resp.Body, max+1)
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, &Error{Code: CodeUpstreamInvalid, Message: "the provider's gzip stream is invalid", cause: err}
		}
		defer zr.Close()
		r = zr
	default:
		return nil, &Error{Code: CodeUpstreamInvalid, Message: "the provider used a content encoding the host does not accept"}
	}
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if int64(len(b)) > max {
		return b[:max], &Error{Code: CodeUpstreamTooLarge,
			Message: fmt.Sprintf("the provider's answer is over the %d-byte limit", max)}
	}
	if err != nil {
		if errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF) {
			return b, &Error{Code: CodeUpstreamInvalid, Message: "the provider's answer was cut short or corrupt", cause: err}
		}
		return b, &Error{cause: err} // transport error, classified by the caller
	}
	return b, nil
}

// rateLimited recognizes the rate limits of DESIGN.md: HTTP 429, GitHub's
// 403 secondary limit (Retry-After, or X-RateLimit-Remaining: 0), and a
// GraphQL error with extensions.code RATELIMITED (Linear, HTTP 400 or 200).
// It returns the seconds to wait (at least 1).
func rateLimited(m *registry.Manifest, resp *http.Response, raw []byte) (int, bool) {
	h := resp.Header
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
	case resp.StatusCode == http.StatusForbidden && (h.Get("Retry-After") != "" || h.Get("X-RateLimit-Remaining") == "0"):
	case m.GraphQL && graphQLRateLimitedBody(raw):
	default:
		return 0, false
	}
	return retryAfter(h, time.Now()), true
}

// retryAfter reads Retry-After (delta-seconds or HTTP-date, RFC 9110
// section 10.2.3), then X-RateLimit-Reset (epoch seconds, GitHub), then
// X-RateLimit-Requests-Reset (epoch milliseconds, Linear); default 60.
func retryAfter(h http.Header, now time.Time) int {
	clamp := func(s int64) int {
		if s < 1 {
			return 1
		}
		if s > 86400 {
			return 86400
		}
		return int(s)
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return clamp(n)
		}
		if t, err := http.ParseTime(v); err == nil {
			return clamp(int64(t.Sub(now).Seconds() + 0.999))
		}
	}
	if v := h.Get("X-RateLimit-Reset"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return clamp(n - now.Unix())
		}
	}
	if v := h.Get("X-RateLimit-Requests-Reset"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return clamp((n - now.UnixMilli() + 999) / 1000)
		}
	}
	return 60
}

func graphQLRateLimitedBody(raw []byte) bool {
	_, limited := pick.GraphQLErrors(raw)
	return limited
}

// graphQLError reports a 200 answer that carries a non-empty errors array.
func graphQLError(raw []byte, p *prepared) (string, bool) {
	if present, _ := pick.GraphQLErrors(raw); !present {
		return "", false
	}
	if msg, ok := pick.FindString(raw, p.errMsg); ok && msg != "" {
		return capMessage(msg), true
	}
	return "the provider answered with GraphQL errors", true
}

// errorMessage projects the human message of an error body through the
// manifest's error_message path, followed by the field-level details at
// its error_details path in parentheses ("Validation failed
// (registrant_id: is invalid)"), capped together at MaxErrorMessageBytes.
// The raw body never comes back.
func errorMessage(p *prepared, raw []byte, status int) string {
	msg, _ := pick.FindString(raw, p.errMsg)
	if msg = capMessage(msg); msg == "" {
		if msg = http.StatusText(status); msg == "" {
			msg = "HTTP " + strconv.Itoa(status)
		}
	}
	if p.m.ErrorDetails != "" {
		if d := errorDetails(raw, splitPath(p.m.ErrorDetails)); d != "" {
			msg += " (" + d + ")"
		}
	}
	return capMessage(msg)
}

// errorDetails renders the value at path of an error body as
// "key: text; key: text": every string, number or boolean in it after the
// nearest object key above it (object keys sorted), for example
// {"registrant_id": ["is invalid"], "name": ["is too long"]} →
// "name: is too long; registrant_id: is invalid", and GitHub's
// [{"resource": "Issue", "field": "title", "code": "missing_field"}] →
// "code: missing_field; field: title; resource: Issue". "" when there is
// nothing there or it is over maxDetailsBytes; the caller caps the text.
func errorDetails(raw []byte, path []string) string {
	v, ok := pick.FindValue(raw, path)
	if !ok || len(v) > maxDetailsBytes {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var tree any
	if dec.Decode(&tree) != nil {
		return ""
	}
	key := ""
	if len(path) > 0 {
		key = path[len(path)-1]
	}
	var parts []string
	var walk func(v any, key string, depth int)
	walk = func(v any, key string, depth int) {
		if depth > pick.MaxDepth || len(parts) >= 64 {
			return
		}
		var text string
		switch t := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(t)) {
				walk(t[k], k, depth+1)
			}
			return
		case []any:
			for _, e := range t {
				walk(e, key, depth+1)
			}
			return
		case string:
			text = strings.TrimSpace(t)
		case json.Number:
			text = t.String()
		case bool:
			text = strconv.FormatBool(t)
		default:
			return
		}
		if text != "" {
			parts = append(parts, key+": "+text)
		}
	}
	walk(tree, key, 0)
	return strings.Join(parts, "; ")
}

// maxDetailsBytes bounds the error details value decoded for the message:
// past it the details are left out (the message still comes back).
const maxDetailsBytes = 64 << 10

// redactedWord replaces a word of an upstream message that echoes the
// credential.
const redactedWord = "[redacted]"

// redactCredential replaces every word (a run of non-space characters) of
// an upstream message that echoes the op's credential: one holding 8 or
// more consecutive characters of it, or a masked echo — a word with '*'
// that starts with the credential's first 4 characters or ends with its
// last 4 (Stripe answers a bad key with "Invalid API Key provided:
// sk_test_****abcd"). The message goes to the bot, which must never see
// any part of the credential.
func redactCredential(msg, secret string) string {
	if len(secret) < 4 || msg == "" {
		return msg
	}
	echoes := func(w string) bool {
		if strings.Contains(w, "*") {
			t := strings.Trim(w, `"'.,;:()[]{}<>`)
			if strings.HasPrefix(t, secret[:4]) || strings.HasSuffix(t, secret[len(secret)-4:]) {
				return true
			}
		}
		const n = 8
		if len(secret) < n {
			return strings.Contains(w, secret)
		}
		for i := 0; i+n <= len(secret); i++ {
			if strings.Contains(w, secret[i:i+n]) {
				return true
			}
		}
		return false
	}
	words := strings.Fields(msg)
	changed := false
	for i, w := range words {
		if echoes(w) {
			words[i], changed = redactedWord, true
		}
	}
	if !changed {
		return msg
	}
	return strings.Join(words, " ")
}

// capMessage renders upstream text as a message (internal/display: every
// rune that is not visible text becomes a space) capped at
// MaxErrorMessageBytes on a UTF-8 boundary, marking a cut with "…". The
// message is upstream text a terminal or a chat client will show.
func capMessage(s string) string { return display.Message(s, MaxErrorMessageBytes) }

func splitPath(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, ".")
}
