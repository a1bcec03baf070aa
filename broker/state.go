package broker

import (
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"time"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/elevenmessenger/pinned/internal/brokerapi"
)

// The OAuth state (RFC 6749 section 10.12) is the broker's whole memory of
// a flow in progress: the broker persists nothing. /start seals a
// flowState with XChaCha20-Poly1305 under the configured state key and
// sends it as the state parameter; /callback opens it. Sealing gives:
//
//   - integrity: a state the broker did not seal, or altered by one bit,
//     does not open (state_invalid);
//   - confidentiality: the PKCE verifier rides inside, unreadable to the
//     provider, the browser and anyone who sees the URL;
//   - freshness: an expiry (state_expired) and a random nonce (every state
//     is unique; with browser binding the nonce is also the cookie value).
//
// Wire form: base64url(24-byte random nonce || ciphertext), no padding.
// The associated data names the format version, so a future format can
// never be confused with this one.

// stateAD is the AEAD associated data of format version 1.
var stateAD = []byte("pinned broker oauth state v1")

// maxStateLen bounds the state parameter the callback accepts.
const maxStateLen = 4096

// maxReturnURLLen bounds the return URL /start accepts.
const maxReturnURLLen = 2048

// flowState is the sealed content of the state parameter.
type flowState struct {
	V        int    `json:"v"`
	Service  string `json:"s"`
	Cap      string `json:"c"`
	Return   string `json:"r"`
	Verifier string `json:"k,omitempty"` // PKCE code verifier (RFC 7636), when the provider supports it
	Expires  int64  `json:"e"`           // Unix seconds
	Nonce    string `json:"n"`           // base64url of 16 random bytes
}

func newAEAD(key []byte) (cipher.AEAD, error) { return chacha20poly1305.NewX(key) }

// seal encrypts st into a state parameter.
func seal(aead cipher.AEAD, st *flowState) (string, error) {
	plain, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, stateAD)), nil
}

// open decrypts and checks a state parameter for service at now.
func open(aead cipher.AEAD, raw, service string, now time.Time) (*flowState, *brokerError) {
	if raw == "" {
		return nil, errorf(brokerapi.CodeStateMissing, "the callback has no state parameter")
	}
	invalid := errorf(brokerapi.CodeStateInvalid, "the state parameter was not issued by this broker or was altered; start the connection again")
	if len(raw) > maxStateLen {
		return nil, invalid
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(raw) // strict: one spelling per state
	if err != nil || len(b) < aead.NonceSize()+aead.Overhead() {
		return nil, invalid
	}
	plain, err := aead.Open(nil, b[:aead.NonceSize()], b[aead.NonceSize():], stateAD)
	if err != nil {
		return nil, invalid
	}
	var st flowState
	if err := json.Unmarshal(plain, &st); err != nil || st.V != 1 || st.Service == "" || st.Return == "" || len(st.Nonce) < 16 {
		return nil, invalid
	}
	if !now.Before(time.Unix(st.Expires, 0)) {
		return nil, errorf(brokerapi.CodeStateExpired, "the connection took too long; start it again")
	}
	if st.Service != service {
		return nil, errorf(brokerapi.CodeStateServiceMismatch, "the state belongs to another service's connection")
	}
	return &st, nil
}
