// Package rotate keeps expiring OAuth token pairs alive for the sidecar
// (DESIGN.md, "Expiring tokens"). The sidecar is the only refresher; this
// package is its core, free of HTTP-API and grant concerns so the op path
// can wire it in a few lines:
//
//	rot := rotate.New(brokerClient, rotate.Options{Logger: &log})
//
//	// before the call (only when the grant has a member key to seal the
//	// fresh pair to; without one, refuse when rot.Stale(pair) is true):
//	pair, rotated, err := rot.Before(ctx, service, pair)
//	// ... call the provider with pair.Access ...
//	// on a surprise 401, once per op (a second 401 is an error, no loop):
//	pair, err = rot.Rotate(ctx, service, pair); rotated = true
//	// ... retry once; if rotated, seal pair to the member key on the result.
//
// # When a pair is refreshed
//
// Before a call, a pair whose expiry is known is refreshed when it expires
// within the margin (DefaultMargin, 60 s): a token that is about to expire
// would otherwise die in flight. A pair whose expiry is UNKNOWN (the
// provider sent no expires_in: DNSimple, Stripe Connect) is not assumed to
// be valid forever, but it is not refreshed blindly before every call
// either (that would rotate single-use refresh tokens on every op): it is
// used as is, and refreshed once after a surprise 401.
//
// # Single flight and grace
//
// Providers such as GitHub Apps issue single-use refresh tokens: two
// refreshes of one token burn the connection. So refreshes are single
// flight per credential, keyed by the SHA-256 of service and refresh
// token (golang.org/x/sync/singleflight): concurrent callers share one
// Refresher call and its result. The refresh itself runs detached from the
// callers' contexts (bounded by Options.Timeout), so a caller giving up
// never loses a pair the provider has already rotated.
//
// A fresh pair is then remembered for a short grace window (DefaultGrace,
// 2 min) under the hash of the refresh token it replaced: an op that
// arrives with the just-rotated pair (its device has not stored the fresh
// one yet) gets the fresh pair instead of burning the old token again.
// Chains (A→B, then B→C) are followed. Tokens are held only in memory and
// only for the window; nothing is logged but a short hash prefix.
//
// # Errors
//
// A dead refresh token (invalid_grant) is ErrReconnectRequired: the member
// must reconnect the service in Integrations. A timeout, a 5xx, a rate
// limit or a network failure is ErrRetryable, never a reconnect. Use
// errors.Is; *Error carries the detail.
package rotate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/singleflight"
)

// Defaults of Options.
const (
	// DefaultMargin: a pair expiring within this is refreshed before a call.
	DefaultMargin = 60 * time.Second
	// DefaultGrace: how long a fresh pair answers for the pair it replaced.
	DefaultGrace = 2 * time.Minute
	// DefaultTimeout bounds one refresh, whatever the callers' contexts.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxCached bounds the grace cache.
	DefaultMaxCached = 10000
	// maxChain bounds how many rotations Superseded follows.
	maxChain = 8
)

// Pair is an OAuth credential: access token, refresh token and the access
// token's expiry (zero: unknown). Its String and GoString methods redact
// the tokens.
type Pair struct {
	Access    string
	Refresh   string
	ExpiresAt time.Time
}

func (p Pair) String() string {
	exp := "unknown"
	if !p.ExpiresAt.IsZero() {
		exp = p.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("Pair{Access: [redacted], Refresh: %s, ExpiresAt: %s}", map[bool]string{true: "[redacted]", false: "none"}[p.Refresh != ""], exp)
}

// GoString redacts the tokens for %#v too.
func (p Pair) GoString() string { return "rotate." + p.String() }

// ParseExpiry reads an expiry as grants (token_expires_at) and the broker
// (expires_at) write it: RFC 3339, or "" for unknown (the zero time).
func ParseExpiry(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, errors.New("rotate: an expiry must be RFC 3339 or empty")
	}
	return t, nil
}

