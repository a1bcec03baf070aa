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
// api.Refresher call and its result. The refresh itself runs detached from the
// callers' contexts (bounded by Options.Timeout), so a caller giving up
// never loses a pair the provider has already rotated.
//
// A fresh pair is then remembered for a short grace window (DefaultGrace,
// 2 min) under the hash of the refresh token it replaced: an op that
// arrives with the just-rotated pair (its device has not stored the fresh
// one yet) gets the fresh pair instead of burning the old token again.
// Chains (A→B, then B→C) are followed. Nothing is logged but a short hash
// prefix.
//
// # Several replicas
//
// The grace cache and a refresh lock live in an api.Store (pinned's are
// package internal/state's): in memory by default (one process), or on Redis shared
// by the replicas of one bot. The in-process single flight stands in
// front, so one replica asks the store once per credential. The flight
// then takes the credential's lock in the store; after taking it — and
// while waiting for it, up to Options.LockWait — it re-reads the grace
// entry, and uses another replica's pair when that replica rotated
// first. A holder paused past the lock's TTL cannot overwrite the pair a
// later holder stored (the store compares fences). A store that cannot
// answer fails the refresh with a retryable error matching
// api.ErrUnavailable (never a reconnect); a lock not obtained in time is
// retryable too (Code "refresh_in_progress").
//
// # Errors
//
// A dead refresh token (invalid_grant) is api.ErrReconnectRequired: the
// member must reconnect the service in Integrations. A timeout, a 5xx, a
// rate limit or a network failure is api.ErrRetryable, never a reconnect.
// Use errors.Is; *api.RefreshError carries the detail.
//
// # Imports
//
// The package is internal: only the binary's own packages (sidecar,
// mcpserver, internal/demo/webstack, cmd/pinned) use it. It may import
// sidecar/api (the Refresher and Store contracts), internal/state,
// internal/brokerapi (the broker's codes), secret, golang.org/x/sync and
// the standard library; nothing above the sidecar.
package rotate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/rs/zerolog"
	"golang.org/x/sync/singleflight"

	"github.com/elevenmessenger/pinned/internal/state"
	"github.com/elevenmessenger/pinned/secret"
)

// Defaults of Options.
const (
	// DefaultMargin: a pair expiring within this is refreshed before a call.
	DefaultMargin = 60 * time.Second
	// DefaultGrace: how long a fresh pair answers for the pair it replaced.
	DefaultGrace = 2 * time.Minute
	// DefaultTimeout bounds one refresh, whatever the callers' contexts.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxCached bounds the (default, in-memory) grace cache.
	DefaultMaxCached = 10000
	// lockSlack is how much longer than Timeout a refresh lock is held: a
	// holder's refresh ends within Timeout, its store writes within this.
	lockSlack = 10 * time.Second
	// maxChain bounds how many rotations Superseded follows.
	maxChain = 8
)

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

// ErrNoRefreshToken: the pair has no refresh token, so it cannot be
// rotated (DNSimple issues none). Neither retryable nor a reconnect: the
// op's own 401 stands.
var ErrNoRefreshToken = errors.New("the credential has no refresh token and cannot be rotated")

