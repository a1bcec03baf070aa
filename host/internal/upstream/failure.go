package upstream

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/host/internal/egress"
)

// Codes lists the codes an exchange can end with (Failure.Code), each
// named for what went wrong:
//
//   - api.CodeEgressDenied: the request or the connection broke the
//     egress policy — a URL net/url cannot parse, a dial to an address
//     that is not public (Failure.Deny says which);
//   - api.CodeTimeout: the op's deadline passed;
//   - api.CodeCanceled: the caller went away;
//   - api.CodeUpstreamUnreachable: DNS, connect or TLS failed; the
//     message says which step;
//   - api.CodeUpstreamError: a non-2xx answer (a 3xx with Deny
//     "redirect"), or GraphQL errors in a 2xx; the message is the
//     provider's;
//   - api.CodeUpstreamInvalid: the answer is not valid JSON, is cut short
//     or corrupt, or uses an encoding other than gzip;
//   - api.CodeUpstreamTooLarge: the decoded answer is over
//     Config.MaxResponseBytes;
//   - api.CodeResultTooLarge: the projected answer is over
//     Config.MaxResultBytes;
//   - api.CodeRateLimited: the provider asked to slow down
//     (Failure.RetryAfter).
func Codes() []api.Code {
	return []api.Code{api.CodeEgressDenied, api.CodeTimeout, api.CodeCanceled, api.CodeUpstreamUnreachable,
		api.CodeUpstreamError, api.CodeUpstreamInvalid, api.CodeUpstreamTooLarge, api.CodeResultTooLarge, api.CodeRateLimited}
}

// Failure is a failed exchange. Message is safe to show to the caller:
// it never holds the credential, Go error text or a raw upstream body.
type Failure struct {
	// Code is what went wrong, one of Codes.
	Code api.Code
	// Message says what went wrong in a sentence; for api.CodeUpstreamError, the
	// provider's own message (capped at api.MaxMessageBytes).
	Message string
	// Status is the upstream HTTP status, when there was an answer.
	Status int
	// RetryAfter is the number of seconds to wait (api.CodeRateLimited), 1
	// to 86400.
	RetryAfter int
	// Deny is the egress rule broken (api.CodeEgressDenied; "redirect" on a 3xx).
	Deny api.DenyReason
	// Applied says, on a write op's failure after its request was sent,
	// whether the write took effect.
	Applied api.Applied
	// Cause is the internal cause, for logs only: it may hold Go error
	// text and MUST NOT be sent to callers.
	Cause error

	// unsure marks a 2xx answer that does not say whether a write took
	// effect (an error envelope, "errors" twice): Applied "maybe".
	unsure bool
}

// transportFailure classifies an error of the transport or of reading
// the body: a refused dial, the deadline, a cancel, else an unreachable
// step.
func transportFailure(ctx context.Context, err error, host string) *Failure {
	var denied *egress.DialDeniedError
	switch {
	case errors.As(err, &denied):
		return &Failure{Code: api.CodeEgressDenied, Deny: api.DenyDial, Message: "the pinned host resolved to an address that is not public", Cause: err}
	case ctx.Err() == context.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded):
		return &Failure{Code: api.CodeTimeout, Message: "the provider did not answer before the op's deadline", Cause: err}
	case ctx.Err() == context.Canceled:
		return &Failure{Code: api.CodeCanceled, Message: "the op was canceled", Cause: err}
	}
	if f := answeredBadly(err); f != nil {
		return f
	}
	return &Failure{Code: api.CodeUpstreamUnreachable, Message: "the provider could not be reached: " + unreachableReason(err, host), Cause: err}
}

// answeredBadly classifies a transport error that means the provider
// was reached and answered, but not with an answer the host can take:
// headers over the transport's cap (64 KiB, egress.NewTransport), an
// HTTP/2 stream the provider reset or a connection it closed with GOAWAY,
// a malformed HTTP/1 answer. nil for any other error. net/http exports
// no type for these, so its text is matched here and never sent.
func answeredBadly(err error) *Failure {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "server response headers exceeded"),
		strings.Contains(msg, "response header list larger than advertised limit"),
		strings.Contains(msg, "connection error: COMPRESSION_ERROR"): // a header over the limit fails HPACK decoding
		return &Failure{Code: api.CodeUpstreamTooLarge, Message: "the provider's response headers are over the host's 64 KiB limit or cannot be decoded", Cause: err}
	case strings.Contains(msg, "connection error: "):
		return &Failure{Code: api.CodeUpstreamInvalid, Message: "the provider broke the HTTP/2 protocol in its answer", Cause: err}
	case strings.Contains(msg, "stream error: stream ID"):
		return &Failure{Code: api.CodeUpstreamInvalid, Message: "the provider aborted its answer (it reset the HTTP/2 stream)", Cause: err}
	case strings.Contains(msg, "http2: server sent GOAWAY"):
		return &Failure{Code: api.CodeUpstreamInvalid, Message: "the provider closed the connection before it finished answering (HTTP/2 GOAWAY)", Cause: err}
	case strings.Contains(msg, "malformed HTTP"):
		return &Failure{Code: api.CodeUpstreamInvalid, Message: "the provider's answer is not well-formed HTTP", Cause: err}
	}
	return nil
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
// to the decoded stream (a gzip bomb stops at the cap). A failure of
// no Code is a transport error, classified by the caller.
func readCapped(resp *http.Response, max int64) ([]byte, *Failure) {
	var r io.Reader = io.LimitReader(resp.Body, max+1)
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, &Failure{Code: api.CodeUpstreamInvalid, Message: "the provider's gzip stream is invalid", Cause: err}
		}
		defer zr.Close()
		r = zr
	default:
		return nil, &Failure{Code: api.CodeUpstreamInvalid, Message: "the provider used a content encoding the host does not accept"}
	}
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if int64(len(b)) > max {
		return b[:max], &Failure{Code: api.CodeUpstreamTooLarge,
			Message: fmt.Sprintf("the provider's answer is over the %d-byte limit", max)}
	}
	if err != nil {
		if errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF) {
			return b, &Failure{Code: api.CodeUpstreamInvalid, Message: "the provider's answer was cut short or corrupt", Cause: err}
		}
		return b, &Failure{Cause: err} // transport error, classified by the caller
	}
	return b, nil
}
