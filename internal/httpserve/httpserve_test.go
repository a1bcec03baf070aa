package httpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"
)

// failure is what Options.Fail was called with.
type failure struct {
	code, message string
	cause         error
}

// statusOf is the test service's status table.
var statusOf = map[string]int{CodeNotFound: 404, CodeMethodNotAllowed: 405, CodeInternal: 500}

// testRouter is a router whose Fail answers the code's status with the
// code as body, and the access events it wrote.
func testRouter(t *testing.T, o Options) (*chi.Mux, *bytes.Buffer, *[]failure) {
	t.Helper()
	var logs bytes.Buffer
	var fails []failure
	o.Log = zerolog.New(&logs).Level(zerolog.DebugLevel)
	o.Fail = func(w http.ResponseWriter, r *http.Request, code, message string, cause error) {
		fails = append(fails, failure{code, message, cause})
		NoteOf[Basic](r).Fail(code, cause)
		w.WriteHeader(statusOf[code])
		_, _ = w.Write([]byte(code))
	}
	return NewRouter(o), &logs, &fails
}

// events decodes the JSON lines of logs.
func events(t *testing.T, logs *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestRequestID(t *testing.T) {
	r, logs, _ := testRouter(t, Options{})
	var seen string
	r.Get("/", func(w http.ResponseWriter, r *http.Request) { seen = RequestID(r.Context()) })
	tests := []struct {
		name, in string
		kept     bool
	}{
		{name: "none", in: "", kept: false},
		{name: "a token", in: "abc-123.x:y/z_", kept: true},
		{name: "64 characters", in: strings.Repeat("a", 64), kept: true},
		{name: "65 characters", in: strings.Repeat("a", 65), kept: false},
		{name: "a space", in: "a b", kept: false},
		{name: "a newline", in: "a\nlevel=error", kept: false},
		{name: "a quote", in: `a"b`, kept: false},
		{name: "non-ASCII", in: "ré", kept: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs.Reset()
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			if tt.in != "" {
				req.Header.Set("X-Request-Id", tt.in)
			}
			w := httptest.NewRecorder()
			r.ServeHTTP(w, req)
			got := w.Header().Get("X-Request-Id")
			if got != seen {
				t.Errorf("header %q, handler saw %q", got, seen)
			}
			if tt.kept != (got == tt.in) {
				t.Errorf("incoming %q, answered %q (kept: want %v)", tt.in, got, tt.kept)
			}
			if !ValidRequestID(got) {
				t.Errorf("answered id %q is not a valid id", got)
			}
			ev := events(t, logs)
			if len(ev) != 1 || ev[0]["request_id"] != got {
				t.Errorf("access events %v, want one with request_id %q", ev, got)
			}
		})
	}
	// Generated ids differ from request to request.
	ids := map[string]bool{}
	for range 50 {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		ids[w.Header().Get("X-Request-Id")] = true
	}
	if len(ids) != 50 {
		t.Errorf("50 requests got %d distinct ids", len(ids))
	}
}

func TestAllowOn405(t *testing.T) {
	r, _, fails := testRouter(t, Options{})
	ok := func(http.ResponseWriter, *http.Request) {}
	r.Get("/a", ok)
	r.Post("/a", ok)
	r.Group(func(g chi.Router) {
		g.Use(func(next http.Handler) http.Handler { return next })
		g.Post("/b", ok)
	})
	tests := []struct {
		name, method, path, allow, code string
		status                          int
	}{
		{name: "two methods", method: "DELETE", path: "/a", allow: "GET, POST", code: CodeMethodNotAllowed, status: 405},
		{name: "in a group", method: "GET", path: "/b", allow: "POST", code: CodeMethodNotAllowed, status: 405},
		{name: "allowed", method: "GET", path: "/a", status: 200},
		{name: "no route", method: "GET", path: "/c", code: CodeNotFound, status: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			*fails = nil
			w := httptest.NewRecorder()
			r.ServeHTTP(w, httptest.NewRequest(tt.method, tt.path, nil))
			if w.Code != tt.status || w.Header().Get("Allow") != tt.allow {
				t.Fatalf("status %d, Allow %q; want %d, %q", w.Code, w.Header().Get("Allow"), tt.status, tt.allow)
			}
			if tt.code == "" {
				if len(*fails) != 0 {
					t.Errorf("Fail called: %v", *fails)
				}
				return
			}
			if len(*fails) != 1 || (*fails)[0].code != tt.code {
				t.Fatalf("Fail calls %v, want one with %s", *fails, tt.code)
			}
			if tt.allow != "" && !strings.HasSuffix((*fails)[0].message, "allowed: "+tt.allow) {
				t.Errorf("message %q does not name the allowed methods", (*fails)[0].message)
			}
		})
	}
}

