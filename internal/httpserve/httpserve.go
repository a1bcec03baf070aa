// Package httpserve is the one middleware chain of pinned's HTTP services:
// the sidecar, the broker, pinned web and pinned mcp --listen. Its router
// gives each request an id, writes one access event for it, and answers a
// panic, an unknown path and a wrong method (405, with Allow) through the
// service's own error writer.
//
// It imports internal/httperr of the project's, chi, zerolog and
// prometheus.
package httpserve

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/internal/httperr"
)

// The codes of the errors the chain answers by itself. Every service has
// them in its status table.
const (
	CodeNotFound         = "not_found"          // 404: no route has the path
	CodeMethodNotAllowed = "method_not_allowed" // 405: the route does not take the method
	CodeInternal         = "internal"           // 500: a handler panicked
)

// Options configures a router. Fail is required.
type Options struct {
	// Log receives the access and panic events; the zero value discards
	// them.
	Log zerolog.Logger
	// RequestLog is the logger a handler finds with zerolog.Ctx, with the
	// request id added; default Log.
	RequestLog *zerolog.Logger
	// Fail answers an error the chain raises itself. code is one of the
	// codes above; message is safe to send; cause is for the log only
	// (nil but for a panic).
	Fail func(w http.ResponseWriter, r *http.Request, code, message string, cause error)
	// NewNote makes each request's note; default a *Basic.
	NewNote func() Note
	// Requests, when set, counts requests by route pattern and status
	// (labels "route" and "status").
	Requests *prometheus.CounterVec
	// Docs, when set, is the document a not_found answer points to.
	Docs string
}

// Note is a service's record of one request, which its handlers fill and
// the access event carries. It holds names and codes only: never a body,
// a query, a header value or a secret.
type Note interface {
	// Outcome is "ok", the code of the error answered, or "".
	Outcome() string
	// MarshalZerologObject adds the note's fields to the access event.
	MarshalZerologObject(e *zerolog.Event)
}

// Basic is a note of string fields: the names a handler sets (a bot, a
// service, an op), then the outcome and the cause.
type Basic struct {
	Code  string // "ok" or the error code
	Cause string // the internal cause of an error: logged, never sent

	fields []string // key, value, key, value, …
}

// Set sets the field key to value (clipped to 64 bytes).
func (b *Basic) Set(key, value string) {
	value = Clip(value, 64)
	for i := 0; i < len(b.fields); i += 2 {
		if b.fields[i] == key {
			b.fields[i+1] = value
			return
		}
	}
	b.fields = append(b.fields, key, value)
}

// Fail records an error answer: its code and its internal cause (nil:
// none).
func (b *Basic) Fail(code string, cause error) {
	b.Code = code
	if cause != nil {
		b.Cause = cause.Error()
	}
}

// Outcome returns b.Code.
func (b *Basic) Outcome() string { return b.Code }

// MarshalZerologObject adds the fields, outcome and cause.
func (b *Basic) MarshalZerologObject(e *zerolog.Event) {
	Strs(e, b.fields...)
	Strs(e, "outcome", b.Code, "cause", Clip(b.Cause, 512))
}

type noteKey struct{}

// NoteOf returns the note the chain made for r, or a new one that nothing
// reads when r did not pass the chain or its note has another type.
func NoteOf[N any, P interface {
	*N
	Note
}](r *http.Request) P {
	if n, ok := r.Context().Value(noteKey{}).(P); ok {
		return n
	}
	return P(new(N))
}

// NewRouter returns a chi router with the chain in front: the request id,
// the access event, the panic handler, and the not_found and
// method_not_allowed answers. The service adds its own middleware and
// routes to it.
func NewRouter(o Options) *chi.Mux {
	if o.Fail == nil {
		panic("httpserve: Options.Fail is required")
	}
	if o.NewNote == nil {
		o.NewNote = func() Note { return new(Basic) }
	}
	if o.RequestLog == nil {
		o.RequestLog = &o.Log
	}
	mux := chi.NewRouter()
	mux.Use(requestID, o.access, o.recoverer)
	notFound := "no such endpoint"
	if o.Docs != "" {
		notFound += "; see " + o.Docs
	}
	mux.NotFound(func(w http.ResponseWriter, r *http.Request) {
		o.Fail(w, r, CodeNotFound, notFound, nil)
	})
	mux.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		allow := Allow(mux, r.URL.Path)
		msg := r.Method + " is not allowed here"
		if allow != "" {
			w.Header().Set("Allow", allow)
			msg += "; allowed: " + allow
		}
		o.Fail(w, r, CodeMethodNotAllowed, msg, nil)
	})
	return mux
}

