package sidecar

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/rotate"
	"github.com/elevenmessenger/pinned/secret"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// Token rotation in the op path (DESIGN.md, "Expiring tokens"; the core is
// package rotate). For a grant carrying a refresh token, on a service whose
// manifest declares refresh:
//
//  1. Before the call, a pair that is stale (known expiry within the
//     margin) or was superseded within the grace window is rotated — only
//     when the grant has a member_key to seal the fresh pair to. Without
//     one the op is refused with rotation_refused and nothing is
//     refreshed: a failed op beats a severed connection.
//  2. The op runs with the (possibly fresh) access token.
//  3. A surprise 401 (upstream_error, upstream_status 401) rotates the pair
//     once and retries the op once, if this op has not rotated yet. A
//     second 401 is returned as is: an op rotates at most once, never in a
//     loop.
//  4. When the op rotated, the fresh pair rides back as `rotated`, sealed
//     to the member_key, on the answer whatever the op's outcome.
//
// Without a Refresher (no broker configured) nothing rotates: a stale pair
// runs as is, and a 401 to a grant with a refresh token is answered
// rotation_not_configured.

// rotation is one op's state of its grant's expiring pair.
type rotation struct {
	s         *Server
	service   string
	name      string // the service's human name, for messages
	memberKey string
	kind      string   // the grant's credential kind
	pair      api.Pair // the pair the op runs with
	rotated   bool     // pair is not the grant's: it goes back to the member
	tried     bool     // this op rotated or tried to: at most once per op
}

// rotationFor returns the rotation state of an op under g, or nil when its
// credential cannot rotate: no refresh token, or a service whose manifest
// declares no refresh tokens (its pair runs as is and a 401 stands).
func (s *Server) rotationFor(service string, g *grant.Grant) *rotation {
	if g.Refresh == "" {
		return nil
	}
	m, ok := s.services[service]
	if !ok || m.Auth.OAuth == nil || !m.Auth.OAuth.Refresh {
		return nil
	}
	// grant.Validate accepted token_expires_at, so it parses; "" is an
	// unknown expiry (the zero time), never "does not expire".
	exp, _ := rotate.ParseExpiry(g.TokenExpiresAt)
	return &rotation{
		s: s, service: service, name: m.Name, memberKey: g.MemberKey, kind: g.Kind,
		pair: api.Pair{Access: g.Secret, Refresh: g.Refresh, ExpiresAt: exp},
	}
}

// credential is what the op runs with: the grant's own token, or the fresh
// one (an OAuth credential, sent as Bearer).
func (r *rotation) credential() host.Credential {
	kind := r.kind
	if r.rotated {
		kind = grant.KindOAuth
	}
	return host.Credential{Kind: kind, Secret: secret.Secret(r.pair.Access)}
}

// before rotates a stale or superseded pair before the call.
func (r *rotation) before(ctx context.Context, info *reqInfo) *Error {
	rot := r.s.rot
	if rot == nil {
		return nil // rotation is off: the pair runs as is
	}
	if r.memberKey == "" {
		_, ok, err := rot.Superseded(ctx, r.service, r.pair)
		if err != nil {
			info.rotation = "failed"
			return r.refreshError(ctx, err)
		}
		if ok || rot.Stale(r.pair) {
			info.rotation = "refused"
			return newError(CodeRotationRefused, fmt.Sprintf(
				"the %s token of this grant has expired and must be rotated, but this grant cannot carry a rotated token back; the member's client must include member_key", r.name))
		}
		return nil
	}
	if rot.Stale(r.pair) {
		if e := r.deadError(ctx, info); e != nil {
			r.tried = true
			return e
		}
	}
	p, rotated, err := rot.Before(ctx, r.service, r.pair)
	if err != nil {
		r.tried = true
		info.rotation = "failed"
		return r.refreshError(ctx, err)
	}
	if rotated {
		r.tried, r.rotated, r.pair = true, true, p
		info.rotation = "before_call"
	}
	return nil
}

