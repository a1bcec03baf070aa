package mcpserver

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/crypto/chacha20poly1305"

	"github.com/elevenmessenger/pinned/sidecar/api"
)

// Confirmations of write calls (docs/MCP.md, "The confirmation flow").
//
// A write tool call runs in two rounds of one MCP tools/call, the
// protocol's multi round-trip request (SEP-2322, protocol 2026-07-28; the
// SDK plays the same rounds server-side with elicitation/create for
// legacy sessions):
//
//  1. The call without a requestState is checked in the sandbox (nothing
//     is sent) and answers input_required: one elicitation (the
//     consent) and a requestState the server sealed — XChaCha20-Poly1305
//     under the confirmation key — over the service, the op, the SHA-256
//     of the args' canonical form, the principal, the expiry, the era and
//     a random nonce. No server keeps anything.
//  2. The retry carries the person's answer and the requestState. Any
//     replica holding the key opens it (a forged or altered one does not
//     open), checks the era, the principal and the expiry, then spends
//     the nonce in the state store (once, across replicas on Redis),
//     then checks service, op and args; only then, and only when the
//     person accepted, is the op run.
//
// The requestState travels through the client, so a client (or whatever
// drives it) can send it back twice, with other args, as another
// principal, late or made up: each is refused before anything is sent.

// Codes of confirmation refusals (isError results; docs/MCP.md).
const (
	CodeConfirmationUnavailable = "confirmation_unavailable" // the client cannot ask the person (no elicitation capability)
	CodeConfirmationDeclined    = "confirmation_declined"    // the person declined or dismissed the confirmation
	CodeConfirmationInvalid     = "confirmation_invalid"     // the requestState does not open under this server's key, or is another principal's or era's
	CodeConfirmationReplayed    = "confirmation_replayed"    // the confirmation was already used
	CodeConfirmationMismatch    = "confirmation_mismatch"    // the call's op or args differ from what the person confirmed
	CodeConfirmationExpired     = "confirmation_expired"     // the confirmation's expiry passed
	CodeStateUnavailable        = "unavailable"              // the state store cannot record the confirmation's nonce; nothing was sent (retry)
)

// codeBusy: the in-memory nonce store is full of live confirmations.
const codeBusy = "busy"

// ConfirmKeySize is the length of Config.ConfirmKey: an XChaCha20-Poly1305
// key.
const ConfirmKeySize = chacha20poly1305.KeySize

// confirmAAD binds a sealed confirmation to its purpose and format.
const confirmAAD = "pinned mcp confirmation v1"

// NonceStore spends a confirmation's nonce once: the RecordNonce of
// sidecar/api.Store (internal/state's Memory, File or Redis).
// api.ErrReplayed: already spent; any other error: the store cannot
// answer (refused, fail closed).
type NonceStore interface {
	RecordNonce(ctx context.Context, nonce string, until, now time.Time) (api.Nonce, error)
}

// confirmation is what a requestState holds, sealed.
type confirmation struct {
	Service   string `json:"svc"`
	Op        string `json:"op"`
	ArgsHash  string `json:"args"` // SHA-256 of the canonical args, hex
	Principal string `json:"sub"`
	Expires   int64  `json:"exp"` // Unix ms
	Nonce     string `json:"n"`   // 16 random bytes, base64url
	// Legacy: issued to a legacy session, where the SDK answers it
	// server-side; such a state never reaches a client, so a client
	// presenting one is refused.
	Legacy bool `json:"legacy,omitempty"`
	// Link is the approval link's id when the consent is on the approval
	// page (approval.go): the op runs only on the person's decision
	// there, never on the client's answer alone.
	Link string `json:"link,omitempty"`
}

// sealer seals and opens confirmations under one key.
type sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (*sealer, error) {
	if key == nil {
		key = make([]byte, ConfirmKeySize)
		_, _ = rand.Read(key) // crypto/rand.Read never fails
	}
	aead, err := chacha20poly1305.NewX(key)
	if err != nil {
		return nil, errors.New("mcpserver: Config.ConfirmKey must be 32 bytes")
	}
	return &sealer{aead}, nil
}

// seal returns the requestState of c: base64url(nonce || ciphertext).
func (s *sealer) seal(c *confirmation) string {
	var n [16]byte
	_, _ = rand.Read(n[:])
	c.Nonce = base64.RawURLEncoding.EncodeToString(n[:])
	plain, _ := json.Marshal(c) // strings and numbers: cannot fail
	out := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	_, _ = rand.Read(out)
	out = s.aead.Seal(out, out, plain, []byte(confirmAAD))
	return base64.RawURLEncoding.EncodeToString(out)
}

