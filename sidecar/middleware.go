package sidecar

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/rs/zerolog"
)

type ctxKey int

const infoKey ctxKey = 0

// reqInfo is what a handler tells the access log about its request. It
// holds names and codes only: never a grant, a secret, a token or an
// argument value.
type reqInfo struct {
	service        string // as requested, clipped
	op             string
	access         string // the op's access level, when known
	outcome        string // "ok" or the error code
	grantID        string // a digest of the grant's nonce, once opened
	upstreamStatus int
	retryAfter     int
	deny           string // the host's deny reason
	rotation       string // token rotation: "before_call", "after_401", "refused" or "failed"
	cause          string // internal cause (fixed phrases and Go error text), logged only
}

func infoFrom(r *http.Request) *reqInfo {
	if i, ok := r.Context().Value(infoKey).(*reqInfo); ok {
		return i
	}
	return &reqInfo{}
}

// requestIDRe is what an incoming X-Request-Id must look like to be kept;
// anything else is replaced by a generated id, so callers cannot put
// arbitrary text into every log line.
var requestIDRe = regexp.MustCompile(`^[A-Za-z0-9._:/-]{1,64}$`)

// sanitizeRequestID drops an incoming X-Request-Id that is not a short
// token, before chi's RequestID middleware adopts it.
func sanitizeRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get(middleware.RequestIDHeader); id != "" && !requestIDRe.MatchString(id) {
			r.Header.Del(middleware.RequestIDHeader)
		}
		next.ServeHTTP(w, r)
	})
}

// quietRoutes are logged at debug level: probes and scrapes would drown
// the access log.
var quietRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// accessLog writes exactly one event per request (docs/OPERATING.md lists
// its fields), echoes the request id in X-Request-Id and counts the
// request.
func (s *Server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &reqInfo{}
		ctx := context.WithValue(r.Context(), infoKey, info)
		id := middleware.GetReqID(ctx)
		// The host's audit and guest-output events use the logger the
		// context carries, so they too have the request id.
		ctx = s.eng.Logger().With().Str("request_id", id).Logger().WithContext(ctx)
		w.Header().Set(middleware.RequestIDHeader, id)
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r.WithContext(ctx))

		status := ww.Status()
		if status == 0 {
			status = http.StatusOK
		}
		route := "unmatched"
		if rc := chi.RouteContext(ctx); rc != nil && rc.RoutePattern() != "" {
			route = rc.RoutePattern()
		}
		s.m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()

		var ev *zerolog.Event
		switch {
		case info.outcome == string(CodeInternal):
			ev = s.log.Error()
		case status >= 500 && status != StatusClientClosed:
			ev = s.log.Warn()
		case quietRoutes[route] && status < 400:
			ev = s.log.Debug()
		default:
			ev = s.log.Info()
		}
		ev = ev.Str("event", "access").
			Str("request_id", id).
			Str("method", r.Method).
			Str("path", clip(r.URL.Path, 256)).
			Str("route", route).
			Int("status", status).
			Int64("bytes_in", r.ContentLength).
			Int("bytes_out", ww.BytesWritten()).
			Float64("duration_ms", float64(time.Since(start).Microseconds())/1000).
			Str("remote", r.RemoteAddr)
		if info.service != "" {
			ev = ev.Str("service", info.service)
		}
		if info.op != "" {
			ev = ev.Str("op", info.op)
		}
		if info.access != "" {
			ev = ev.Str("access", info.access)
		}
		if info.outcome != "" {
			ev = ev.Str("outcome", info.outcome)
		}
		if info.grantID != "" {
			ev = ev.Str("grant_id", info.grantID)
		}
		if info.upstreamStatus != 0 {
			ev = ev.Int("upstream_status", info.upstreamStatus)
		}
		if info.retryAfter != 0 {
			ev = ev.Int("retry_after", info.retryAfter)
		}
		if info.deny != "" {
			ev = ev.Str("deny", info.deny)
		}
		if info.rotation != "" {
			ev = ev.Str("rotation", info.rotation)
		}
		if info.cause != "" {
			ev = ev.Str("cause", clip(info.cause, 512))
		}
		ev.Msg("request")
	})
}

// recoverer turns a panic in a handler into a 500 internal answer and an
// error event with the stack, instead of a dead connection.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error().Str("event", "panic").Str("request_id", middleware.GetReqID(r.Context())).
				Str("panic", fmt.Sprint(v)).Str("stack", string(debug.Stack())).Msg("handler panic")
			s.fail(w, r, newError(CodeInternal, "internal error; the sidecar log has the details"))
		}()
		next.ServeHTTP(w, r)
	})
}

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
func clip(s string, n int) string {
	if len(s) > n {
		s = s[:n] + "…"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
