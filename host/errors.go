package host

import (
	"strconv"
)

// Code is the stable, machine-readable kind of an op failure. Codes are
// part of the API: the sidecar returns them to bots unchanged.
type Code string

// Failure codes of Engine.Run.
const (
	CodeUnknownService      Code = "unknown_service"      // no such service in the registry
	CodeUnknownOp           Code = "unknown_op"           // the service has no such op
	CodeBadArgs             Code = "bad_args"             // the args break the op's declarations
	CodeCredentialInvalid   Code = "credential_invalid"   // empty credential or one with characters a header cannot carry
	CodeEgressDenied        Code = "egress_denied"        // the request or the connection broke the egress policy
	CodeSandboxError        Code = "sandbox_error"        // the guest trapped, exited, spent its budget or produced no request
	CodeTimeout             Code = "timeout"              // the op's deadline passed
	CodeUpstreamUnreachable Code = "upstream_unreachable" // DNS, connect or TLS failed
	CodeUpstreamError       Code = "upstream_error"       // the provider answered non-2xx (or GraphQL errors)
	CodeUpstreamInvalid     Code = "upstream_invalid"     // the provider's answer is not valid JSON or uses an unknown encoding
	CodeUpstreamTooLarge    Code = "upstream_too_large"   // the decoded answer is over the raw cap
	CodeResultTooLarge      Code = "result_too_large"     // the projected result is over the result cap
	CodeRateLimited         Code = "rate_limited"         // the provider asked to slow down
	CodeCanceled            Code = "canceled"             // the caller went away
	CodeCredentialEcho      Code = "credential_echo"      // the provider's answer held the credential and was withheld
)

// Error is an op failure. Message is safe to show to the caller: it never
// holds the credential, Go error text from inside the host, or raw
// upstream bodies. The internal cause, if any, is only logged.
type Error struct {
	// Code is the failure's kind, one of the Code* constants.
	Code Code
	// Message says what went wrong and, where there is one, the fix, in a
	// sentence; for CodeUpstreamError, the provider's own message
	// (manifest error_message path, capped at MaxErrorMessageBytes).
	Message string
	// Status is the upstream HTTP status, when there was an answer.
	Status int
	// RetryAfter is the number of seconds to wait (CodeRateLimited).
	RetryAfter int
	// Arg names the offending argument (CodeBadArgs).
	Arg string
	// Deny is the rule the request broke (CodeEgressDenied).
	Deny DenyReason
	// Applied is set on a write op's failure once its request was sent:
	// AppliedYes (the provider answered 2xx, e.g. a result over the cap),
	// AppliedMaybe or AppliedNo; see Applied. Status carries the
	// provider's status when it answered.
	Applied Applied

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

func newError(code Code, msg string) *Error { return &Error{Code: code, Message: msg} }
