package broker

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/elevenmessenger/pinned/internal/brokerapi"
	"github.com/elevenmessenger/pinned/internal/httperr"
	"github.com/elevenmessenger/pinned/internal/httpserve"
)

// brokerError is the one error type of the broker's HTTP API: the shared model of
// internal/httperr with the broker's codes and status table
// (internal/brokerapi, listed in docs/OAUTH.md). Status, Code, Message and
// RetryAfter go to the client with the request id; the cause is logged and
// never sent. No field ever holds a secret (client secret, token, code,
// verifier): causes built from provider answers keep only the HTTP status
// and the error code.
type brokerError = brokerapi.Error

// errorf returns an error with code, its status and a formatted message.
func errorf(code brokerapi.Code, format string, args ...any) *brokerError {
	return brokerapi.NewError(code, fmt.Sprintf(format, args...))
}

// asError turns any error into an *brokerError (internal when it is not one).
func asError(err error) *brokerError {
	var e *brokerError
	if errors.As(err, &e) {
		return e
	}
	return brokerapi.NewError(brokerapi.CodeInternal, "internal error").WithCause(err)
}

// writeError answers err as JSON (httperr: the request id of the answer's
// X-Request-Id in the body, Retry-After when set) and hands its code and
// cause to the request's access event.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := asError(err)
	httpserve.NoteOf[httpserve.Basic](r).Fail(string(e.Code), e.Cause())
	e.Write(w)
}

// writeJSON answers v as JSON with no-store caching unless the caller set
// Cache-Control (httperr.WriteJSON).
func writeJSON(w http.ResponseWriter, status int, v any) {
	httperr.WriteJSON(w, status, v)
}
