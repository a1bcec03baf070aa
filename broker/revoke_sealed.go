package broker

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"

	"golang.org/x/crypto/nacl/box"

	"github.com/elevenmessenger/pinned/internal/brokerapi"
	"github.com/elevenmessenger/pinned/internal/httpserve"
)

// revokeKeys is the broker's X25519 key pair for sealed revocations,
// made at start: a page seals a connection's tokens to its public half
// (GET /api/oauth/config's revoke_key), so the tokens cross pinned web
// and every log as ciphertext only.
type revokeKeys struct {
	pub, priv *[32]byte
}

func newRevokeKeys() (revokeKeys, error) {
	pub, priv, err := box.GenerateKey(rand.Reader)
	return revokeKeys{pub: pub, priv: priv}, err
}

// public is the public key, standard base64.
func (k revokeKeys) public() string { return base64.StdEncoding.EncodeToString(k.pub[:]) }

// sealedRevokeRequest is the body of POST /api/revoke/sealed: Sealed is
// standard base64 of a sealed box (libsodium crypto_box_seal) to the
// revoke key holding {"refresh_token", "access_token"}.
type sealedRevokeRequest struct {
	Service string `json:"service"`
	Sealed  string `json:"sealed"`
}

// revokeSealed answers POST /api/revoke/sealed {service, sealed}: the
// revocation of POST /api/revoke for a caller that holds the tokens but
// no instance token (pinned web's Disconnect). Holding a token is what
// lets a caller revoke it (RFC 7009 section 2.1 lets the client revoke
// its own tokens; here only their holder can name them), so no instance
// token is asked; the rate limit per address still applies. The answer
// is /api/revoke's.
func (b *Broker) revokeSealed(w http.ResponseWriter, r *http.Request) {
	who, body, ok := b.apiRequest(w, r, false)
	if !ok {
		return
	}
	var sr sealedRevokeRequest
	if err := decodeStrict(body, &sr); err != nil || sr.Service == "" {
		writeError(w, r, errorf(brokerapi.CodeBadRequest, "the body must be {\"service\": ..., \"sealed\": ...}"))
		return
	}
	httpserve.NoteOf[httpserve.Basic](r).Set("service", sr.Service)
	raw, err := base64.StdEncoding.Strict().DecodeString(sr.Sealed)
	if err != nil {
		writeError(w, r, errorf(brokerapi.CodeBadRequest, "sealed must be standard base64 of a sealed box"))
		return
	}
	plain, ok := box.OpenAnonymous(nil, raw, b.revokeKeys.pub, b.revokeKeys.priv)
	if !ok {
		writeError(w, r, errorf(brokerapi.CodeBadRequest, "sealed does not open with this broker's revoke key (sealed to another broker, or before it restarted: reload the page)"))
		return
	}
	var req revokeRequest
	if err := decodeStrict(plain, &req); err != nil {
		writeError(w, r, errorf(brokerapi.CodeBadRequest, "the sealed box must hold {\"refresh_token\": ..., \"access_token\": ...}"))
		return
	}
	if req.Service != "" && req.Service != sr.Service {
		writeError(w, r, errorf(brokerapi.CodeBadRequest, "the sealed box names another service"))
		return
	}
	req.Service = sr.Service
	if who == "" {
		who = "sealed"
	}
	b.revokeTokens(w, r, who, req)
}
