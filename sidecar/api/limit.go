package api

import (
	"context"
	"time"
)

// Rate is a rate limit: PerSecond ops a second on average, up to Burst
// at once (a token bucket of Burst tokens refilled PerSecond a second).
// A zero PerSecond is no limit.
type Rate struct {
	PerSecond float64
	Burst     int
}

// Limiter holds the rate limits and provider back-offs a bot's replicas
// share (sidecar.Config.Limiter). pinned's stores implement it: in
// memory for one process, on Redis (GCRA, one round trip) for several.
// Every method is safe for concurrent use and bounded in time; an error
// matches ErrUnavailable, and the sidecar then fails closed.
type Limiter interface {
	// Take takes one op from key's bucket of rate. ok is false when the
	// bucket is empty; retryAfter is then how long until it holds one.
	// now is the caller's clock (a shared store may use its own).
	Take(ctx context.Context, key string, rate Rate, now time.Time) (ok bool, retryAfter time.Duration, err error)
	// BackOff records that key (a credential) must not be used until
	// until; a later until wins over an earlier one.
	BackOff(ctx context.Context, key string, until time.Time) error
	// BackedOff returns the time until which key must not be used (zero
	// when none, or past).
	BackedOff(ctx context.Context, key string, now time.Time) (until time.Time, err error)
	// Spend adds ops and bytes to key's budget, kept until expires, and
	// returns the totals before it. With c set, it adds nothing and
	// returns ok false when the totals already reach a cap (c.Ops, or
	// c.Bytes), or when adding ops would pass c.Ops; the check and the
	// addition are one atomic step.
	Spend(ctx context.Context, key string, ops, bytes int64, c Cap, expires time.Time) (ok bool, err error)
}

// Cap is a budget: at most Ops ops and Bytes bytes returned (0: no cap
// of that kind).
type Cap struct {
	Ops   int64
	Bytes int64
}
