package api

import (
	"context"
	"time"
)

// Errors of a Store. Test them with errors.Is.
const (
	// ErrReplayed: the nonce is already recorded and has not expired.
	ErrReplayed = constError("state: nonce already used")
	// ErrFull: the (in-memory) replay cache holds its maximum of live
	// nonces; the caller MUST refuse the grant (busy), never run it
	// unrecorded.
	ErrFull = constError("state: replay cache full")
	// ErrUnavailable: the store could not answer (unreachable, slower than
	// its bound, an error reply). The caller MUST fail closed.
	ErrUnavailable = constError("state: the shared state store is unavailable")
)

// Nonce is the receipt of a recorded nonce: it lets its owner, and only
// its owner, forget the record. Key and Token are the store's own.
type Nonce struct {
	Key   string
	Token string
}

// Lock is a held refresh lock. Fence grows with every holder of the key:
// a store refuses a grace entry whose fence is not above the stored one.
type Lock struct {
	Key   string
	Token string
	Fence int64
}

// RecordChecker is a Store that is also the sidecar's Limiter and can
// record a nonce and read a credential's back-off (Limiter.BackedOff of
// backoffKey) in one round trip: the op's hot path then waits for the
// store once. The nonce is recorded as RecordNonce records it, with its
// errors; until is the back-off's end (zero when none), read after the
// record.
type RecordChecker interface {
	RecordNonceBackedOff(ctx context.Context, nonce string, until, now time.Time, backoffKey string) (n Nonce, backedOff time.Time, err error)
}

// Store is the state a bot's replicas share: the grant replay cache, the
// refresh locks and the grace cache of just-rotated pairs. Every method is
// safe for concurrent use and bounded in time; an error other than
// ErrReplayed and ErrFull matches ErrUnavailable, and the sidecar then
// fails closed (docs/OPERATING.md, "Several replicas").
type Store interface {
	// RecordNonce records nonce until the given time (a grant's expiry
	// plus grant.ClockSkew). now is the caller's clock (an in-memory store
	// expires by it). ErrReplayed: already recorded; ErrFull: an
	// in-memory bound is reached. Nothing changes on an error.
	RecordNonce(ctx context.Context, nonce string, until, now time.Time) (Nonce, error)
	// ForgetNonce removes the record n, atomically and only when it is
	// still n's own (not a record another replica made after a failover
	// lost n's).
	ForgetNonce(ctx context.Context, n Nonce) error

	// TryLock takes the refresh lock of key for ttl without waiting: ok is
	// false when another holder has it.
	TryLock(ctx context.Context, key string, ttl time.Duration) (l Lock, ok bool, err error)
	// Unlock releases l if it is still l's own (compare and delete).
	Unlock(ctx context.Context, l Lock) error

	// Grace returns the grace entry of key (nil, false when none).
	Grace(ctx context.Context, key string) (value []byte, ok bool, err error)
	// PutGrace stores value as the grace entry of l.Key for ttl, unless
	// the entry stored there has a fence at or above l.Fence (a later
	// holder stored it): stored reports which. The write is atomic.
	PutGrace(ctx context.Context, l Lock, value []byte, ttl time.Duration) (stored bool, err error)

	// Ping checks the store answers (readiness).
	Ping(ctx context.Context) error
	// Kind names the store ("memory", "file", "redis"), for logs and
	// metrics.
	Kind() string
	// Close releases the store's connections.
	Close() error
}
