package host

import (
	"strconv"

	"github.com/elevenmessenger/pinned/host/api"
)

// Error is an op failure: the error of Engine.Run, Engine.Check, Render,
// ValidateArgs and CheckCredential (errors.As finds it). Message is safe
// to show to the caller: it never holds the credential, Go error text
// from inside the host, or raw upstream bodies. The internal cause, if
// any, is only logged.
type Error struct {
	// Code is the failure's kind, one of api's Code* constants.
	Code api.Code
	// Message says what went wrong and, where there is one, the fix, in a
	// sentence; for api.CodeUpstreamError, the provider's own message
	// (manifest error_message path, capped at api.MaxMessageBytes).
	Message string
	// Status is the upstream HTTP status, when there was an answer.
	Status int
	// RetryAfter is the number of seconds to wait (api.CodeRateLimited).
	RetryAfter int
	// Arg names the offending argument (api.CodeBadArgs).
	Arg string
	// Deny is the rule the request broke (api.CodeEgressDenied).
	Deny api.DenyReason
	// Applied is set on a write op's failure once its request was sent:
	// api.AppliedYes (the provider answered 2xx, e.g. a result over the
	// cap), api.AppliedMaybe or api.AppliedNo. Status carries the
	// provider's status when it answered.
	Applied api.Applied
	// Target is the request target as sent, secret args redacted, when
	// the request was sent (Result.Target); empty otherwise.
	Target string

	cause error
}

// Error is "code: message", with " (HTTP status)" and " (applied: …)"
// when set.
func (e *Error) Error() string {
	s := string(e.Code) + ": " + e.Message
	if e.Status != 0 {
		s += " (HTTP " + strconv.Itoa(e.Status) + ")"
	}
	if e.Applied != "" {
		s += " (applied: " + string(e.Applied) + ")"
	}
	return s
}

// Cause returns the internal cause for logs. It may hold Go error text
// and MUST NOT be sent to callers.
func (e *Error) Cause() error { return e.cause }

func newError(code api.Code, msg string) *Error { return &Error{Code: code, Message: msg} }