// TestAccessEvent: one event per request with the request line, the
// answer and the note's fields, at the level its outcome and status say;
// the counter counts it by route pattern.
func TestAccessEvent(t *testing.T) {
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests_total"}, []string{"route", "status"})
	r, logs, _ := testRouter(t, Options{Requests: reqs})
	r.Get("/items/{id}", func(w http.ResponseWriter, r *http.Request) {
		NoteOf[Basic](r).Code = "ok"
		_, _ = w.Write([]byte("hello"))
	})
	r.Get("/healthz", func(http.ResponseWriter, *http.Request) {})
	r.Get("/bug", func(w http.ResponseWriter, r *http.Request) {
		n := NoteOf[Basic](r)
		n.Code, n.Cause = CodeInternal, "the cause"
		w.WriteHeader(500)
	})
	r.Get("/down", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
	r.Get("/gone", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(499) })
	tests := []struct {
		name, path, level, route, outcome, cause string
		status                                   float64
	}{
		{name: "ok", path: "/items/7?secret=x", level: "info", route: "/items/{id}", outcome: "ok", status: 200},
		{name: "a probe", path: "/healthz", level: "debug", route: "/healthz", status: 200},
		{name: "internal", path: "/bug", level: "error", route: "/bug", outcome: "internal", cause: "the cause", status: 500},
		{name: "unavailable", path: "/down", level: "warn", route: "/down", status: 503},
		{name: "client gone", path: "/gone", level: "info", route: "/gone", status: 499},
		{name: "unmatched", path: "/nothing", level: "info", route: "unmatched", outcome: "not_found", status: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs.Reset()
			r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, tt.path, nil))
			ev := events(t, logs)
			if len(ev) != 1 {
				t.Fatalf("%d events, want 1: %v", len(ev), ev)
			}
			e := ev[0]
			for k, want := range map[string]any{"event": "access", "level": tt.level, "method": "GET", "route": tt.route, "status": tt.status} {
				if e[k] != want {
					t.Errorf("%s = %v, want %v", k, e[k], want)
				}
			}
			if p, _ := e["path"].(string); strings.Contains(p, "secret") {
				t.Errorf("the path field holds the query: %q", p)
			}
			for k, want := range map[string]string{"outcome": tt.outcome, "cause": tt.cause} {
				got, ok := e[k].(string)
				if want == "" && ok || want != "" && got != want {
					t.Errorf("%s = %v, want %q", k, e[k], want)
				}
			}
		})
	}
	if n := counted(t, reqs, "/items/{id}", "200"); n != 1 {
		t.Errorf("requests_total{route=/items/{id},status=200} = %v, want 1", n)
	}
	if tt := counted(t, reqs, "unmatched", "404"); tt != 1 {
		t.Errorf("requests_total{route=unmatched} = %v, want 1", tt)
	}
}

