package sidecar

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"time"

	"github.com/elevenmessenger/pinned/internal/state"
	"github.com/elevenmessenger/pinned/sidecar/api"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// Limits of an op refused with rate_limited, as the error's limit and the
// audit record's.
const (
	limitBot     = "bot_rate"         // Config.BotRate
	limitGrant   = "grant_rate"       // Config.GrantRate
	limitBackoff = "provider_backoff" // the provider answered 429 for this credential
	limitBotDay  = "bot_budget"       // Config.BotDailyCap
	limitGrantB  = "grant_budget"     // Config.GrantCap
)

// budget is one cap an op spends from: its key, cap and window's end.
type budget struct {
	limit, key string
	cap        api.Cap
	expires    time.Time
}

// budgets are the caps an op under g spends from (none configured: nil).
// The bot's is per UTC day; a grant's lasts as long as the grant.
func (s *Server) budgets(g *grant.Grant, now time.Time) []budget {
	var out []budget
	if c := s.cfg.BotDailyCap; c != (api.Cap{}) {
		day := now.UTC().Truncate(24 * time.Hour)
		out = append(out, budget{limitBotDay, "botday:" + s.bot + ":" + day.Format("2006-01-02"), c, day.Add(24 * time.Hour)})
	}
	if c := s.cfg.GrantCap; c != (api.Cap{}) {
		out = append(out, budget{limitGrantB, "grantcap:" + grantID(g), c, g.ExpiresAt.Add(grant.ClockSkew)})
	}
	return out
}

// spendBytes adds an op's returned bytes to its budgets. A store that
// does not answer is logged: the op already ran.
func (s *Server) spendBytes(ctx context.Context, g *grant.Grant, n int) {
	for _, b := range s.budgets(g, s.cfg.now()) {
		if b.cap.Bytes == 0 {
			continue
		}
		if _, err := s.limits.Spend(ctx, b.key, 0, int64(n), api.Cap{}, b.expires); err != nil {
			s.log.Warn().Str("event", "budget").Str("limit", b.limit).AnErr("cause", err).Msg("an op's bytes could not be added to its budget")
		}
	}
}

// limiter is Config.Limiter, else the store when it is one, else an
// in-memory one (one process).
func limiterFor(cfg *Config, store api.Store) api.Limiter {
	if cfg.Limiter != nil {
		return cfg.Limiter
	}
	if l, ok := store.(api.Limiter); ok {
		return l
	}
	return state.NewMemory(state.MemoryOptions{})
}

// credKey names a credential for back-offs: a digest of the service and
// the grant's secret, never the secret.
func credKey(service string, g *grant.Grant) string {
	h := sha256.New()
	h.Write([]byte(service))
	h.Write([]byte{0})
	h.Write([]byte(g.Secret))
	return "cred:" + hex.EncodeToString(h.Sum(nil)[:16])
}

// checkLimits refuses an op before anything is sent when its credential
// is backing off after a provider's 429, or when the bot's or the grant's
// rate is spent: rate_limited with Retry-After, the grant not spent.
// backedOff, when not nil, is the back-off already read with the
// nonce's record (recordChecked). A limiter that does not answer refuses
// the op (unavailable).
func (s *Server) checkLimits(ctx context.Context, info *reqInfo, service string, g *grant.Grant, backedOff *time.Time) *Error {
	now := s.cfg.now()
	var until time.Time
	if backedOff != nil { // read with the nonce's record (recordChecked)
		until = *backedOff
	} else {
		var err error
		if until, err = s.limits.BackedOff(ctx, credKey(service, g), now); err != nil {
			return s.unavailable("the shared state store (Redis) did not answer, so the op's limits cannot be checked; retry shortly (the grant is not spent)").withCause(err)
		}
	}
	if until.After(now) {
		return s.rateLimited(info, limitBackoff, until.Sub(now), fmt.Sprintf("the provider asked to slow down for this credential; nothing was sent; retry after %s (the grant is not spent)", roundUp(until.Sub(now))))
	}
	checks := []struct {
		limit, key string
		rate       api.Rate
	}{
		{limitBot, "bot:" + s.bot, s.cfg.BotRate},
		{limitGrant, "grant:" + grantID(g), s.cfg.GrantRate},
	}
	for _, c := range checks {
		ok, wait, err := s.limits.Take(ctx, c.key, c.rate, now)
		if err != nil {
			return s.unavailable("the shared state store (Redis) did not answer, so the op's limits cannot be checked; retry shortly (the grant is not spent)").withCause(err)
		}
		if !ok {
			return s.rateLimited(info, c.limit, wait, fmt.Sprintf("the %s limit (%g ops/s, burst %d) is spent; nothing was sent; retry after %s (the grant is not spent)",
				map[string]string{limitBot: "bot's", limitGrant: "grant's"}[c.limit], c.rate.PerSecond, max(c.rate.Burst, 1), roundUp(wait)))
		}
	}
	for _, b := range s.budgets(g, now) {
		ok, err := s.limits.Spend(ctx, b.key, 1, 0, b.cap, b.expires)
		if err != nil {
			return s.unavailable("the shared state store (Redis) did not answer, so the op's budget cannot be checked; retry shortly (the grant is not spent)").withCause(err)
		}
		if !ok {
			what := "the bot's daily budget"
			if b.limit == limitGrantB {
				what = "this grant's budget (ask the member for a new grant)"
			}
			return s.rateLimited(info, b.limit, b.expires.Sub(now), fmt.Sprintf("%s (%s) is spent; nothing was sent; it renews at %s",
				what, capText(b.cap), b.expires.UTC().Format(time.RFC3339)))
		}
	}
	return nil
}

