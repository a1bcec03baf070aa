package upstream

import (
	"context"
	"net/http/httptrace"
	"sync/atomic"
)

// Applied says whether a write op's request took effect upstream, on an
// op that failed after its request was sent (Failure.Applied; the host's
// Error.Applied is this type). A caller MUST NOT retry a write whose
// Applied is AppliedYes or AppliedMaybe without first looking at the
// provider's state: the answer looked like a failure but the write
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
	// took effect: the connection failed or the deadline passed after
	// the request went out and before a status, a 3xx or 5xx answer, or
	// GraphQL errors (a rate limit included) in a 2xx answer (a mutation
	// may have partly run).
	AppliedMaybe Applied = "maybe"
	// AppliedNo: the provider answered 4xx (including 429): it refused
	// the request.
	AppliedNo Applied = "no"
)

// sentTracker records whether the request's headers were written to a
// connection (net/http/httptrace WroteHeaders): from then on the provider
// may act on it.
type sentTracker struct{ wrote atomic.Bool }

func (s *sentTracker) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { s.wrote.Store(true) },
	})
}

// markApplied fills f.Applied for a write op whose request was sent.
func markApplied(f *Failure, sent bool) {
	if f == nil || !sent {
		return
	}
	switch s := f.Status; {
	case s >= 200 && s < 300 && (f.Kind == KindError || f.Kind == KindRateLimited || f.unsure):
		// GraphQL errors in a 2xx answer, a rate limit among them, an
		// error envelope or an ambiguous answer: a mutation may have
		// partly run, or not at all.
		f.Applied = AppliedMaybe
	case s >= 200 && s < 300:
		f.Applied = AppliedYes
	case s >= 400 && s < 500:
		f.Applied = AppliedNo
	default: // no answer, 3xx, 5xx
		f.Applied = AppliedMaybe
	}
}
