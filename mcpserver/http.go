package mcpserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// bearer requires "Authorization: Bearer <token>" (RFC 6750), compared in
// constant time on SHA-256 digests; otherwise 401 with
// WWW-Authenticate: Bearer and nothing else.
func bearer(next http.Handler, token string) http.Handler {
	want := sha256.Sum256([]byte(token))
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
			http.Error(w, `{"error":{"code":"unauthorized","message":"send Authorization: Bearer <the pinned mcp token>"}}`, http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
