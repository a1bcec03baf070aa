package host

import (
	"context"

	"github.com/elevenmessenger/pinned/host/internal/egress"
	"github.com/elevenmessenger/pinned/host/internal/upstream"
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

// upstreamError is the op error of an upstream failure: its code,
// message, status, retry-after, deny reason, applied and cause, as they
// are.
func upstreamError(f *upstream.Failure) *Error {
	return &Error{Code: f.Code, Message: f.Message, Status: f.Status, RetryAfter: f.RetryAfter,
		Deny: f.Deny, Applied: f.Applied, cause: f.Cause}
}