// capText says a cap in words.
func capText(c api.Cap) string {
	switch {
	case c.Ops > 0 && c.Bytes > 0:
		return fmt.Sprintf("%d ops, %d bytes returned", c.Ops, c.Bytes)
	case c.Ops > 0:
		return fmt.Sprintf("%d ops", c.Ops)
	}
	return fmt.Sprintf("%d bytes returned", c.Bytes)
}

// backOff makes every replica wait before the credential's next request
// when the provider answered 429 (Retry-After, or 1 s without one).
func (s *Server) backOff(ctx context.Context, service string, g *grant.Grant, err error) {
	he := hostError(err)
	if he == nil || Code(he.Code) != CodeRateLimited || he.Status != 429 {
		return
	}
	wait := time.Duration(max(he.RetryAfter, 1)) * time.Second
	if berr := s.limits.BackOff(ctx, credKey(service, g), s.cfg.now().Add(wait)); berr != nil {
		s.log.Warn().Str("event", "backoff_failed").Str("service", service).AnErr("cause", berr).Msg("the provider's back-off could not be shared")
	}
}

// rateLimited is the refusal of a spent limit.
func (s *Server) rateLimited(info *reqInfo, limit string, wait time.Duration, msg string) *Error {
	info.limit = limit
	s.m.denials.WithLabelValues("limit", limit).Inc()
	e := newError(CodeRateLimited, msg)
	e.RetryAfter = int(math.Ceil(wait.Seconds()))
	if e.RetryAfter < 1 {
		e.RetryAfter = 1
	}
	e.Limit = limit
	return e
}

// roundUp is d rounded up to a tenth of a second, for messages.
func roundUp(d time.Duration) time.Duration {
	return (d + 100*time.Millisecond - 1).Truncate(100 * time.Millisecond)
}

// instrumentedLimiter times and counts the limiter's calls in the state
// metrics (ops take, back_off, backed_off, spend), as instrumented does
// the store's.
type instrumentedLimiter struct {
	next api.Limiter
	m    *metrics
}

func (l instrumentedLimiter) observe(op string, start time.Time, err error) {
	instrumented{m: l.m}.observe(op, start, err)
}

func (l instrumentedLimiter) Take(ctx context.Context, key string, rate api.Rate, now time.Time) (bool, time.Duration, error) {
	if rate.PerSecond <= 0 {
		return true, 0, nil // no limit: no call, nothing to time
	}
	start := time.Now()
	ok, wait, err := l.next.Take(ctx, key, rate, now)
	l.observe("take", start, err)
	return ok, wait, err
}

func (l instrumentedLimiter) BackOff(ctx context.Context, key string, until time.Time) error {
	start := time.Now()
	err := l.next.BackOff(ctx, key, until)
	l.observe("back_off", start, err)
	return err
}

func (l instrumentedLimiter) BackedOff(ctx context.Context, key string, now time.Time) (time.Time, error) {
	start := time.Now()
	u, err := l.next.BackedOff(ctx, key, now)
	l.observe("backed_off", start, err)
	return u, err
}

func (l instrumentedLimiter) Spend(ctx context.Context, key string, ops, bytes int64, c api.Cap, expires time.Time) (bool, error) {
	start := time.Now()
	ok, err := l.next.Spend(ctx, key, ops, bytes, c, expires)
	l.observe("spend", start, err)
	return ok, err
}