// unauthorized handles a 401 from the provider: it reports whether the op
// should be retried with the rotated pair, or the error to answer instead
// (nil with retry false: the 401 stands).
func (r *rotation) unauthorized(ctx context.Context, info *reqInfo, he *host.Error) (retry bool, e *Error) {
	rot := r.s.rot
	switch {
	case rot == nil:
		e := newError(CodeRotationNotConfigured, fmt.Sprintf(
			"%s rejected the token (HTTP 401) and this sidecar cannot rotate it: no broker is configured (docs/OPERATING.md)", r.name))
		e.UpstreamStatus = he.Status
		return false, e
	case r.tried:
		return false, nil // rotated already: a second 401 is the answer
	case r.memberKey == "":
		info.rotation = "refused"
		e := newError(CodeRotationRefused, fmt.Sprintf(
			"%s rejected the token (HTTP 401) and it must be rotated, but this grant cannot carry a rotated token back; the member's client must include member_key", r.name))
		e.UpstreamStatus = he.Status
		return false, e
	}
	r.tried = true
	if e := r.deadError(ctx, info); e != nil {
		e.UpstreamStatus = he.Status
		return false, e
	}
	p, err := rot.Rotate(ctx, r.service, r.pair)
	if err != nil {
		info.rotation = "failed"
		return false, r.refreshError(ctx, err)
	}
	r.rotated, r.pair = true, p
	info.rotation = "after_401"
	return true, nil
}

// refreshError maps a failed rotation: a dead refresh token is
// reconnect_required, a transient failure refresh_unavailable (never a
// reconnect), anything else refresh_failed.
func (r *rotation) refreshError(ctx context.Context, err error) *Error {
	if ctx.Err() != nil && errors.Is(err, api.ErrRetryable) {
		// The caller went away while the refresh was in flight; the refresh
		// completes in the background and lands in the grace cache.
		return newError(CodeCanceled, "the caller went away").withCause(err)
	}
	switch {
	case errors.Is(err, api.ErrUnavailable):
		return r.s.unavailable("the shared state store (Redis) did not answer; retry shortly (the grant is not spent)").withCause(err)
	case errors.Is(err, api.ErrReconnectRequired):
		r.markDead(ctx)
		return newError(CodeReconnectRequired, fmt.Sprintf(
			"the connection to %s has expired or was revoked; reconnect it in Integrations", r.name)).withCause(err)
	case errors.Is(err, api.ErrRetryable):
		e := newError(CodeRefreshUnavailable, fmt.Sprintf(
			"refreshing the %s token failed temporarily; retry shortly (the grant is not spent)", r.name)).withCause(err)
		wait := DefaultRefreshRetryAfter
		var re *api.RefreshError
		if errors.As(err, &re) && re.RetryAfter > 0 {
			wait = re.RetryAfter
		}
		e.RetryAfter = int((wait + time.Second - 1) / time.Second)
		return e
	}
	return newError(CodeRefreshFailed, fmt.Sprintf(
		"the broker refused to refresh the %s token (a configuration problem); the sidecar log has the cause", r.name)).withCause(err)
}

// seal returns the fresh pair sealed to the member key, or "" when the op
// did not rotate.
func (r *rotation) seal() (string, *Error) {
	if r == nil || !r.rotated {
		return "", nil
	}
	to, err := grant.ParsePublicKey(r.memberKey)
	if err != nil { // grant.Validate checked it: unreachable
		return "", newError(CodeInternal, "the member key cannot be sealed to").withCause(err)
	}
	sealed, err := grant.SealRotated(&grant.Rotated{
		Service: r.service, Kind: grant.KindOAuth,
		Access: secret.Secret(r.pair.Access), Refresh: secret.Secret(r.pair.Refresh),
		TokenExpiresAt: rotate.FormatExpiry(r.pair.ExpiresAt),
	}, to, nil)
	if err != nil {
		return "", newError(CodeInternal, "the rotated token pair could not be sealed").withCause(err)
	}
	return sealed, nil
}

// unauthorized401 reports whether a host error is the provider's 401.
func unauthorized401(he *host.Error) bool {
	return he != nil && Code(he.Code) == CodeUpstreamError && he.Status == http.StatusUnauthorized
}

// countingRefresher counts every refresh sent to the broker, by service
// and outcome (the Rotator calls it once per refresh, whatever the number
// of ops sharing it).
type countingRefresher struct {
	next api.Refresher
	m    *prometheus.CounterVec
}

func (c countingRefresher) Refresh(ctx context.Context, service string, refreshToken secret.Secret) (api.Pair, error) {
	p, err := c.next.Refresh(ctx, service, refreshToken)
	outcome := "ok"
	if err != nil {
		outcome = api.RefreshRetryable.String() // as the Rotator classifies an unknown error
		var re *api.RefreshError
		if errors.As(err, &re) && re.Kind != 0 {
			outcome = re.Kind.String()
		}
	} else if p.Access == "" {
		outcome = api.RefreshFailed.String()
	}
	c.m.WithLabelValues(service, outcome).Inc()
	return p, err
}