// FormatExpiry is ParseExpiry's inverse: RFC 3339 in UTC, or "" for the
// zero time (unknown).
func FormatExpiry(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// Refresher exchanges a refresh token for a fresh pair at the provider
// (through the broker: BrokerClient). A Refresher should return *Error for
// failures it can classify; any other error is treated as retryable.
type Refresher interface {
	Refresh(ctx context.Context, service, refreshToken string) (Pair, error)
}

// Kind classifies a refresh failure.
type Kind int

const (
	// KindRetryable: transient (timeout, 5xx, rate limit, network); retry
	// later. Never a dead connection.
	KindRetryable Kind = iota + 1
	// KindReconnect: the refresh token is dead (invalid_grant); the member
	// must reconnect the service.
	KindReconnect
	// KindFailed: neither (a broker misconfiguration such as a wrong
	// instance token, a service the broker has no client for).
	KindFailed
)

func (k Kind) String() string {
	switch k {
	case KindRetryable:
		return "retryable"
	case KindReconnect:
		return "reconnect"
	case KindFailed:
		return "failed"
	}
	return "unknown"
}

var (
	// ErrReconnectRequired: the connection's refresh token is dead.
	ErrReconnectRequired = errors.New("the connection has expired or was revoked: reconnect it in Integrations")
	// ErrRetryable: the refresh failed for a transient reason.
	ErrRetryable = errors.New("the token refresh failed temporarily; retry later")
	// ErrNoRefreshToken: the pair has no refresh token, so it cannot be
	// rotated (DNSimple issues none). Neither retryable nor a reconnect: the
	// op's own 401 stands.
	ErrNoRefreshToken = errors.New("the credential has no refresh token and cannot be rotated")
)

// Error is a classified refresh failure. It never holds a token.
type Error struct {
	Kind Kind
	// Code is the broker's error code when known ("invalid_grant",
	// "provider_unavailable", "rate_limited", "unauthorized", ...).
	Code string
	// Status is the broker's HTTP status when known.
	Status int
	// RetryAfter is the broker's Retry-After, when it sent one.
	RetryAfter time.Duration
	// Err is the cause.
	Err error
}

func (e *Error) Error() string {
	var s string
	switch e.Kind {
	case KindReconnect:
		s = ErrReconnectRequired.Error()
	case KindRetryable:
		s = ErrRetryable.Error()
	default:
		s = "the token refresh failed"
	}
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrReconnectRequired) and
// errors.Is(err, ErrRetryable) follow Kind.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrReconnectRequired:
		return e.Kind == KindReconnect
	case ErrRetryable:
		return e.Kind == KindRetryable
	}
	return false
}

// Options tune a Rotator; zero values pick the defaults.
type Options struct {
	// Margin: refresh before a call when the pair expires within it.
	Margin time.Duration
	// Grace: how long a fresh pair answers for the one it replaced.
	Grace time.Duration
	// Timeout bounds one Refresher call.
	Timeout time.Duration
	// MaxCached bounds the grace cache (entries).
	MaxCached int
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Logger receives one line per refresh (event "token_refresh":
	// service, outcome and an 8-byte hash prefix of the credential: never a
	// token); nil discards.
	Logger *zerolog.Logger
}

// Stats count what a Rotator did.
type Stats struct {
	// Refreshes is the number of Refresher calls.
	Refreshes int64
	// Failures is the number of failed Refresher calls.
	Failures int64
	// GraceHits counts callers answered from the grace cache.
	GraceHits int64
	// Shared counts callers that waited on another caller's refresh.
	Shared int64
}

// Rotator refreshes pairs with single flight and a grace cache. It is safe
// for concurrent use.
type Rotator struct {
	ref     Refresher
	margin  time.Duration
	grace   time.Duration
	timeout time.Duration
	max     int
	now     func() time.Time
	log     zerolog.Logger
	group   singleflight.Group

	mu    sync.Mutex
	cache map[string]graceEntry // old-credential key -> fresh pair

	refreshes, failures, graceHits, shared atomic.Int64
}

type graceEntry struct {
	fresh Pair
	until time.Time
}

// New returns a Rotator refreshing through ref.
func New(ref Refresher, opts Options) *Rotator {
	r := &Rotator{
		ref:     ref,
		margin:  opts.Margin,
		grace:   opts.Grace,
		timeout: opts.Timeout,
		max:     opts.MaxCached,
		now:     opts.Now,
		log:     zerolog.Nop(),
		cache:   map[string]graceEntry{},
	}
	if r.margin <= 0 {
		r.margin = DefaultMargin
	}
	if r.grace <= 0 {
		r.grace = DefaultGrace
	}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	if r.max <= 0 {
		r.max = DefaultMaxCached
	}
	if r.now == nil {
		r.now = time.Now
	}
	if opts.Logger != nil {
		r.log = *opts.Logger // the caller's component; each line is event "token_refresh"
	}
	return r
}

// Stats returns the counters so far.
func (r *Rotator) Stats() Stats {
	return Stats{Refreshes: r.refreshes.Load(), Failures: r.failures.Load(), GraceHits: r.graceHits.Load(), Shared: r.shared.Load()}
}

// Stale reports whether p must be refreshed before a call: it has a
// refresh token and a KNOWN expiry within the margin. A pair with an
// unknown expiry is never stale before a call (see the package doc): it is
// refreshed after a surprise 401.
func (r *Rotator) Stale(p Pair) bool {
	if p.Refresh == "" || p.ExpiresAt.IsZero() {
		return false
	}
	return !r.now().Add(r.margin).Before(p.ExpiresAt)
}

// key identifies a credential without holding its token.
func key(service, refresh string) string {
	h := sha256.New()
	h.Write([]byte(service))
	h.Write([]byte{0})
	h.Write([]byte(refresh))
	return hex.EncodeToString(h.Sum(nil))
}

// Superseded returns the pair that replaced p within the grace window
// (following chains of rotations), if any.
func (r *Rotator) Superseded(service string, p Pair) (Pair, bool) {
	if p.Refresh == "" {
		return Pair{}, false
	}
	return r.lookup(service, key(service, p.Refresh), p)
}

// lookup follows the grace cache from credential k; a pair whose access
// token is p's own (a provider that does not rotate refresh tokens, asked
// again with the pair it already returned) does not count.
func (r *Rotator) lookup(service, k string, p Pair) (Pair, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	var out Pair
	found := false
	for range maxChain {
		e, ok := r.cache[k]
		if !ok || !now.Before(e.until) {
			break
		}
		out, found = e.fresh, true
		if e.fresh.Refresh == "" {
			break
		}
		next := key(service, e.fresh.Refresh)
		if next == k {
			break
		}
		k = next
	}
	if found && out.Access == p.Access {
		return Pair{}, false
	}
	return out, found
}

// remember records fresh as the successor of the credential k.
func (r *Rotator) remember(k string, fresh Pair) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if len(r.cache) >= r.max {
		oldestK, oldest := "", time.Time{}
		for ck, e := range r.cache {
			if !now.Before(e.until) {
				delete(r.cache, ck)
			} else if oldestK == "" || e.until.Before(oldest) {
				oldestK, oldest = ck, e.until
			}
		}
		if len(r.cache) >= r.max {
			delete(r.cache, oldestK)
		}
	}
	r.cache[k] = graceEntry{fresh: fresh, until: now.Add(r.grace)}
}

