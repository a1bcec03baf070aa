package state

import (
	"context"
	"sync"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"
)

// maxLimitKeys bounds the keys a memLimits holds; past it, expired ones
// are swept, and if none expired the oldest buckets are dropped (a
// dropped bucket is full again: the limit errs towards letting ops
// through, never towards refusing them all).
const maxLimitKeys = 100_000

// memLimits is api.Limiter in memory: GCRA (the token bucket as one
// theoretical arrival time per key) and back-off deadlines. One process
// only.
type memLimits struct {
	mu      sync.Mutex
	tat     map[string]time.Time // theoretical arrival time of the next op
	backoff map[string]time.Time
	budgets map[string]memBudget
}

func newMemLimits() *memLimits {
	return &memLimits{tat: map[string]time.Time{}, backoff: map[string]time.Time{}, budgets: map[string]memBudget{}}
}

// gcra decides one op against a stored theoretical arrival time: it
// returns the new one when the op is allowed, else how long to wait.
func gcra(stored, now time.Time, rate api.Rate) (next time.Time, ok bool, retryAfter time.Duration) {
	burst := max(rate.Burst, 1)
	interval := time.Duration(float64(time.Second) / rate.PerSecond)
	tat := stored
	if tat.Before(now) {
		tat = now
	}
	next = tat.Add(interval)
	allowAt := next.Add(-time.Duration(burst) * interval)
	if now.Before(allowAt) {
		return stored, false, allowAt.Sub(now)
	}
	return next, true, 0
}

func (m *memLimits) Take(_ context.Context, key string, rate api.Rate, now time.Time) (bool, time.Duration, error) {
	if rate.PerSecond <= 0 {
		return true, 0, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	next, ok, wait := gcra(m.tat[key], now, rate)
	if ok {
		if len(m.tat) >= maxLimitKeys {
			sweep(m.tat, now)
		}
		m.tat[key] = next
	}
	return ok, wait, nil
}

func (m *memLimits) BackOff(_ context.Context, key string, until time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if until.After(m.backoff[key]) {
		if len(m.backoff) >= maxLimitKeys {
			sweep(m.backoff, time.Now())
		}
		m.backoff[key] = until
	}
	return nil
}

func (m *memLimits) BackedOff(_ context.Context, key string, now time.Time) (time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u := m.backoff[key]; u.After(now) {
		return u, nil
	}
	return time.Time{}, nil
}

// sweep drops the entries of m that are past now, or half of them when
// none is.
func sweep(m map[string]time.Time, now time.Time) {
	n := len(m)
	for k, t := range m {
		if !t.After(now) {
			delete(m, k)
		}
	}
	if len(m) < n {
		return
	}
	i := 0
	for k := range m {
		if i%2 == 0 {
			delete(m, k)
		}
		i++
	}
}

// Take, BackOff and BackedOff make Memory an api.Limiter (one process).
func (m *Memory) Take(ctx context.Context, key string, rate api.Rate, now time.Time) (bool, time.Duration, error) {
	return m.limits.Take(ctx, key, rate, now)
}

// BackOff records a credential's back-off (api.Limiter).
func (m *Memory) BackOff(ctx context.Context, key string, until time.Time) error {
	return m.limits.BackOff(ctx, key, until)
}

// BackedOff returns a credential's back-off (api.Limiter).
func (m *Memory) BackedOff(ctx context.Context, key string, now time.Time) (time.Time, error) {
	return m.limits.BackedOff(ctx, key, now)
}

// Take, BackOff and BackedOff make File an api.Limiter: in memory, since
// the file serves one process and a restart may forget a rate.
func (f *File) Take(ctx context.Context, key string, rate api.Rate, now time.Time) (bool, time.Duration, error) {
	return f.limits.Take(ctx, key, rate, now)
}

// BackOff records a credential's back-off (api.Limiter).
func (f *File) BackOff(ctx context.Context, key string, until time.Time) error {
	return f.limits.BackOff(ctx, key, until)
}

// BackedOff returns a credential's back-off (api.Limiter).
func (f *File) BackedOff(ctx context.Context, key string, now time.Time) (time.Time, error) {
	return f.limits.BackedOff(ctx, key, now)
}

// memBudget is a budget's totals in memory.
type memBudget struct {
	ops, bytes int64
	expires    time.Time
}

// spend is api.Limiter.Spend on a map of budgets; the caller holds the
// lock.
func spend(m map[string]memBudget, key string, ops, bytes int64, c api.Cap, expires, now time.Time) bool {
	b := m[key]
	if !b.expires.After(now) {
		b = memBudget{}
	}
	if (c.Ops > 0 && b.ops+ops > c.Ops) || (c.Bytes > 0 && b.bytes >= c.Bytes) {
		return false
	}
	b.ops, b.bytes = b.ops+ops, b.bytes+bytes
	if expires.After(b.expires) {
		b.expires = expires
	}
	if len(m) >= maxLimitKeys {
		for k, v := range m {
			if !v.expires.After(now) {
				delete(m, k)
			}
		}
	}
	m[key] = b
	return true
}

func (m *memLimits) Spend(_ context.Context, key string, ops, bytes int64, c api.Cap, expires time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return spend(m.budgets, key, ops, bytes, c, expires, time.Now()), nil
}

// Spend adds to a budget (api.Limiter).
func (m *Memory) Spend(ctx context.Context, key string, ops, bytes int64, c api.Cap, expires time.Time) (bool, error) {
	return m.limits.Spend(ctx, key, ops, bytes, c, expires)
}

// Spend adds to a budget (api.Limiter), in memory.
func (f *File) Spend(ctx context.Context, key string, ops, bytes int64, c api.Cap, expires time.Time) (bool, error) {
	return f.limits.Spend(ctx, key, ops, bytes, c, expires)
}
