package sidecar

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// Standing read grants (docs/SECURITY.md, "Standing read grants"): a
// grant with a "standing" series id runs its service's read ops any
// number of times until it expires (at most Config.StandingGrantTTL
// ahead) or its member revokes the series. Its nonce is not recorded;
// instead every op asks the state store (api.Standing) whether the
// series is revoked, and binds the series to the scope of its first use,
// so a renewal can extend time but never widen reach.

// useStanding admits one op under the standing grant g: grant_revoked
// when its series was revoked, grant_mismatch when a renewal changes the
// series' scope, unavailable when the store cannot answer (or keeps no
// standing series: fail closed).
func (s *Server) useStanding(ctx context.Context, g *grant.Grant) *Error {
	if s.standing == nil {
		return s.unavailable("this sidecar's state store keeps no standing grants, so a standing grant's revocation cannot be checked; ask the member for a one-shot grant")
	}
	until := g.ExpiresAt.Add(grant.ClockSkew + s.cfg.standingGrantTTL())
	err := s.standing.UseStanding(ctx, g.Standing, g.StandingScope(), until, s.cfg.now())
	switch {
	case err == nil:
		return nil
	case errors.Is(err, api.ErrRevoked):
		return newError(CodeGrantRevoked, "the member revoked this standing grant; ask the member for a new grant").withCause(err)
	case errors.Is(err, api.ErrScopeChanged):
		return newError(CodeGrantMismatch, "this renewal of a standing grant allows other things than the series' first grant (service, access, resources, flows, member key or manifest); a renewal extends time only").withCause(err)
	case errors.Is(err, api.ErrFull):
		return s.busy("too many live standing grants are remembered; retry shortly").withCause(err)
	}
	return s.unavailable("the shared state store (Redis) did not answer, so the standing grant's revocation cannot be checked; retry shortly").withCause(err)
}

// RevokeRequest is the body of POST /v1/grants/revoke.
type RevokeRequest struct {
	// Grant is a sealed grant to this bot (any renewal of a standing
	// grant, expired or not): holding it is the authority to revoke it.
	Grant string `json:"grant"`
}

// RevokeResponse is the answer of POST /v1/grants/revoke.
type RevokeResponse struct {
	// Revoked is "standing" (the grant's whole series: every renewal,
	// sealed before or after) or "grant" (a one-shot grant: its nonce is
	// spent).
	Revoked string `json:"revoked"`
	// Until is when the sidecar may forget the revocation (RFC 3339): by
	// then every grant it covers has expired.
	Until time.Time `json:"until"`
}

func (s *Server) handleRevoke(w http.ResponseWriter, r *http.Request) {
	res, e := s.serveRevoke(w, r)
	s.reply(w, r, res, e)
}

// serveRevoke opens the grant and revokes it. The grant is opened but
// not checked for time: an expired renewal still names its series.
func (s *Server) serveRevoke(w http.ResponseWriter, r *http.Request) (*RevokeResponse, *Error) {
	body, e := s.readBody(w, r)
	if e != nil {
		return nil, e
	}
	var req RevokeRequest
	if e := decode(body, &req); e != nil {
		return nil, e
	}
	if req.Grant == "" {
		return nil, newError(CodeBadRequest, "grant is required")
	}
	g, err := grant.Open(req.Grant, s.key)
	if err != nil {
		return nil, newError(CodeGrantInvalid, "the grant cannot be opened by this bot").withCause(err)
	}
	info := infoFrom(r)
	info.grantID, info.service = grantID(g), clip(g.Service, 64)
	now := s.cfg.now()
	if !g.IsStanding() {
		// A one-shot grant is revoked by spending its nonce.
		until := g.ExpiresAt.Add(grant.ClockSkew)
		if _, err := s.store.RecordNonce(r.Context(), g.Nonce, until, now); err != nil && !errors.Is(err, api.ErrReplayed) {
			if errors.Is(err, api.ErrFull) {
				return nil, s.busy("too many live grants are remembered; retry shortly").withCause(err)
			}
			return nil, s.unavailable("the shared state store (Redis) did not answer; the grant is not revoked, retry").withCause(err)
		}
		return &RevokeResponse{Revoked: "grant", Until: until.UTC()}, nil
	}
	if s.standing == nil {
		return nil, s.unavailable("this sidecar's state store keeps no standing grants; none can run here")
	}
	// Every renewal sealed before now expires by now + TTL (+ skew for
	// the sealer's clock), and is used at most ClockSkew after that.
	until := now.Add(s.cfg.standingGrantTTL() + 2*grant.ClockSkew)
	if exp := g.ExpiresAt.Add(2 * grant.ClockSkew); exp.After(until) {
		until = exp
	}
	if err := s.standing.RevokeStanding(r.Context(), g.Standing, until, now); err != nil {
		return nil, s.unavailable("the shared state store (Redis) did not answer; the standing grant is not revoked, retry").withCause(err)
	}
	s.log.Info().Str("event", "standing_revoked").Str("grant_id", info.grantID).Str("service", info.service).Msg("a standing grant was revoked")
	return &RevokeResponse{Revoked: "standing", Until: until.UTC()}, nil
}
