package mcpserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elevenmessenger/pinned/internal/httperr"
	"github.com/elevenmessenger/pinned/internal/httpserve"
)

// Codes of the HTTP transport's own refusals, in error.data.code.
const (
	CodeUnauthorized = "unauthorized" // 401: no or a wrong bearer token
	CodeCrossOrigin  = "cross_origin" // 403: another site's page, or a DNS-rebinding Host on loopback
)

// rpcRefused is the JSON-RPC error code of an HTTP-level refusal: JSON-RPC
// 2.0 (section 5.1) leaves -32000 to -32099 to the server.
const rpcRefused = -32000

// Handler serves the streamable HTTP transport (stateful sessions, so a
// write's confirmation can reach the person) behind the services' chain
// (package internal/httpserve: request id, one access event a request).
// With token set, every request must carry "Authorization: Bearer
// <token>" (compared in constant time). A loopback request must name a
// loopback Host (DNS rebinding), and Go's cross-origin protection refuses
// another site's browser requests. Refusals are JSON-RPC error responses
// with id null and error.data.code (CodeUnauthorized, CodeCrossOrigin).
func (s *Server) Handler(token string) http.Handler {
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		SessionTimeout: 30 * time.Minute,
	})
	r := httpserve.NewRouter(httpserve.Options{Log: s.log, Fail: func(w http.ResponseWriter, r *http.Request, code, msg string, cause error) {
		refuse(w, r, statusOf[code], code, msg, cause)
	}})
	r.Use(httpserve.LoopbackHost(nil, func(w http.ResponseWriter, r *http.Request) {
		refuse(w, r, http.StatusForbidden, CodeCrossOrigin, "refused: the Host header names another site on this loopback server (DNS rebinding?)",
			errors.New("a non-loopback Host on a loopback connection"))
	}))
	// Go's cross-origin protection (the SDK's own option is deprecated
	// for it), answering in the transport's shape.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refuse(w, r, http.StatusForbidden, CodeCrossOrigin, "refused: a cross-origin request from a browser", errors.New("cross-origin request"))
	}))
	r.Use(cop.Handler)
	if token != "" {
		r.Use(bearer(token))
	}
	r.Handle("/*", sdk)
	return r
}

// statusOf is the status of each code the chain answers with itself.
var statusOf = map[string]int{
	httpserve.CodeNotFound:         http.StatusNotFound,
	httpserve.CodeMethodNotAllowed: http.StatusMethodNotAllowed,
	httpserve.CodeInternal:         http.StatusInternalServerError,
}

// bearer requires "Authorization: Bearer <token>" (RFC 6750), compared in
// constant time on SHA-256 digests; otherwise 401 with
// WWW-Authenticate: Bearer.
func bearer(token string) func(http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			const prefix = "Bearer "
			h := r.Header.Get("Authorization")
			ok := len(h) > len(prefix) && strings.EqualFold(h[:len(prefix)], prefix)
			if ok {
				got := sha256.Sum256([]byte(h[len(prefix):]))
				ok = subtle.ConstantTimeCompare(got[:], want[:]) == 1
			}
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="pinned mcp"`)
				refuse(w, r, http.StatusUnauthorized, CodeUnauthorized, "send Authorization: Bearer <the pinned mcp token>", nil)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// refuse answers status with a JSON-RPC error response whose data.code is
// code, and hands code and cause to the access event.
func refuse(w http.ResponseWriter, r *http.Request, status int, code, msg string, cause error) {
	httpserve.NoteOf[httpserve.Basic](r).Fail(code, cause)
	httperr.WriteRaw(w, status, rpcError(nil, rpcRefused, msg, map[string]string{"code": code}))
}

// rpcError is a JSON-RPC 2.0 error response (section 5): id nil is null,
// for a request whose id is unknown; data nil is left out.
func rpcError(id any, code int64, msg string, data any) []byte {
	type rpcErr struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   rpcErr `json:"error"`
	}{"2.0", id, rpcErr{code, msg, data}})
	return b
}