// open returns the confirmation sealed in state, or false when it does
// not open (made up, altered, another key).
func (s *sealer) open(state string) (*confirmation, bool) {
	if len(state) > 4096 {
		return nil, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(state)
	if err != nil || len(raw) < s.aead.NonceSize()+s.aead.Overhead() {
		return nil, false
	}
	plain, err := s.aead.Open(nil, raw[:s.aead.NonceSize()], raw[s.aead.NonceSize():], []byte(confirmAAD))
	if err != nil {
		return nil, false
	}
	var c confirmation
	if json.Unmarshal(plain, &c) != nil || c.Nonce == "" {
		return nil, false
	}
	return &c, true
}

// nonceSkew keeps a spent nonce past its confirmation's expiry, so that
// a replica whose clock is behind still sees it spent.
const nonceSkew = 30 * time.Second

// noncePrefix namespaces confirmation nonces in a store shared with
// grant nonces.
const noncePrefix = "mcp-confirm:"

// consume checks a returned requestState for one call and spends its
// nonce; it returns "" when the call may run (given the person's
// accept), else the refusal code. A state that does not open, or is
// another principal's or era's, or expired, is not spent; the others are
// spent before the op and args are compared, so a state tried with other
// args cannot be used after.
func (s *Server) consume(ctx context.Context, state string, legacy bool, principal, service, op, argsHash string) string {
	c, why := s.openState(state, legacy, principal)
	if why != "" {
		return why
	}
	return s.spend(ctx, c, service, op, argsHash)
}

// openState opens a returned requestState and checks its era, principal
// and expiry; nothing is spent.
func (s *Server) openState(state string, legacy bool, principal string) (*confirmation, string) {
	c, ok := s.sealer.open(state)
	if !ok || c.Legacy != legacy || c.Principal != principal {
		return nil, CodeConfirmationInvalid
	}
	if s.cfg.now().After(time.UnixMilli(c.Expires)) {
		return nil, CodeConfirmationExpired
	}
	return c, ""
}

// spend records c's nonce in the state store (once, across replicas),
// then compares the call's service, op and args with c's.
func (s *Server) spend(ctx context.Context, c *confirmation, service, op, argsHash string) string {
	exp := time.UnixMilli(c.Expires)
	if _, err := s.nonces.RecordNonce(ctx, noncePrefix+c.Nonce, exp.Add(nonceSkew), s.cfg.now()); err != nil {
		switch {
		case errors.Is(err, api.ErrReplayed):
			return CodeConfirmationReplayed
		case errors.Is(err, api.ErrFull):
			return codeBusy
		}
		s.log.Error().Str("event", "confirm_state").Str("cause", err.Error()).Msg("the confirmation's nonce could not be recorded; refused")
		return CodeStateUnavailable
	}
	if c.Service != service || c.Op != op || c.ArgsHash != argsHash {
		return CodeConfirmationMismatch
	}
	return ""
}

// confirmed checks a retried write: its requestState (consume's checks),
// then the person's answer — the client's, or for an approval link the
// decision on the page. It returns res, an input_required to send again
// (a link not decided yet, modern era), or why, the refusal code;
// neither: the op may run.
func (s *Server) confirmed(ctx context.Context, req *mcp.CallToolRequest, service, op, argsHash string) (res *mcp.CallToolResult, why string) {
	legacy := !isModern(req)
	c, why := s.openState(req.Params.RequestState, legacy, s.principal(req))
	if why != "" {
		return nil, why
	}
	exp := time.UnixMilli(c.Expires)
	answer, _ := req.Params.InputResponses["confirm"].(*mcp.ElicitResult)
	accepted := answer != nil && answer.Action == "accept"
	approved := false
	if c.Link != "" && accepted && c.Service == service && c.Op == op && c.ArgsHash == argsHash {
		// The client's accept only says the person opened the link: wait
		// for their decision on the page.
		wait := exp.Sub(s.cfg.now())
		if !legacy {
			wait = min(wait, s.cfg.approvalWait())
		}
		dec, decided, err := s.awaitDecision(ctx, c.Link, wait)
		if err != nil {
			s.log.Error().Str("event", "approval_store").Str("cause", err.Error()).Msg("the approval decision could not be read; refused")
			return nil, CodeStateUnavailable
		}
		if !decided {
			if legacy || !s.cfg.now().Before(exp) {
				return nil, CodeConfirmationExpired
			}
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{"confirm": s.linkElicitation(service, c.Link)},
				RequestState:  req.Params.RequestState,
			}, ""
		}
		approved = dec == decisionApprove+c.ArgsHash
		if legacy && req.Session != nil {
			// The out-of-band interaction is over (SHOULD of URL-mode
			// elicitation); a session that is gone misses nothing.
			_ = req.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: c.Link})
		}
	}
	if why := s.spend(ctx, c, service, op, argsHash); why != "" {
		return nil, why
	}
	if c.Link != "" && !approved || c.Link == "" && !accepted {
		return nil, CodeConfirmationDeclined
	}
	return nil, ""
}