// counted is the value of reqs{route, status}.
func counted(t *testing.T, reqs *prometheus.CounterVec, route, status string) float64 {
	t.Helper()
	var m dto.Metric
	if err := reqs.WithLabelValues(route, status).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestPanicAnswered: a handler's panic is answered through Fail as
// internal with the panic as cause, logged once, and its stack in a panic
// event; an http.ErrAbortHandler panic is not swallowed.
func TestPanicAnswered(t *testing.T) {
	r, logs, fails := testRouter(t, Options{})
	r.Get("/boom", func(http.ResponseWriter, *http.Request) { panic("kaboom") })
	r.Get("/abort", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/boom", nil))
	if w.Code != 500 || len(*fails) != 1 || (*fails)[0].code != CodeInternal || (*fails)[0].cause == nil || !strings.Contains((*fails)[0].cause.Error(), "kaboom") {
		t.Fatalf("status %d, fails %v", w.Code, *fails)
	}
	if strings.Contains((*fails)[0].message, "kaboom") {
		t.Errorf("the panic value is in the message sent: %q", (*fails)[0].message)
	}
	var panicEv, accessEv int
	for _, e := range events(t, logs) {
		switch e["event"] {
		case "panic":
			panicEv++
			if s, _ := e["stack"].(string); !strings.Contains(s, "goroutine") || e["request_id"] != w.Header().Get("X-Request-Id") {
				t.Errorf("panic event %v", e)
			}
		case "access":
			accessEv++
			if e["level"] != "error" || e["status"] != float64(500) {
				t.Errorf("access event %v", e)
			}
		}
	}
	if n := strings.Count(logs.String(), "kaboom"); n != 1 {
		t.Errorf("the panic value is in the log %d times, want once (the access event's cause)", n)
	}
	if panicEv != 1 || accessEv != 1 {
		t.Errorf("%d panic and %d access events, want 1 and 1", panicEv, accessEv)
	}
	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Errorf("recovered %v, want http.ErrAbortHandler", v)
			}
		}()
		r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/abort", nil))
	}()
}

// note is a service's own note.
type note struct{ op, outcome string }

func (n *note) Outcome() string                       { return n.outcome }
func (n *note) MarshalZerologObject(e *zerolog.Event) { Strs(e, "op", n.op, "outcome", n.outcome) }

func TestServiceNoteAndRequestLog(t *testing.T) {
	var reqLogs bytes.Buffer
	reqLog := zerolog.New(&reqLogs)
	r, logs, _ := testRouter(t, Options{NewNote: func() Note { return &note{} }, RequestLog: &reqLog})
	r.Get("/op", func(w http.ResponseWriter, r *http.Request) {
		n := NoteOf[note](r)
		n.op, n.outcome = "list_repos", "ok"
		zerolog.Ctx(r.Context()).Info().Msg("from the handler")
		// Another note type than the chain's: a detached note.
		NoteOf[Basic](r).Code = CodeInternal
	})
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/op", nil))
	ev := events(t, logs)
	if len(ev) != 1 || ev[0]["op"] != "list_repos" || ev[0]["outcome"] != "ok" || ev[0]["level"] != "info" {
		t.Errorf("access events %v", ev)
	}
	if rl := events(t, &reqLogs); len(rl) != 1 || rl[0]["request_id"] != w.Header().Get("X-Request-Id") {
		t.Errorf("the handler's logger lacks the request id: %v", rl)
	}
	// Outside the chain: a detached note, never nil.
	if n := NoteOf[note](httptest.NewRequest(http.MethodGet, "/", nil)); n == nil {
		t.Error("NoteOf outside the chain is nil")
	}
}

func TestLoopbackHost(t *testing.T) {
	refused := errors.New("refused")
	var got error
	h := LoopbackHost([]string{"pinned.example"}, func(w http.ResponseWriter, r *http.Request) {
		got = refused
		w.WriteHeader(http.StatusForbidden)
	})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}
	public := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 80}
	tests := []struct {
		name, host string
		local      net.Addr
		refused    bool
	}{
		{name: "loopback IP", host: "127.0.0.1:8080", local: loop},
		{name: "localhost", host: "LOCALHOST:8080", local: loop},
		{name: "IPv6 loopback", host: "[::1]:8080", local: loop},
		{name: "a configured host", host: "Pinned.Example:443", local: loop},
		{name: "a rebound name", host: "evil.example:8080", local: loop, refused: true},
		{name: "a rebound name without port", host: "evil.example", local: loop, refused: true},
		{name: "a mapped IPv4 loopback", host: "[::ffff:127.0.0.1]:1", local: loop},
		{name: "a public listener", host: "evil.example", local: public},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Host = tt.host
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, tt.local))
			h.ServeHTTP(httptest.NewRecorder(), req)
			if (got != nil) != tt.refused {
				t.Errorf("refused %v, want %v", got != nil, tt.refused)
			}
		})
	}
}

func TestClip(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "short", in: "abc", want: "abc"},
		{name: "cut", in: "abcdef", want: "abcd…"},
		{name: "cut inside a rune", in: "abcé", want: "abc\uFFFD…"},
		{name: "invalid UTF-8", in: "a\xffb", want: "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Clip(tt.in, 4); got != tt.want {
				t.Errorf("Clip(%q, 4) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
