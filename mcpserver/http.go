package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elevenmessenger/pinned/internal/httpserve"
)

// Codes in data.code of the HTTP transport's own refusals (docs/MCP.md).
const (
	CodeUnauthorized    = "unauthorized"     // no or a wrong bearer token (401)
	CodeForbiddenHost   = "forbidden_host"   // a loopback server reached under another Host name: DNS rebinding (403)
	CodeForbiddenOrigin = "forbidden_origin" // a browser's cross-origin request (403)
)

// Handler serves the streamable HTTP transport on one endpoint for both
// eras: a request whose MCP-Protocol-Version header is 2026-07-28 or later
// is served statelessly (each POST on its own; a write's confirmation
// comes back as input_required), any other by a legacy session
// (initialize, Mcp-Session-Id, the confirmation as elicitation/create on
// the call's event stream). With token set, every request must carry
// "Authorization: Bearer <token>" (compared in constant time). A
// loopback server refuses another Host name (DNS rebinding) and every
// server refuses a browser's cross-origin request. Every refusal is a
// JSON-RPC error response with id null, the status code, and a stable
// data.code.
func (s *Server) Handler(token string) http.Handler {
	return s.HandlerAuth(Auth{Token: token})
}

// HandlerAuth is Handler with OAuth besides the static token (a.Verify):
// it publishes a.Metadata (RFC 9728) and requires the scopes of gate.
// With neither a.Token nor a.Verify, no request is authenticated.
func (s *Server) HandlerAuth(a Auth) http.Handler {
	getServer := func(*http.Request) *mcp.Server { return s.mcp }
	legacy := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{SessionTimeout: 30 * time.Minute})
	modern := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{Stateless: true})
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		modernReq := r.Header.Get("MCP-Protocol-Version") >= Revision20260728
		if s.cfg.Protocol == Revision20260728 || modernReq && s.cfg.Protocol != Revision20251125 {
			modern.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && !opensSession(w, r) {
			return // answered: a request before initialize
		}
		legacy.ServeHTTP(w, r)
	})
	if a.Token != "" || a.Verify != nil {
		h = s.gate(h, a)
	}
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		httpRefusal(w, http.StatusForbidden, CodeForbiddenOrigin, "Forbidden: a cross-origin request from a browser; pinned mcp serves agents, not web pages")
	}))
	h = cop.Handler(h)
	if a.Verify != nil && a.Metadata != nil {
		mux := http.NewServeMux()
		prm := auth.ProtectedResourceMetadataHandler(a.Metadata)
		mux.Handle("/.well-known/oauth-protected-resource", prm)
		mux.Handle("/.well-known/oauth-protected-resource/", prm)
		mux.Handle("/", h)
		h = mux
	}
	var public []string // the resource's and the approval page's own host names, reached through a TLS proxy
	if a.Metadata != nil {
		if u, err := url.Parse(a.Metadata.Resource); err == nil {
			public = append(public, u.Host)
		}
	}
	front := jsonErrors(h)
	if s.cfg.ApprovalURL != "" {
		// The approval page (approval.go) is the person's, in a browser:
		// no bearer token, its own owner secret and CSRF check.
		if u, err := url.Parse(s.cfg.ApprovalURL); err == nil {
			public = append(public, u.Host)
		}
		mux := http.NewServeMux()
		mux.Handle("/approve/", s.approvalHandler())
		mux.Handle("/", front)
		front = mux
	}
	// The services' chain (package internal/httpserve) in front: the
	// request id and one access event a request; every path and method
	// goes on to the transport, whose refusals are JSON-RPC errors.
	r := httpserve.NewRouter(httpserve.Options{Log: s.log, Fail: func(w http.ResponseWriter, _ *http.Request, code, msg string, _ error) {
		httpRefusal(w, http.StatusInternalServerError, code, msg)
	}})
	r.Handle("/*", rebinding(front, public))
	return r
}

// httpCodes are the data.code of the SDK's own HTTP refusals, by status.
var httpCodes = map[int]string{
	http.StatusBadRequest:            "bad_request",
	http.StatusForbidden:             "forbidden",
	http.StatusNotFound:              "not_found",
	http.StatusMethodNotAllowed:      "method_not_allowed",
	http.StatusConflict:              "conflict",
	http.StatusRequestEntityTooLarge: "request_too_large",
	http.StatusUnsupportedMediaType:  "unsupported_media_type",
}