// Before prepares p for a call: the pair that superseded it within the
// grace window if there is one, else a refreshed pair if p is stale, else
// p itself. rotated reports whether the returned pair differs from p (the
// op result must then carry it back to the member).
func (r *Rotator) Before(ctx context.Context, service string, p Pair) (Pair, bool, error) {
	if fresh, ok := r.Superseded(service, p); ok {
		// Rotated within the grace window: use it as is, even if the
		// provider gave it a lifetime shorter than the margin, so a
		// short-lived pair can never start a chain of refreshes.
		r.graceHits.Add(1)
		return fresh, true, nil
	}
	if !r.Stale(p) {
		return p, false, nil
	}
	fresh, err := r.Rotate(ctx, service, p)
	if err != nil {
		return Pair{}, false, err
	}
	return fresh, true, nil
}

// Rotate refreshes p: after a surprise 401, or through Before when p is
// stale. A pair rotated within the grace window is answered from the cache
// (no refresh); concurrent calls for one credential share one Refresher
// call. If ctx ends first, Rotate returns a retryable error while the
// refresh completes in the background and lands in the grace cache.
func (r *Rotator) Rotate(ctx context.Context, service string, p Pair) (Pair, error) {
	if p.Refresh == "" {
		return Pair{}, ErrNoRefreshToken
	}
	if fresh, ok := r.Superseded(service, p); ok {
		r.graceHits.Add(1)
		return fresh, nil
	}
	k := key(service, p.Refresh)
	ch := r.group.DoChan(k, func() (any, error) {
		// A flight for this credential may have finished between the
		// lookup above and this one starting: never refresh twice.
		if fresh, ok := r.lookup(service, k, p); ok {
			return fresh, nil
		}
		return r.refresh(context.WithoutCancel(ctx), service, k, p)
	})
	select {
	case res := <-ch:
		if res.Shared {
			r.shared.Add(1)
		}
		if res.Err != nil {
			return Pair{}, res.Err
		}
		return res.Val.(Pair), nil
	case <-ctx.Done():
		return Pair{}, &Error{Kind: KindRetryable, Err: fmt.Errorf("waiting for the refresh: %w", ctx.Err())}
	}
}

// refresh runs one Refresher call and remembers its result.
func (r *Rotator) refresh(ctx context.Context, service, k string, p Pair) (Pair, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	r.refreshes.Add(1)
	start := r.now()
	fresh, err := r.ref.Refresh(ctx, service, p.Refresh)
	if err == nil && fresh.Access == "" {
		err = &Error{Kind: KindFailed, Err: errors.New("the refresher returned no access token")}
	}
	ev := r.log.Info()
	if err != nil {
		r.failures.Add(1)
		err = classify(err)
		var e *Error
		errors.As(err, &e)
		ev = r.log.Warn().Str("kind", e.Kind.String()).Str("code", e.Code).AnErr("cause", e.Err)
	}
	ev.Str("event", "token_refresh").Str("service", service).Str("credential", k[:16]).Float64("duration_ms", float64(r.now().Sub(start).Microseconds())/1000).Msg("token refresh")
	if err != nil {
		return Pair{}, err
	}
	if fresh.Refresh == "" {
		fresh.Refresh = p.Refresh // the provider did not rotate it
	}
	r.remember(k, fresh)
	return fresh, nil
}

// classify makes any Refresher error an *Error: unknown failures, context
// deadlines and network errors are retryable (never a reconnect).
func classify(err error) error {
	var e *Error
	if errors.As(err, &e) {
		if e.Kind == 0 {
			e.Kind = KindRetryable
		}
		return e
	}
	return &Error{Kind: KindRetryable, Err: err}
}
