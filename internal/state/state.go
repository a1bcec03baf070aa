// Package state is the sidecar's shared state: what replicas of one bot
// must agree on so that "a grant runs once" and "a single-use refresh
// token is spent once" hold across processes, not just inside one.
//
// Three things live here, behind one small interface, sidecar/api.Store:
//
//   - the grant replay cache: a nonce is recorded once, until its grant's
//     expiry plus clock skew; a second record of it is api.ErrReplayed. A
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
// Besides, Memory and Redis hold short-lived values (values.go): small
// records written once under a key and read or taken by any replica —
// `pinned mcp`'s OAuth codes and approval links.
//
// Three stores implement it: File (one process, durable: a bbolt file
// under the state directory, the default of `pinned sidecar`, so a
// restart inside a grant's TTL still refuses its replay), Memory (one
// process, lost on restart: the zero value of sidecar.Config, and
// `--state-dir ""`) and Redis (several replicas on one Redis; grace
// entries encrypted with XChaCha20-Poly1305 under a key the replicas
// share). A store that cannot answer — Redis unreachable, slower
// than its bound, or answering an error — returns an error matching
// api.ErrUnavailable, and callers MUST fail closed on it (refuse the op, never
// run it unrecorded).
//
// The package is internal: only the binary's own packages (sidecar,
// internal/rotate, cmd/pinned) use it. It may import the standard
// library, golang.org/x/crypto, github.com/redis/go-redis/v9,
// go.etcd.io/bbolt, sidecar/api (the contract it implements) and
// sidecar/grant (the in-memory replay cache); nothing else of the
// project.
package state

import (
	"fmt"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"
)

// FenceLife is how long a credential's fence counter outlives its last
// lock (Redis). A grace TTL must be shorter; rotate clamps it.
const FenceLife = time.Hour

// Error is a store failure; it matches api.ErrUnavailable. Op names the
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

// Is makes errors.Is(err, api.ErrUnavailable) true.
func (e *Error) Is(target error) bool { return target == api.ErrUnavailable }

func unavailable(op string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Err: err}
}
