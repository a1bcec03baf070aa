package mcpserver

import (
	"crypto/rand"
	"encoding/base64"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Confirmations of write calls (docs/MCP.md, "The confirmation flow").
//
// A write tool call runs in two rounds of one MCP tools/call, the
// protocol's multi round-trip request (SEP-2322, protocol 2026-07-28; the
// SDK plays the same rounds server-side with elicitation/create for older
// clients):
//
//  1. The call without a requestState is checked in the sandbox (nothing
//     is sent), a confirmation record is issued — bound to the session,
//     the service, the op, the SHA-256 of the args' canonical form and an
//     expiry — and the call answers input_required with one elicitation
//     (the manifest's confirm sentence) and the record's id as
//     requestState.
//  2. The retry carries the person's answer and the requestState. The
//     record is consumed (single use, whatever follows), then checked:
//     same session, same service and op, same args hash, not expired; only
//     then, and only when the person accepted, is the op run.
//
// The requestState travels through the client, so a client (or whatever
// drives it) can send it back twice, with other args, from another
// session or late: each is refused here, before anything is sent.

// Codes of confirmation refusals (isError results; docs/MCP.md).
const (
	CodeConfirmationUnavailable = "confirmation_unavailable" // the client cannot ask the person (no elicitation capability)
	CodeConfirmationDeclined    = "confirmation_declined"    // the person declined or dismissed the confirmation
	CodeConfirmationInvalid     = "confirmation_invalid"     // the requestState names no confirmation of this session
	CodeConfirmationReplayed    = "confirmation_replayed"    // the confirmation was already used
	CodeConfirmationMismatch    = "confirmation_mismatch"    // the call's op or args differ from what the person confirmed
	CodeConfirmationExpired     = "confirmation_expired"     // the confirmation's expiry passed
)

// confirmation is one issued confirmation record.
type confirmation struct {
	session  *mcp.ServerSession
	service  string
	op       string
	argsHash string
	expires  time.Time
	used     bool
}

// ledger holds the confirmation records. A used record is kept until its
// expiry plus its lifetime, so a replay is reported as one.
type ledger struct {
	mu  sync.Mutex
	m   map[string]*confirmation
	ttl time.Duration
	max int
}

func newLedger(ttl time.Duration, max int) *ledger {
	return &ledger{m: map[string]*confirmation{}, ttl: ttl, max: max}
}

// issue records a confirmation and returns its id (the requestState): 16
// random bytes, unpadded base64url. ok is false when max records are held,
// or when the session holds max/16 (at least 1) unanswered live ones
// (answered busy).
func (l *ledger) issue(session *mcp.ServerSession, service, op, argsHash string, now time.Time) (id string, ok bool) {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	id = base64.RawURLEncoding.EncodeToString(b[:])
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, c := range l.m {
		if now.After(c.expires.Add(l.ttl)) {
			delete(l.m, k)
		}
	}
	if len(l.m) >= l.max {
		return "", false
	}
	// One session (an agent looping on a write tool without answering)
	// must not fill the ledger for the others: at most a sixteenth of it
	// each, at least one.
	n := 0
	for _, c := range l.m {
		if c.session == session && !c.used && !now.After(c.expires) {
			n++
		}
	}
	if n >= max(1, l.max/16) {
		return "", false
	}
	l.m[id] = &confirmation{session: session, service: service, op: op, argsHash: argsHash, expires: now.Add(l.ttl)}
	return id, true
}

// consume spends the confirmation id for a call and reports why it cannot
// run it ("" when it can). The record is spent on the first consume,
// whatever its outcome.
func (l *ledger) consume(id string, session *mcp.ServerSession, service, op, argsHash string, now time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.m[id]
	switch {
	case !ok || c.session != session:
		// Another session's id is as unknown here as a made-up one; it is
		// not spent, so a guess cannot burn the person's confirmation.
		return CodeConfirmationInvalid
	case c.used:
		return CodeConfirmationReplayed
	}
	c.used = true
	switch {
	case c.service != service || c.op != op || c.argsHash != argsHash:
		return CodeConfirmationMismatch
	case now.After(c.expires):
		return CodeConfirmationExpired
	}
	return ""
}

// len is the number of records held.
func (l *ledger) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