// requestIDRe is what an incoming X-Request-Id must look like to be kept;
// anything else is replaced, so callers cannot put arbitrary text into
// every log line.
var requestIDRe = regexp.MustCompile(`^[A-Za-z0-9._:/-]{1,64}$`)

// ValidRequestID reports whether id is kept when a request brings it.
func ValidRequestID(id string) bool { return requestIDRe.MatchString(id) }

// RequestID returns the request's id ("" outside the chain). It is chi's
// (middleware.GetReqID reads it too).
func RequestID(ctx context.Context) string { return middleware.GetReqID(ctx) }

// requestID keeps a valid incoming X-Request-Id or makes a random one (not
// chi's, which names the host and counts requests), puts it in the
// context under chi's key, and sets it on the answer.
func requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(httperr.RequestIDHeader)
		if !ValidRequestID(id) {
			id = rand.Text()
		}
		w.Header().Set(httperr.RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), middleware.RequestIDKey, id)))
	})
}

// quietRoutes are logged at debug level when they succeed: probes and
// scrapes would drown the access log.
var quietRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// access writes exactly one event per request, counts it, and hands the
// handlers the request's note and logger.
func (o *Options) access(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		note := o.NewNote()
		id := RequestID(r.Context())
		ctx := context.WithValue(r.Context(), noteKey{}, note)
		ctx = o.RequestLog.With().Str("request_id", id).Logger().WithContext(ctx)
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
		if o.Requests != nil {
			o.Requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
		}
		var ev *zerolog.Event
		switch {
		case note.Outcome() == CodeInternal:
			ev = o.Log.Error()
		case status >= 500 && status != httperr.StatusClientClosed:
			ev = o.Log.Warn()
		case quietRoutes[route] && status < 400:
			ev = o.Log.Debug()
		default:
			ev = o.Log.Info()
		}
		ev.Str("event", "access").
			Str("request_id", id).
			Str("method", r.Method).
			Str("route", route).
			Int("status", status).
			Str("path", Clip(r.URL.Path, 256)).
			Int64("bytes_in", r.ContentLength).
			Int("bytes_out", ww.BytesWritten()).
			Float64("duration_ms", float64(time.Since(start).Microseconds())/1000).
			Str("remote", r.RemoteAddr).
			EmbedObject(note).
			Msg("request")
	})
}

// recoverer turns a panic in a handler into an internal answer, instead
// of a dead connection. The panic event holds the stack; the panic value
// is the answer's cause, logged once, in the access event.
func (o *Options) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			o.Log.Error().Str("event", "panic").Str("request_id", RequestID(r.Context())).
				Str("stack", string(debug.Stack())).Msg("handler panic")
			o.Fail(w, r, CodeInternal, "internal error; the log has the details", fmt.Errorf("panic: %v", v))
		}()
		next.ServeHTTP(w, r)
	})
}

// methods are the methods Allow probes, in the order it lists them.
var methods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions,
}

// Allow returns the methods routes serves at path, e.g. "GET, HEAD" (""
// when none): a 405's Allow header (RFC 9110 section 15.5.6), which chi
// leaves out when the 405 handler is the service's own.
func Allow(routes chi.Routes, path string) string {
	var ok []string
	for _, m := range methods {
		if routes.Match(chi.NewRouteContext(), m, path) {
			ok = append(ok, m)
		}
	}
	return strings.Join(ok, ", ")
}

// Strs adds the non-empty values of key–value pairs to e.
func Strs(e *zerolog.Event, kv ...string) {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			e.Str(kv[i], kv[i+1])
		}
	}
}

// Clip cuts s to at most n bytes (marking a cut with "…") as valid UTF-8:
// for text from callers in log fields and messages.
func Clip(s string, n int) string {
	if len(s) > n {
		s = s[:n] + "…"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
