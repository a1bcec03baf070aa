package upstream

import (
	"context"
	"net/http/httptrace"
	"sync/atomic"

	"github.com/elevenmessenger/pinned/host/api"
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
	case s >= 200 && s < 300 && (f.Code == api.CodeUpstreamError || f.Code == api.CodeRateLimited || f.unsure):
		// GraphQL errors in a 2xx answer, a rate limit among them, an
		// error envelope or an ambiguous answer: a mutation may have
		// partly run, or not at all.
		f.Applied = api.AppliedMaybe
	case s >= 200 && s < 300:
		f.Applied = api.AppliedYes
	case s >= 400 && s < 500:
		f.Applied = api.AppliedNo
	default: // no answer, 3xx, 5xx
		f.Applied = api.AppliedMaybe
	}
}