// Options tune a Rotator; zero values pick the defaults.
type Options struct {
	// Margin: refresh before a call when the pair expires within it.
	Margin time.Duration
	// Grace: how long a fresh pair answers for the one it replaced
	// (at most state.FenceLife).
	Grace time.Duration
	// Timeout bounds one api.Refresher call.
	Timeout time.Duration
	// Store holds the grace cache and the refresh locks; default an
	// in-memory store of MaxCached grace entries on Now's clock.
	Store api.Store
	// MaxCached bounds the default in-memory grace cache (entries).
	MaxCached int
	// LockTTL is how long a refresh lock is held at most; default Timeout
	// plus 10 s. A holder paused past it loses the lock (and cannot
	// overwrite a later holder's pair).
	LockTTL time.Duration
	// LockWait bounds the wait for another replica's refresh of the same
	// credential; default Timeout.
	LockWait time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Logger receives one line per refresh (event "token_refresh":
	// service, outcome and an 8-byte hash prefix of the credential: never a
	// token); nil discards.
	Logger *zerolog.Logger
}

// Stats count what a Rotator did.
type Stats struct {
	// Refreshes is the number of api.Refresher calls.
	Refreshes int64
	// Failures is the number of failed api.Refresher calls.
	Failures int64
	// GraceHits counts callers answered from the grace cache.
	GraceHits int64
	// Shared counts callers that waited on another caller's refresh.
	Shared int64
	// Adopted counts refreshes this process did not make because another
	// replica (or a flight that just ended) rotated the credential first.
	Adopted int64
}

// Rotator refreshes pairs with single flight and a grace cache. It is safe
// for concurrent use.
type Rotator struct {
	ref      api.Refresher
	margin   time.Duration
	grace    time.Duration
	timeout  time.Duration
	lockTTL  time.Duration
	lockWait time.Duration
	store    api.Store
	now      func() time.Time
	log      zerolog.Logger
	group    singleflight.Group

	refreshes, failures, graceHits, shared, adopted atomic.Int64
}

// New returns a Rotator refreshing through ref.
func New(ref api.Refresher, opts Options) *Rotator {
	r := &Rotator{
		ref:      ref,
		margin:   opts.Margin,
		grace:    opts.Grace,
		timeout:  opts.Timeout,
		lockTTL:  opts.LockTTL,
		lockWait: opts.LockWait,
		store:    opts.Store,
		now:      opts.Now,
		log:      zerolog.Nop(),
	}
	if r.margin <= 0 {
		r.margin = DefaultMargin
	}
	if r.grace <= 0 {
		r.grace = DefaultGrace
	}
	if r.grace > state.FenceLife {
		r.grace = state.FenceLife
	}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	if r.lockTTL <= 0 {
		r.lockTTL = r.timeout + lockSlack
	}
	if r.lockWait <= 0 {
		r.lockWait = r.timeout
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.store == nil {
		r.store = state.NewMemory(state.MemoryOptions{MaxGrace: opts.MaxCached, Now: r.now})
	}
	if opts.Logger != nil {
		r.log = *opts.Logger // the caller's component; each line is event "token_refresh"
	}
	return r
}

// Stats returns the counters so far.
func (r *Rotator) Stats() Stats {
	return Stats{Refreshes: r.refreshes.Load(), Failures: r.failures.Load(), GraceHits: r.graceHits.Load(), Shared: r.shared.Load(), Adopted: r.adopted.Load()}
}

// Stale reports whether p must be refreshed before a call: it has a
// refresh token and a KNOWN expiry within the margin. A pair with an
// unknown expiry is never stale before a call (see the package doc): it is
// refreshed after a surprise 401.
func (r *Rotator) Stale(p api.Pair) bool {
	if p.Refresh == "" || p.ExpiresAt.IsZero() {
		return false
	}
	return !r.now().Add(r.margin).Before(p.ExpiresAt)
}

// key identifies a credential without holding its token.
func key(service string, refresh secret.Secret) string {
	h := sha256.New()
	h.Write([]byte(service))
	h.Write([]byte{0})
	h.Write([]byte(refresh))
	return hex.EncodeToString(h.Sum(nil))
}

// Superseded returns the pair that replaced p within the grace window
// (following chains of rotations), if any. An error is the store's
// (retryable, matching api.ErrUnavailable).
func (r *Rotator) Superseded(ctx context.Context, service string, p api.Pair) (api.Pair, bool, error) {
	if p.Refresh == "" {
		return api.Pair{}, false, nil
	}
	return r.lookup(ctx, service, key(service, p.Refresh), p)
}

// lookup follows the grace cache from credential k; a pair whose access
// token is p's own (a provider that does not rotate refresh tokens, asked
// again with the pair it already returned) does not count.
func (r *Rotator) lookup(ctx context.Context, service, k string, p api.Pair) (api.Pair, bool, error) {
	var out api.Pair
	found := false
	for range maxChain {
		v, ok, err := r.store.Grace(ctx, k)
		if err != nil {
			return api.Pair{}, false, storeError(err)
		}
		if !ok {
			break
		}
		fresh, err := decodePair(v)
		if err != nil {
			return api.Pair{}, false, storeError(err)
		}
		out, found = fresh, true
		if fresh.Refresh == "" {
			break
		}
		next := key(service, fresh.Refresh)
		if next == k {
			break
		}
		k = next
	}
	if found && out.Access == p.Access {
		return api.Pair{}, false, nil
	}
	return out, found, nil
}

// storeError makes a store failure a retryable *api.RefreshError that still matches
// api.ErrUnavailable.
func storeError(err error) error {
	return &api.RefreshError{Kind: api.RefreshRetryable, Code: "state_unavailable", Err: err}
}

// wirePair is an api.Pair as the grace cache stores it (sealed by the Redis
// store): the tokens as plain strings, since a secret.Secret marshals as
// "[redacted]".
type wirePair struct {
	Access    string    `json:"access"`
	Refresh   string    `json:"refresh"`
	ExpiresAt time.Time `json:"expires_at"`
}

func encodePair(p api.Pair) []byte {
	b, _ := json.Marshal(wirePair{Access: string(p.Access), Refresh: string(p.Refresh), ExpiresAt: p.ExpiresAt})
	return b
}

func decodePair(b []byte) (api.Pair, error) {
	var w wirePair
	if err := json.Unmarshal(b, &w); err != nil || w.Access == "" {
		return api.Pair{}, errors.New("a grace entry is not a token pair")
	}
	w.ExpiresAt = w.ExpiresAt.UTC()
	return api.Pair{Access: secret.Secret(w.Access), Refresh: secret.Secret(w.Refresh), ExpiresAt: w.ExpiresAt}, nil
}

// Before prepares p for a call: the pair that superseded it within the
// grace window if there is one, else a refreshed pair if p is stale, else
// p itself. rotated reports whether the returned pair differs from p (the
// op result must then carry it back to the member).
func (r *Rotator) Before(ctx context.Context, service string, p api.Pair) (api.Pair, bool, error) {
	fresh, ok, err := r.Superseded(ctx, service, p)
	if err != nil {
		return api.Pair{}, false, err
	}
	if ok {
		// Rotated within the grace window: use it as is, even if the
		// provider gave it a lifetime shorter than the margin, so a
		// short-lived pair can never start a chain of refreshes.
		r.graceHits.Add(1)
		return fresh, true, nil
	}
	if !r.Stale(p) {
		return p, false, nil
	}
	fresh, err = r.Rotate(ctx, service, p)
	if err != nil {
		return api.Pair{}, false, err
	}
	return fresh, true, nil
}

// Rotate refreshes p: after a surprise 401, or through Before when p is
// stale. A pair rotated within the grace window is answered from the cache
// (no refresh); concurrent calls for one credential share one flight, and
// flights of several replicas one lock. If ctx ends first, Rotate returns
// a retryable error while the refresh completes in the background and
// lands in the grace cache.
func (r *Rotator) Rotate(ctx context.Context, service string, p api.Pair) (api.Pair, error) {
	if p.Refresh == "" {
		return api.Pair{}, ErrNoRefreshToken
	}
	fresh, ok, err := r.Superseded(ctx, service, p)
	if err != nil {
		return api.Pair{}, err
	}
	if ok {
		r.graceHits.Add(1)
		return fresh, nil
	}
	k := key(service, p.Refresh)
	ch := r.group.DoChan(k, func() (any, error) {
		return r.flight(context.WithoutCancel(ctx), service, k, p)
	})
	select {
	case res := <-ch:
		if res.Shared {
			r.shared.Add(1)
		}
		if res.Err != nil {
			return api.Pair{}, res.Err
		}
		return res.Val.(api.Pair), nil
	case <-ctx.Done():
		return api.Pair{}, &api.RefreshError{Kind: api.RefreshRetryable, Err: fmt.Errorf("waiting for the refresh: %w", ctx.Err())}
	}
}

// flight is one process's refresh of credential k: under the store's lock,
// unless another flight (here or on another replica) rotated it first.
func (r *Rotator) flight(ctx context.Context, service, k string, p api.Pair) (api.Pair, error) {
	// A flight for this credential may have finished between the lookup
	// in Rotate and this one starting: never refresh twice.
	if fresh, ok, err := r.lookup(ctx, service, k, p); err != nil || ok {
		if ok {
			r.adopted.Add(1)
		}
		return fresh, err
	}
	deadline := time.Now().Add(r.lockWait)
	wait := 10 * time.Millisecond
	var l api.Lock
	for {
		var ok bool
		var err error
		l, ok, err = r.store.TryLock(ctx, k, r.lockTTL)
		if err != nil {
			return api.Pair{}, storeError(err)
		}
		// Taken or not: another replica may have rotated meanwhile.
		if fresh, found, lerr := r.lookup(ctx, service, k, p); lerr != nil || found {
			if ok {
				r.unlock(ctx, l)
			}
			if found {
				r.adopted.Add(1)
			}
			return fresh, lerr
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return api.Pair{}, &api.RefreshError{Kind: api.RefreshRetryable, Code: "refresh_in_progress",
				Err: errors.New("another replica holds the refresh lock of this credential")}
		}
		time.Sleep(wait)
		wait = min(2*wait, 200*time.Millisecond)
	}
	defer r.unlock(ctx, l)
	fresh, err := r.refresh(ctx, service, k, p)
	if err != nil {
		return api.Pair{}, err
	}
	stored, err := r.store.PutGrace(ctx, l, encodePair(fresh), r.grace)
	switch {
	case err != nil:
		// The provider rotated: the pair must reach the callers even if the
		// other replicas cannot learn it.
		r.log.Warn().Str("event", "token_refresh").Str("service", service).Str("credential", k[:16]).
			AnErr("cause", err).Msg("the fresh pair could not be stored in the grace cache")
	case !stored:
		// A later holder (our lock expired while we were paused) stored a
		// newer pair: that one is current.
		if newer, ok, lerr := r.lookup(ctx, service, k, p); lerr == nil && ok {
			r.log.Warn().Str("event", "token_refresh").Str("service", service).Str("credential", k[:16]).
				Msg("the refresh lock expired mid-refresh; another replica's newer pair is used")
			return newer, nil
		}
	}
	return fresh, nil
}

func (r *Rotator) unlock(ctx context.Context, l api.Lock) {
	if err := r.store.Unlock(ctx, l); err != nil {
		// The lock expires by itself after LockTTL.
		r.log.Warn().Str("event", "token_refresh").Str("credential", l.Key[:16]).AnErr("cause", err).Msg("the refresh lock could not be released")
	}
}

// refresh runs one api.Refresher call.
func (r *Rotator) refresh(ctx context.Context, service, k string, p api.Pair) (api.Pair, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	r.refreshes.Add(1)
	start := r.now()
	fresh, err := r.ref.Refresh(ctx, service, p.Refresh)
	if err == nil && fresh.Access == "" {
		err = &api.RefreshError{Kind: api.RefreshFailed, Err: errors.New("the refresher returned no access token")}
	}
	ev := r.log.Info()
	if err != nil {
		r.failures.Add(1)
		err = classify(err)
		var e *api.RefreshError
		errors.As(err, &e)
		ev = r.log.Warn().Str("kind", e.Kind.String()).Str("code", e.Code).AnErr("cause", e.Err)
	}
	ev.Str("event", "token_refresh").Str("service", service).Str("credential", k[:16]).Float64("duration_ms", float64(r.now().Sub(start).Microseconds())/1000).Msg("token refresh")
	if err != nil {
		return api.Pair{}, err
	}
	if fresh.Refresh == "" {
		fresh.Refresh = p.Refresh // the provider did not rotate it
	}
	// As the grace cache gives it back (UTC, no monotonic reading), so a
	// pair compares equal whichever replica answers.
	fresh.ExpiresAt = fresh.ExpiresAt.UTC().Round(0)
	return fresh, nil
}

// classify makes any api.Refresher error an *api.RefreshError: unknown failures, context
// deadlines and network errors are retryable (never a reconnect).
func classify(err error) error {
	var e *api.RefreshError
	if errors.As(err, &e) {
		if e.Kind == 0 {
			e.Kind = api.RefreshRetryable
		}
		return e
	}
	return &api.RefreshError{Kind: api.RefreshRetryable, Err: err}
}
