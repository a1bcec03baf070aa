// Package httperr is the one HTTP error model of pinned's services (the
// sidecar, the broker, and `pinned web`): a typed code, one status table
// per service ([Statuses]), an internal cause that is logged and never
// sent, and one JSON writer that puts the request id in every error body.
//
// Each service declares its own code type (type Code string) and one
// Statuses[Code] table, so a code of one service cannot be answered by
// another, and a status is chosen in exactly one place.
//
// The wire shape of an error answer is
//
//	{"error": {"code": "<code>", "message": "<human text>",
//	           "request_id": "<X-Request-Id>", "retry_after": <seconds>}}
//
// with the service's own members beside them (the sidecar adds
// upstream_status and arg). code is stable and documented per service
// (docs/API.md, docs/OAUTH.md; each service has a test that its doc lists
// every code of its table, built on [DocumentedCodes]); message is for
// humans and never holds a secret, Go error text or an upstream body.
//
// It imports only internal/jsonenc of the project's.
package httperr

import (
	"net/http"
	"regexp"
	"slices"
	"strconv"

	"github.com/elevenmessenger/pinned/internal/jsonenc"
)

// StatusClientClosed is the status logged when the caller went away
// before the answer (nginx's 499); no client sees it.
const StatusClientClosed = 499

// RequestIDHeader is the header carrying the request id; its value on the
// response (set by the service's request-id middleware before any handler
// runs) is copied into every error body's request_id.
const RequestIDHeader = "X-Request-Id"

// Statuses is a service's status table: every code it answers with and its
// HTTP status. It is the only place a status is chosen. C is the service's
// code type: the stable, machine-readable kind of an error answer, which
// clients branch on (never on the message).
type Statuses[C ~string] map[C]int

// Status returns c's status, or 500 for a code not in the table.
func (t Statuses[C]) Status(c C) int {
	if s, ok := t[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Codes returns every code of the table, sorted.
func (t Statuses[C]) Codes() []C {
	out := make([]C, 0, len(t))
	for c := range t {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// New returns an error with code, its status from t, and msg.
func (t Statuses[C]) New(code C, msg string) *Error[C] {
	return &Error[C]{Status: t.Status(code), Code: code, Message: msg}
}

// Error is an error answer. Status, Code, Message and RetryAfter are sent;
// the cause is only logged.
type Error[C ~string] struct {
	// Status is the HTTP status (from the service's [Statuses]).
	Status int
	// Code is the stable code.
	Code C
	// Message is for humans: safe to show to anyone.
	Message string
	// RetryAfter, when positive, is whole seconds to wait: sent as
	// retry_after and as the Retry-After header (RFC 9110 section 10.2.3).
	RetryAfter int

	cause error
}

// WithCause attaches the internal cause (logged, never sent) and returns e.
func (e *Error[C]) WithCause(err error) *Error[C] {
	e.cause = err
	return e
}

// Cause returns the internal cause, for logs only.
func (e *Error[C]) Cause() error { return e.cause }

// Unwrap returns the cause, so errors.Is and errors.As see through e.
func (e *Error[C]) Unwrap() error { return e.cause }

func (e *Error[C]) Error() string {
	s := string(e.Code) + ": " + e.Message
	if e.cause != nil {
		s += " (" + e.cause.Error() + ")"
	}
	return s
}

// Body is the members every error object carries. A service with members
// of its own embeds it in its error object (encoding/json promotes them).
type Body[C ~string] struct {
	Code       C      `json:"code"`
	Message    string `json:"message"`
	RequestID  string `json:"request_id,omitempty"`
	RetryAfter int    `json:"retry_after,omitempty"`
}

// Body returns e's members with requestID.
func (e *Error[C]) Body(requestID string) Body[C] {
	return Body[C]{Code: e.Code, Message: e.Message, RequestID: requestID, RetryAfter: e.RetryAfter}
}

// Envelope is the JSON document of a plain error answer: {"error": Body}.
type Envelope[C ~string] struct {
	Error Body[C] `json:"error"`
}

// Write answers e: its status, {"error": ...} with the request id taken
// from w's X-Request-Id, and Retry-After when e.RetryAfter is positive.
func (e *Error[C]) Write(w http.ResponseWriter) {
	WriteError(w, e.Status, e.RetryAfter, Envelope[C]{Error: e.Body(RequestID(w))})
}

// WriteError answers an error document doc (a service's own envelope,
// whose error object embeds [Body]) with status and, when retryAfter is
// positive, a Retry-After header.
func WriteError(w http.ResponseWriter, status, retryAfter int, doc any) {
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	WriteJSON(w, status, doc)
}

// RequestID returns the request id the service set on the response.
func RequestID(w http.ResponseWriter) string { return w.Header().Get(RequestIDHeader) }

// WriteJSON answers v as JSON (one line, internal/jsonenc: "<", ">" and
// "&" written as themselves) with status, Content-Type
// application/json, Cache-Control no-store (unless the handler set one) and
// X-Content-Type-Options nosniff. A v that cannot be encoded (a bug) is
// answered as 500 internal.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := jsonenc.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	WriteRaw(w, status, b)
}

// WriteRaw answers body, already JSON, like [WriteJSON].
func WriteRaw(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// docRow is a row of a code table in a service's doc: | `code` | 403 | ...
var docRow = regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (\\d{3})\\b")

// DocumentedCodes returns the codes a Markdown doc lists in table rows
// that start "| `code` | NNN", with their status: the input of each
// service's doc test (every code of its table documented with its status,
// nothing documented that the table lacks).
func DocumentedCodes(doc []byte) map[string]int {
	out := map[string]int{}
	for _, m := range docRow.FindAllSubmatch(doc, -1) {
		n, _ := strconv.Atoi(string(m[2]))
		out[string(m[1])] = n
	}
	return out
}
