package host

import (
	"context"

	"github.com/elevenmessenger/pinned/host/internal/egress"
	"github.com/elevenmessenger/pinned/host/internal/upstream"
)

// Applied says whether a write op's request took effect upstream, on an
// op that failed after its request was sent (Error.Applied). A caller MUST
// NOT retry a write whose Applied is AppliedYes or AppliedMaybe without
// first looking at the provider's state: the answer looked like a failure
// but the write happened (or may have). Its values, "yes", "maybe" and
// "no", are part of the API (TestPublicValuesStable); their one home is
// the upstream exchange (host/internal/upstream), which tracks whether the
// request went out.
type Applied = upstream.Applied

// Values of Error.Applied. Empty means the op is a read, or nothing was
// sent (the failure came before the request was written).
const (
	// AppliedYes ("yes"): the provider answered 2xx; the failure is in
	// what the host did with the answer (over the result cap, invalid
	// JSON, over the raw cap, the body cut short or timed out after the
	// status).
	AppliedYes = upstream.AppliedYes
	// AppliedMaybe ("maybe"): the request was written but no answer says
	// whether it took effect: the connection failed or the deadline
	// passed after the request went out and before a status, a 3xx or
	// 5xx answer, or GraphQL errors (a rate limit included) in a 2xx
	// answer (a mutation may have partly run).
	AppliedMaybe = upstream.AppliedMaybe
	// AppliedNo ("no"): the provider answered 4xx (including 429): it
	// refused the request.
	AppliedNo = upstream.AppliedNo
)

// send performs an accepted request through the upstream exchange
// (host/internal/upstream: the credential injected, the answer capped,
// failures classified, a success projected) and reads the paging cursor
// of a success.
func (e *Engine) send(ctx context.Context, p *prepared, r *egress.Request, cred Credential) (*Result, int64, *Error) {
	ans, n, f := e.up.Send(ctx, p.x, r, cred.Kind, cred.User, cred.Secret)
	if f != nil {
		return nil, n, upstreamError(f)
	}
	res := &Result{Status: ans.Status, Data: ans.Data}
	if p.pager != nil && ans.Body != nil {
		res.cursor = p.pager.Read(ans.Body, ans.Header, r.URL())
	}
	return res, n, nil
}

// upstreamError is the op error of an upstream failure: the same
// message, status, retry-after, deny reason, applied and cause, under
// the code its kind names.
func upstreamError(f *upstream.Failure) *Error {
	return &Error{Code: upstreamCode(f.Kind), Message: f.Message, Status: f.Status, RetryAfter: f.RetryAfter,
		Deny: f.Deny, Applied: f.Applied, cause: f.Cause}
}

// upstreamCode maps a failure kind to its code. The kinds mirror, one to
// one, the codes an exchange can end with; TestUpstreamKindsMapped proves
// the mapping total and one to one.
func upstreamCode(k upstream.Kind) Code {
	switch k {
	case upstream.KindDenied:
		return CodeEgressDenied
	case upstream.KindTimeout:
		return CodeTimeout
	case upstream.KindCanceled:
		return CodeCanceled
	case upstream.KindUnreachable:
		return CodeUpstreamUnreachable
	case upstream.KindInvalid:
		return CodeUpstreamInvalid
	case upstream.KindTooLarge:
		return CodeUpstreamTooLarge
	case upstream.KindResultTooLarge:
		return CodeResultTooLarge
	case upstream.KindRateLimited:
		return CodeRateLimited
	}
	return CodeUpstreamError // upstream.KindError
}
