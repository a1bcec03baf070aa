package sidecar

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// deadFor is how long a refresh token the provider refused stays marked
// dead: longer than any grant lives, so every grant carrying it is
// answered reconnect_required without another refresh.
const deadFor = 30 * 24 * time.Hour

// deadKey names a connection by a digest of its service and refresh
// token, never the token.
func (r *rotation) deadKey() string {
	h := sha256.New()
	h.Write([]byte(r.service))
	h.Write([]byte{0})
	h.Write([]byte(r.pair.Refresh))
	return "dead:" + hex.EncodeToString(h.Sum(nil)[:16])
}

// deadError is reconnect_required for a connection already marked dead:
// no refresh is sent, on any replica (no retry storm).
func (r *rotation) deadError(ctx context.Context, info *reqInfo) *Error {
	until, err := r.s.limits.BackedOff(ctx, r.deadKey(), r.s.cfg.now())
	if err != nil {
		return r.s.unavailable("the shared state store (Redis) did not answer; retry shortly (the grant is not spent)").withCause(err)
	}
	if until.IsZero() {
		return nil
	}
	info.rotation = "dead"
	return newError(CodeReconnectRequired, fmt.Sprintf(
		"the connection to %s has expired or was revoked (its refresh token was refused); reconnect it in Integrations", r.name))
}

// markDead records that the provider refused the connection's refresh
// token, for every replica.
func (r *rotation) markDead(ctx context.Context) {
	if err := r.s.limits.BackOff(ctx, r.deadKey(), r.s.cfg.now().Add(deadFor)); err != nil {
		r.s.log.Warn().Str("event", "token_refresh").Str("service", r.service).AnErr("cause", err).Msg("a dead connection could not be marked; its next op will try the refresh again")
	}
}
