package broker

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/internal/brokerapi"
	"github.com/elevenmessenger/pinned/internal/httperr"
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
// X-Request-Id in the body, Retry-After when set) and logs its cause.
func writeError(w http.ResponseWriter, log *zerolog.Logger, err error) {
	e := asError(err)
	ev := log.Warn()
	if e.Status >= 500 {
		ev = log.Error()
	}
	ev = ev.Str("code", string(e.Code)).Int("status", e.Status)
	if c := e.Cause(); c != nil {
		ev = ev.AnErr("cause", c)
	}
	ev.Msg(e.Message)
	e.Write(w)
}

// writeJSON answers v as JSON with no-store caching unless the caller set
// Cache-Control (httperr.WriteJSON).
func writeJSON(w http.ResponseWriter, status int, v any) {
	httperr.WriteJSON(w, status, v)
}
