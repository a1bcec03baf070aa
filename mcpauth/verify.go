package mcpauth

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Verifier checks access tokens for one resource and one person.
type Verifier struct {
	// Key is the authorization server's public key.
	Key ed25519.PublicKey
	// Issuer, Resource and Subject must equal the token's iss, one of its
	// aud (RFC 8707; one trailing slash ignored) and its sub.
	Issuer, Resource, Subject string
	// Leeway is the clock skew allowed on exp, nbf and iat.
	Leeway time.Duration
}

// Verify is an auth.TokenVerifier: it accepts only an EdDSA JWT signed by
// Key, unexpired, for Issuer, Resource and Subject, and returns its
// scopes, expiry and subject (TokenInfo.UserID). Every refusal wraps
// auth.ErrInvalidToken and never contains the token.
func (v *Verifier) Verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	var c Claims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return v.Key, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}), jwt.WithIssuer(strings.TrimSuffix(v.Issuer, "/")),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(v.Leeway))
	if err != nil {
		return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, reason(err))
	}
	switch {
	case !oauthex.MatchesResource(c.Audience, v.Resource):
		return nil, fmt.Errorf("%w: the token is for another resource", auth.ErrInvalidToken)
	case c.Subject != v.Subject:
		return nil, fmt.Errorf("%w: the token is for another person", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{Scopes: strings.Fields(c.Scope), Expiration: c.ExpiresAt.Time, UserID: c.Subject}, nil
}

// reason names a parse failure without echoing the token.
func reason(err error) string {
	switch {
	case errorIs(err, jwt.ErrTokenExpired):
		return "the token expired"
	case errorIs(err, jwt.ErrTokenSignatureInvalid), errorIs(err, jwt.ErrTokenUnverifiable):
		return "the token's signature does not verify"
	case errorIs(err, jwt.ErrTokenInvalidIssuer):
		return "the token is from another issuer"
	default:
		return "the token is not a valid access token of this server"
	}
}

func errorIs(err, target error) bool { return errors.Is(err, target) }
