package grant

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/elevenmessenger/pinned/secret"
)

// Rotated is the fresh token pair the sidecar hands back to a member after
// it rotated the expiring pair of the member's grant (DESIGN.md, "Expiring
// tokens"). It travels on the op result as `rotated`, sealed to the
// grant's member_key with the same anonymous sealed box as grants
// (SealRotated), standard padded base64; only the member's private key
// opens it (OpenRotated). Plaintext, strict JSON:
//
//	{"v":1, "service":"github", "kind":"oauth",
//	 "access":"…", "refresh":"…", "token_expires_at":"2026-11-30T18:02:00Z"}
//
// token_expires_at is "" (or absent) when the provider did not say: an
// unknown expiry, not "never expires". The member's client replaces the
// connection's stored pair with this one.
type Rotated struct {
	// Service is the manifest id of the connection.
	Service string
	// Kind is the credential kind of the pair: always "oauth".
	Kind string
	// Access is the new access token.
	Access secret.Secret
	// Refresh is the new refresh token (the old one when the provider does
	// not rotate refresh tokens).
	Refresh secret.Secret
	// TokenExpiresAt is when Access expires (RFC 3339), or "" if unknown.
	TokenExpiresAt string
}

// rotatedWire is Rotated's plaintext; every field a string so Secret's
// redaction never reaches the sealed bytes.
type rotatedWire struct {
	V              int    `json:"v"`
	Service        string `json:"service"`
	Kind           string `json:"kind"`
	Access         string `json:"access"`
	Refresh        string `json:"refresh,omitempty"`
	TokenExpiresAt string `json:"token_expires_at,omitempty"`
}

// Validate checks the fields of a rotated pair.
func (r *Rotated) Validate() error {
	switch {
	case !serviceRe.MatchString(r.Service):
		return errors.New("service is not a manifest id")
	case r.Kind != KindOAuth:
		return errors.New(`kind is not "oauth"`)
	case r.Access == "":
		return errors.New("access is missing")
	case len(r.Access) > MaxSecretLen || len(r.Refresh) > MaxSecretLen:
		return errors.New("access or refresh is too long")
	}
	if r.TokenExpiresAt != "" {
		if _, err := time.Parse(time.RFC3339, r.TokenExpiresAt); err != nil {
			return errors.New("token_expires_at is not RFC 3339")
		}
	}
	return nil
}

// SealRotated validates r and seals it to the member's public key with an
// anonymous sealed box, returning standard padded base64. random nil means
// crypto/rand.
func SealRotated(r *Rotated, to PublicKey, random io.Reader) (string, error) {
	if err := r.Validate(); err != nil {
		return "", fmt.Errorf("grant: rotated pair: %w", err)
	}
	return sealWire(rotatedWire{
		V: Version, Service: r.Service, Kind: r.Kind,
		Access: string(r.Access), Refresh: string(r.Refresh), TokenExpiresAt: r.TokenExpiresAt,
	}, to, random, "rotated pair")
}

// OpenRotated opens a rotated pair with the member's private key. Every
// failure is ErrInvalid (errors.Is), with the reason for logs as in Open.
func OpenRotated(sealed string, k *PrivateKey) (*Rotated, error) {
	var w rotatedWire
	if err := openWire(sealed, k, &w, "rotated pair"); err != nil {
		return nil, err
	}
	if w.V != Version {
		return nil, invalid("wrong version")
	}
	r := &Rotated{Service: w.Service, Kind: w.Kind, Access: secret.Secret(w.Access), Refresh: secret.Secret(w.Refresh), TokenExpiresAt: w.TokenExpiresAt}
	if err := r.Validate(); err != nil {
		return nil, invalid(err.Error())
	}
	return r, nil
}
