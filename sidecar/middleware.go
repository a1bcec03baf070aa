package sidecar

import (
	"mime"
	"net/http"

	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/internal/httpserve"
)

// reqInfo is the sidecar's note of a request (httpserve.Note): what its
// handlers tell the access event. It holds names and codes only: never a
// grant, a secret, a token or an argument value.
type reqInfo struct {
	service        string // as requested, clipped
	op             string
	access         string // the op's access level, when known
	outcome        string // "ok" or the error code
	grantID        string // a digest of the grant's nonce, once opened
	upstreamStatus int
	retryAfter     int
	deny           string // the host's deny reason
	target         string // the request target as sent, secret args redacted (audit records only)
	limit          string // the budget or rate that refused the op
	rotation       string // token rotation: "before_call", "after_401", "refused" or "failed"
	cause          string // internal cause (fixed phrases and Go error text), logged only
}

// Outcome is "ok", the error code, or "".
func (i *reqInfo) Outcome() string { return i.outcome }

// MarshalZerologObject adds the fields docs/OPERATING.md lists under
// Access.
func (i *reqInfo) MarshalZerologObject(e *zerolog.Event) {
	httpserve.Strs(e, "service", i.service, "op", i.op, "access", i.access, "outcome", i.outcome, "grant_id", i.grantID)
	if i.upstreamStatus != 0 {
		e.Int("upstream_status", i.upstreamStatus)
	}
	if i.retryAfter != 0 {
		e.Int("retry_after", i.retryAfter)
	}
	httpserve.Strs(e, "deny", i.deny, "rotation", i.rotation, "cause", clip(i.cause, 512))
}

// infoFrom returns the request's note.
func infoFrom(r *http.Request) *reqInfo { return httpserve.NoteOf[reqInfo](r) }

// track counts running handlers so Serve can wait for them, and refuses
// new ones once the server is draining.
func (s *Server) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if s.draining {
			s.mu.Unlock()
			s.fail(w, r, newError(CodeNotReady, "the sidecar is shutting down"))
			return
		}
		s.active.Add(1)
		s.mu.Unlock()
		defer s.active.Done()
		next.ServeHTTP(w, r)
	})
}

// authenticate requires the caller bearer token, when one is configured.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.CallerToken != "" && !s.checkToken(r) {
			s.m.denials.WithLabelValues("auth", string(CodeUnauthorized)).Inc()
			w.Header().Set("WWW-Authenticate", `Bearer realm="pinned"`)
			s.fail(w, r, newError(CodeUnauthorized, "send the caller token as Authorization: Bearer <token>"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireJSON refuses a POST body that is not declared application/json.
// Besides stating the contract, it makes a browser preflight any
// cross-origin POST, which the sidecar never answers.
func (s *Server) requireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			s.fail(w, r, newError(CodeMediaType, "send the body as Content-Type: application/json"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// fail answers with e and tells the access log.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, e *Error) {
	if e.Code == CodeCanceled && s.cut.Load() {
		// The caller did not go away: the sidecar canceled the op at the
		// end of --shutdown-grace. Say so, to the caller and in the log.
		cut := newError(CodeNotReady, "the sidecar shut down before the op finished; retry it")
		cut.Rotated, cut.cause = e.Rotated, e.cause
		e = cut
	}
	info := infoFrom(r)
	info.outcome = string(e.Code)
	info.retryAfter = e.RetryAfter
	if e.UpstreamStatus != 0 {
		info.upstreamStatus = e.UpstreamStatus
	}
	if e.cause != nil {
		info.cause = e.cause.Error()
	}
	e.write(w)
}

// clip cuts s to at most n bytes (for log fields that come from callers).
func clip(s string, n int) string { return httpserve.Clip(s, n) }
