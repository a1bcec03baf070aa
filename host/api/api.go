// Package api is the vocabulary the host shares with its callers and its
// internal parts: the code of an op's failure, whether a failed write was
// applied, the rule a denied request broke, and why paging stopped. The
// host's parts produce these values; the host and the services pass them
// on unchanged. Every value is part of the API (docs/API.md).
//
// It imports nothing.
package api

// Code is the stable, machine-readable kind of an op failure. The sidecar
// answers bots with it unchanged.
type Code string

// Failure codes of an op.
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

// Codes returns every failure code, in the order declared.
func Codes() []Code {
	return []Code{CodeUnknownService, CodeUnknownOp, CodeBadArgs, CodeCredentialInvalid, CodeEgressDenied,
		CodeSandboxError, CodeTimeout, CodeUpstreamUnreachable, CodeUpstreamError, CodeUpstreamInvalid,
		CodeUpstreamTooLarge, CodeResultTooLarge, CodeRateLimited, CodeCanceled, CodeCredentialEcho}
}

// MaxMessageBytes caps a failure's message when it is projected from an
// upstream error body (UTF-8, cut with "…").
const MaxMessageBytes = 1 << 10

// Applied says whether a write op's request took effect upstream, on an
// op that failed after its request was sent. A caller MUST NOT retry a
// write whose Applied is AppliedYes or AppliedMaybe without first looking
// at the provider's state: the answer looked like a failure but the write
// happened (or may have).
type Applied string

// Values of Applied. Empty means the op is a read, or nothing was sent
// (the failure came before the request was written).
const (
	// AppliedYes: the provider answered 2xx; the failure is in what the
	// host did with the answer (over the result cap, invalid JSON, over
	// the raw cap, the body cut short or timed out after the status).
	AppliedYes Applied = "yes"
	// AppliedMaybe: the request was written but no answer says whether it
	// took effect: the connection failed or the deadline passed after the
	// request went out and before a status, a 3xx or 5xx answer, or
	// GraphQL errors (a rate limit included) in a 2xx answer (a mutation
	// may have partly run).
	AppliedMaybe Applied = "maybe"
	// AppliedNo: the provider answered 4xx (including 429): it refused
	// the request.
	AppliedNo Applied = "no"
)

// DenyReason names the rule a request or a connection broke. Reasons are
// stable: they appear in the audit log, in the pinned_egress_denied_total
// metric and in the op's error. They never reach the guest, which sees
// only abi.EDENIED.
type DenyReason string

// DenyReasons lists every DenyReason, in the order declared.
func DenyReasons() []DenyReason {
	return []DenyReason{DenyMalformed, DenyTooLarge, DenyMethod, DenyScheme, DenyHost, DenyPort, DenyUserinfo, DenyFragment,
		DenyURLChar, DenyPath, DenyDotSegment, DenyEncodedSlash, DenyPathEncoding, DenyQueryDuplicate, DenyQuerySyntax,
		DenyBodyNotAllowed, DenyBodyMissing, DenyBodyInvalid, DenyHeaderForbidden, DenyHeaderInvalid, DenyHeaderDuplicate,
		DenyNotBound, DenyDial, DenyRedirect}
}

// Deny reasons of the request check (ABI invariant 2), the dial policy
// (invariant 4) and the response handling.
const (
	DenyMalformed       DenyReason = "request_malformed" // not the documented request encoding
	DenyTooLarge        DenyReason = "request_too_large" // over abi.MaxRequestBytes
	DenyMethod          DenyReason = "method"            // method other than the op's
	DenyScheme          DenyReason = "scheme"            // not https://
	DenyHost            DenyReason = "host"              // authority is not exactly the manifest's host
	DenyPort            DenyReason = "port"              // a port in the URL
	DenyUserinfo        DenyReason = "userinfo"          // user@host
	DenyFragment        DenyReason = "fragment"          // #fragment
	DenyURLChar         DenyReason = "url_char"          // a byte outside printable ASCII (CR, LF, space, NUL, non-ASCII)
	DenyPath            DenyReason = "path_template"     // path does not match the op's template
	DenyDotSegment      DenyReason = "dot_segment"       // "." or ".." (also percent-encoded) in a segment
	DenyEncodedSlash    DenyReason = "encoded_slash"     // %2F or %5C in a segment
	DenyPathEncoding    DenyReason = "path_encoding"     // malformed percent-encoding in the path
	DenyQueryDuplicate  DenyReason = "query_duplicate"   // a query key twice
	DenyQuerySyntax     DenyReason = "query_syntax"      // malformed query
	DenyBodyNotAllowed  DenyReason = "body_not_allowed"  // a body where the op declares none
	DenyBodyMissing     DenyReason = "body_missing"      // no body where the op declares one
	DenyBodyInvalid     DenyReason = "body_invalid"      // body not of the op's kind (a JSON object; form pairs in the executor's alphabet, each key once)
	DenyHeaderForbidden DenyReason = "header_forbidden"  // a header the host owns (Authorization, Cookie, Host, Proxy-*, ...)
	DenyHeaderInvalid   DenyReason = "header_invalid"    // bad header name, or CR/LF/NUL in a value
	DenyHeaderDuplicate DenyReason = "header_duplicate"  // a header twice
	DenyNotBound        DenyReason = "not_bound"         // not exactly the request the op's templates render from the caller's validated args
	DenyDial            DenyReason = "dial_address"      // the host resolved to a non-public address
	DenyRedirect        DenyReason = "redirect"          // upstream answered 3xx; not followed
)

// StopReason says why paging ended.
type StopReason string

// Stop reasons of a paged result.
const (
	// StopLastPage ("last_page"): the provider said there is no next
	// page.
	StopLastPage StopReason = "last_page"
	// StopPages ("pages"): the pages asked for were read; next is where
	// to go on.
	StopPages StopReason = "pages"
	// StopResultCap ("result_cap"): the next page's items would take the
	// merged result over the result cap; next is that page, not included.
	StopResultCap StopReason = "result_cap"
	// StopPageFailed ("page_failed"): a page after the first failed (its
	// code and message are in the stop message); next is that page, to
	// retry.
	StopPageFailed StopReason = "page_failed"
	// StopRepeatedCursor ("repeated_cursor"): the provider's next cursor
	// is the one just sent.
	StopRepeatedCursor StopReason = "repeated_cursor"
	// StopCursorCycle ("cursor_cycle"): the provider's next cursor was
	// already followed in this call (A→B→A).
	StopCursorCycle StopReason = "cursor_cycle"
	// StopEmptyPages ("empty_pages"): a page with no items claimed a next
	// page.
	StopEmptyPages StopReason = "empty_pages"
	// StopEmptyCursor ("empty_cursor"): the provider's next cursor is "".
	StopEmptyCursor StopReason = "empty_cursor"
	// StopLinkRefused ("link_refused"): the Link rel="next" URL is not
	// the pinned host and the op's own path with one value of the page
	// key.
	StopLinkRefused StopReason = "link_refused"
	// StopCursorInvalid ("cursor_invalid"): the provider's paging data
	// cannot make next args (not of the declared type, past the arg's
	// bounds, missing where the provider says there is more).
	StopCursorInvalid StopReason = "cursor_invalid"
	// StopTimeLimit ("time_limit"): the time limit of the whole call ran
	// out before the next page was read (or while it was); next is that
	// page.
	StopTimeLimit StopReason = "time_limit"
)
