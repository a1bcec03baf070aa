package api

import (
	"context"
	"time"
)

// Errors of a Standing store. Test them with errors.Is.
const (
	// ErrRevoked: the standing grant's series was revoked.
	ErrRevoked = constError("state: standing grant revoked")
	// ErrScopeChanged: the series was first used with another scope (a
	// renewal that would widen or change what it allows).
	ErrScopeChanged = constError("state: standing grant scope changed")
)

// Standing holds what replicas must agree on about standing read grants
// (docs/SECURITY.md, "Standing read grants"): each series' scope, fixed at
// its first use, and its revocation. pinned's stores implement it. Every
// method is safe for concurrent use and bounded in time; an error other
// than ErrRevoked, ErrScopeChanged and ErrFull matches ErrUnavailable,
// and the sidecar then fails closed.
type Standing interface {
	// UseStanding admits one op under a renewal of series whose scope is
	// scope (grant.Grant.StandingScope): ErrRevoked when the series is
	// revoked, ErrScopeChanged when it was first used with another scope.
	// Otherwise it binds the series to scope if it was not yet, and keeps
	// the record at least until until. now is the caller's clock.
	UseStanding(ctx context.Context, series, scope string, until, now time.Time) error
	// RevokeStanding revokes series until until (at least): every later
	// UseStanding of it is ErrRevoked, whatever scope it names.
	RevokeStanding(ctx context.Context, series string, until, now time.Time) error
}