// jsonErrors rewrites the SDK's plain-text refusals (a wrong
// Content-Type or Accept, an unknown session, a GET without one) into
// the same JSON-RPC error shape as httpRefusal's; its JSON answers and
// event streams pass untouched.
func jsonErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&errorWriter{ResponseWriter: w}, r)
	})
}

// errorWriter holds back a plain-text error body to re-encode it.
type errorWriter struct {
	http.ResponseWriter
	status  int  // a plain-text error's status, 0 otherwise
	written bool // the header went out
	body    []byte
}

func (e *errorWriter) WriteHeader(status int) {
	if e.written || e.status != 0 {
		return
	}
	if status >= 400 && strings.HasPrefix(e.Header().Get("Content-Type"), "text/plain") {
		e.status = status
		return
	}
	e.written = true
	e.ResponseWriter.WriteHeader(status)
}

func (e *errorWriter) Write(b []byte) (int, error) {
	if !e.written && e.status == 0 {
		e.WriteHeader(http.StatusOK)
	}
	if e.status != 0 {
		if len(e.body) < 4096 {
			e.body = append(e.body, b...)
		}
		e.flushError()
		return len(b), nil
	}
	return e.ResponseWriter.Write(b)
}

// flushError sends the held error once, as JSON.
func (e *errorWriter) flushError() {
	if e.written {
		return
	}
	e.written = true
	code := httpCodes[e.status]
	rpc := int64(jsonrpc.CodeInvalidRequest)
	if code == "" {
		code, rpc = "internal", jsonrpc.CodeInternalError
	}
	e.Header().Del("X-Content-Type-Options")
	data, _ := json.Marshal(map[string]string{"code": code})
	writeRPCError(e.ResponseWriter, e.status, nil, &jsonrpc.Error{Code: rpc, Message: strings.TrimSpace(string(e.body)), Data: data})
}

// Flush passes a flush on (event streams), sending a held error first.
func (e *errorWriter) Flush() {
	if e.status != 0 {
		e.flushError()
		return
	}
	if f, ok := e.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (e *errorWriter) Unwrap() http.ResponseWriter { return e.ResponseWriter }

// opensSession reads a legacy POST that carries no session id: it must be
// initialize (or ping, or a notification) — any other request before a
// session exists is answered -32600 here, as the stdio transport does
// (lifecycle.go). It restores the body for the SDK.
func opensSession(w http.ResponseWriter, r *http.Request) bool {
	accept := strings.Join(r.Header.Values("Accept"), ",")
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" ||
		!strings.Contains(accept, "application/json") || !strings.Contains(accept, "text/event-stream") {
		return true // the SDK refuses the request itself (415, 400)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, mcp.DefaultMaxRequestBodyBytes))
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return true // the SDK answers a bad body itself
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return true
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() || req.Method == "initialize" || req.Method == "ping" || rawModern(req.Params) {
		return true
	}
	writeRPCError(w, http.StatusBadRequest, req.ID.Raw(), &jsonrpc.Error{Code: codeNotInitialized, Message: msgNotInitialized})
	return false
}

// rebinding refuses a request that reached a loopback listener under a
// Host name that is not loopback (DNS rebinding; the SDK's own check,
// answered in JSON) nor public: the OAuth resource's or the approval
// page's own host.
func rebinding(next http.Handler, public []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil && isLoopbackHost(local.String()) && !isLoopbackHost(r.Host) &&
			!slices.ContainsFunc(public, func(p string) bool { return strings.EqualFold(r.Host, p) }) {
			httpRefusal(w, http.StatusForbidden, CodeForbiddenHost, "Forbidden: this loopback server is reached under another Host name (DNS rebinding); use 127.0.0.1, [::1] or localhost")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isLoopbackHost reports whether host (with or without a port) is
// localhost or a loopback IP.
func isLoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// httpRefusal writes a JSON-RPC error response with id null: the
// streamable HTTP transport's error shape (2026-07-28: "a JSON-RPC error
// response that has no id"), data.code naming the refusal.
func httpRefusal(w http.ResponseWriter, status int, code, msg string) {
	data, _ := json.Marshal(map[string]string{"code": code})
	writeRPCError(w, status, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: msg, Data: data})
}

// writeRPCError writes one JSON-RPC error response.
func writeRPCError(w http.ResponseWriter, status int, id any, e *jsonrpc.Error) {
	body, _ := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", id, e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
