package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/elevenmessenger/pinned/registry"
)

// Scopes of OAuth access tokens (package mcpauth issues them).
const (
	ScopeRead  = "mcp:read"  // list tools, run reads
	ScopeWrite = "mcp:write" // also run writes, each confirmed by the person
)

// CodeInsufficientScope is data.code of a 403 for a call the token's
// scopes do not cover (RFC 6750 3.1 insufficient_scope).
const CodeInsufficientScope = "insufficient_scope"

// Auth says who may use the HTTP endpoint.
type Auth struct {
	// Token is the static bearer token: every scope, for scripts. Empty:
	// none.
	Token string
	// Verify checks OAuth access tokens; nil: the static token only.
	Verify auth.TokenVerifier
	// Metadata is the Protected Resource Metadata (RFC 9728), published at
	// /.well-known/oauth-protected-resource (and under the endpoint's
	// path) when Verify is set.
	Metadata *oauthex.ProtectedResourceMetadata
	// MetadataURL is where Metadata is published, sent in every
	// challenge's resource_metadata.
	MetadataURL string
}

// staticInfo is the static token's TokenInfo: every scope, no subject
// (the principal stays the store's person).
func staticInfo() *auth.TokenInfo {
	return &auth.TokenInfo{Scopes: []string{ScopeRead, ScopeWrite}, Expiration: time.Now().Add(time.Hour)}
}

type gateInfoKey struct{}

// gate authenticates a request (the static token, or an access token
// Verify accepts), requires mcp:read, and mcp:write for a tools/call
// that can run a write. A refusal is 401 or 403 with WWW-Authenticate:
// Bearer (resource_metadata, error, scope; RFC 6750 3, RFC 9728 5.1) and
// a JSON-RPC error naming neither token nor argument.
func (s *Server) gate(next http.Handler, a Auth) http.Handler {
	want := sha256.Sum256([]byte(a.Token))
	// The SDK's own middleware carries the TokenInfo to tool handlers
	// (RequestExtra.TokenInfo); it gets the one checked here.
	inner := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		if ti, ok := ctx.Value(gateInfoKey{}).(*auth.TokenInfo); ok {
			return ti, nil
		}
		return nil, auth.ErrInvalidToken
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	challenge := func(w http.ResponseWriter, status int, errCode, scope, msg, code string) {
		params := []string{`realm="pinned mcp"`}
		if a.Verify != nil && a.MetadataURL != "" {
			params = append(params, fmt.Sprintf("resource_metadata=%q", a.MetadataURL))
		}
		if errCode != "" {
			params = append(params, fmt.Sprintf("error=%q", errCode))
		}
		if scope != "" && a.Verify != nil {
			params = append(params, fmt.Sprintf("scope=%q", scope))
		}
		w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
		httpRefusal(w, status, code, msg)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const prefix = "Bearer "
		h := r.Header.Get("Authorization")
		if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
			challenge(w, http.StatusUnauthorized, "", ScopeRead, "Unauthorized: send Authorization: Bearer <the pinned mcp token or an OAuth access token>", CodeUnauthorized)
			return
		}
		tok := h[len(prefix):]
		var info *auth.TokenInfo
		got := sha256.Sum256([]byte(tok))
		switch {
		case a.Token != "" && subtle.ConstantTimeCompare(got[:], want[:]) == 1:
			info = staticInfo()
		case a.Verify != nil:
			ti, err := a.Verify(r.Context(), tok, r)
			if err != nil || ti == nil || !ti.Expiration.After(time.Now()) {
				s.log.Warn().Str("event", "auth_refused").Str("reason", refusalReason(err)).Msg("access token refused")
				challenge(w, http.StatusUnauthorized, "invalid_token", ScopeRead, "Unauthorized: the access token is not valid for this server (expired, altered, or for another resource or person)", CodeUnauthorized)
				return
			}
			info = ti
		default:
			challenge(w, http.StatusUnauthorized, "", "", "Unauthorized: send Authorization: Bearer <the pinned mcp token>", CodeUnauthorized)
			return
		}
		if !slices.Contains(info.Scopes, ScopeRead) {
			challenge(w, http.StatusForbidden, "insufficient_scope", ScopeRead, "Forbidden: the token lacks the mcp:read scope", CodeInsufficientScope)
			return
		}
		if !slices.Contains(info.Scopes, ScopeWrite) && s.writeCall(w, r) {
			s.log.Warn().Str("event", "auth_refused").Str("reason", "insufficient_scope").Msg("write call without mcp:write")
			challenge(w, http.StatusForbidden, "insufficient_scope", ScopeRead+" "+ScopeWrite, "Forbidden: a write tool needs the mcp:write scope; authorise again with it (step-up). Nothing was sent.", CodeInsufficientScope)
			return
		}
		inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), gateInfoKey{}, info)))
	})
}

// refusalReason is a verifier error for the log: its text, which
// mcpauth.Verifier keeps free of the token.
func refusalReason(err error) string {
	if err == nil {
		return "no token info"
	}
	return clip(err.Error(), 120)
}

// writeCall reports whether r is a tools/call of a tool that can run a
// write: an op tool of a write op, or a compact dispatcher asked for one.
// It restores the body for the SDK.
func (s *Server) writeCall(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost || r.Body == nil {
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, mcp.DefaultMaxRequestBodyBytes))
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false // the SDK refuses the body itself
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return bytes.Contains(body, []byte("tools/call")) // not one message (a batch): refuse what might be a write
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" {
		return false
	}
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return false
	}
	d := s.defs[p.Name]
	if d == nil || !d.write {
		return false
	}
	if d.op != "" {
		return true
	}
	op, _, ok := parseCompact(p.Arguments)
	if !ok {
		return false
	}
	m, _ := s.reg.Service(d.service)
	o, ok := m.Op(op)
	return !ok || o.Access == registry.AccessWrite
}
