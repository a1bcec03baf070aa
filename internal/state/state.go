// Package state is the sidecar's shared state: what replicas of one bot
// must agree on so that "a grant runs once" and "a single-use refresh
// token is spent once" hold across processes, not just inside one.
//
// Three things live here, behind one small interface, Store:
//
//   - the grant replay cache: a nonce is recorded once, until its grant's
//     expiry plus clock skew; a second record of it is ErrReplayed. A
//     record may be forgotten again by its owner only (a refused op whose
//     grant is not spent).
//   - the refresh lock: one holder per credential (keyed by a hash of the
//     refresh token), with a random token, a TTL, owner-only release and
//     a fence — a number that grows with every holder, so a holder paused
//     past its TTL cannot overwrite what a later holder stored.
//   - the grace cache: the fresh pair a credential was rotated to, for a
//     short TTL, so an op arriving with the just-rotated pair (on any
//     replica) gets the fresh pair instead of spending the old token again.
//
// Three stores implement it: File (one process, durable: a bbolt file
// under the state directory, the default of `pinned sidecar`, so a
// restart inside a grant's TTL still refuses its replay), Memory (one
// process, lost on restart: the zero value of sidecar.Config, and
// `--state-dir ""`) and Redis (several replicas on one Redis; grace
// entries encrypted with XChaCha20-Poly1305 under a key the replicas
// share). A store that cannot answer — Redis unreachable, slower
// than its bound, or answering an error — returns an error matching
// ErrUnavailable, and callers MUST fail closed on it (refuse the op, never
// run it unrecorded).
//
// The package is internal: only the binary's own packages (sidecar,
// internal/rotate, cmd/pinned) use it. It may import the standard
// library, golang.org/x/crypto, github.com/redis/go-redis/v9,
// go.etcd.io/bbolt and package sidecar/grant (the in-memory replay cache); nothing else of the
// project.
package state

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Errors of a Store. Test them with errors.Is.
var (
	// ErrReplayed: the nonce is already recorded and has not expired.
	ErrReplayed = errors.New("state: nonce already used")
	// ErrFull: the (in-memory) replay cache holds its maximum of live
	// nonces; the caller MUST refuse the grant (busy), never run it
	// unrecorded.
	ErrFull = errors.New("state: replay cache full")
	// ErrUnavailable: the store could not answer (unreachable, slower than
	// its bound, an error reply). The caller MUST fail closed.
	ErrUnavailable = errors.New("state: the shared state store is unavailable")
)

// FenceLife is how long a credential's fence counter outlives its last
// lock (Redis). A grace TTL must be shorter; rotate clamps it.
const FenceLife = time.Hour

// Nonce is the receipt of a recorded nonce: it lets its owner, and only
// its owner, forget the record.
type Nonce struct {
	key   string
	token string
}

// Lock is a held refresh lock. Fence grows with every holder of the key:
// a store refuses a grace entry whose fence is not above the stored one.
type Lock struct {
	Key   string
	Token string
	Fence int64
}

// Store is the shared state. Every method is safe for concurrent use and
// bounded in time (the Redis store by its Timeout); an error other than
// ErrReplayed and ErrFull matches ErrUnavailable.
type Store interface {
	// RecordNonce records nonce until the given time (a grant's expiry
	// plus grant.ClockSkew). now is the caller's clock (the in-memory
	// store expires by it). ErrReplayed: already recorded; ErrFull: the
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
	// Kind is "memory" or "redis", for logs and metrics.
	Kind() string
	// Close releases the store's connections.
	Close() error
}

// Error is a store failure; it matches ErrUnavailable. Op names the
// operation ("record", "lock", ...); Err is the cause (never holding a
// nonce, a token or a pair).
type Error struct {
	Op  string
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("state: %s: the shared state store is unavailable: %v", e.Op, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *Error) Is(target error) bool { return target == ErrUnavailable }

func unavailable(op string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Err: err}
}
