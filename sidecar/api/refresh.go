package api

import (
	"context"
	"fmt"
	"time"

	"github.com/elevenmessenger/pinned/secret"
)

// Refresher exchanges a refresh token for a fresh OAuth pair (RFC 6749
// section 6): pinned's is the broker's POST /api/refresh. service is a
// registry id. The tokens are secret.Secret, so they print "[redacted]"
// wherever they pass; an implementation converts the refresh token
// (string(refreshToken)) only where it is sent. A Refresher should return
// a *RefreshError for failures it can classify; any other error is
// treated as retryable.
type Refresher interface {
	Refresh(ctx context.Context, service string, refreshToken secret.Secret) (Pair, error)
}

// Pair is an OAuth credential: access token, refresh token and the access
// token's expiry (zero: unknown). Its String and GoString methods redact
// the tokens.
type Pair struct {
	Access    secret.Secret
	Refresh   secret.Secret
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
func (p Pair) GoString() string { return "api." + p.String() }

// RefreshKind classifies a refresh failure.
type RefreshKind int

const (
	// RefreshRetryable: transient (timeout, 5xx, rate limit, network);
	// retry later. Never a dead connection.
	RefreshRetryable RefreshKind = iota + 1
	// RefreshReconnect: the refresh token is dead (invalid_grant); the
	// member must reconnect the service.
	RefreshReconnect
	// RefreshFailed: neither (a broker misconfiguration such as a wrong
	// instance token, a service the broker has no client for).
	RefreshFailed
)

func (k RefreshKind) String() string {
	switch k {
	case RefreshRetryable:
		return "retryable"
	case RefreshReconnect:
		return "reconnect"
	case RefreshFailed:
		return "failed"
	}
	return "unknown"
}

// Errors a refresh failure matches (errors.Is), by its kind.
const (
	// ErrReconnectRequired: the connection's refresh token is dead.
	ErrReconnectRequired = constError("the connection has expired or was revoked: reconnect it in Integrations")
	// ErrRetryable: the refresh failed for a transient reason.
	ErrRetryable = constError("the token refresh failed temporarily; retry later")
)

// RefreshError is a classified refresh failure. It never holds a token.
type RefreshError struct {
	Kind RefreshKind
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

func (e *RefreshError) Error() string {
	var s string
	switch e.Kind {
	case RefreshReconnect:
		s = ErrReconnectRequired.Error()
	case RefreshRetryable:
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

func (e *RefreshError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrReconnectRequired) and
// errors.Is(err, ErrRetryable) follow Kind.
func (e *RefreshError) Is(target error) bool {
	switch target {
	case ErrReconnectRequired:
		return e.Kind == RefreshReconnect
	case ErrRetryable:
		return e.Kind == RefreshRetryable
	}
	return false
}
