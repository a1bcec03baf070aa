package web

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/internal/httperr"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/secret"
)

// TestWebDocListsEveryCode: docs/WEB.md's table lists every code of pinned
// web with its status, and none that web lacks.
func TestWebDocListsEveryCode(t *testing.T) {
	doc, err := os.ReadFile("../docs/WEB.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := httperr.DocumentedCodes(doc)
	for _, c := range statusOf.Codes() {
		if got, ok := documented[string(c)]; !ok || got != statusOf.Status(c) {
			t.Errorf("docs/WEB.md: code %s documented with status %d, want %d", c, got, statusOf.Status(c))
		}
	}
	for c := range documented {
		if _, ok := statusOf[Code(c)]; !ok {
			t.Errorf("docs/WEB.md documents %s, which web/errors.go does not have", c)
		}
	}
}

// TestErrorAnswerShape: an error answer has its code's one status, the
// request id of the answer, and never the cause.
func TestErrorAnswerShape(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Set("X-Request-Id", "r-1")
	cause := errors.New("dial tcp 10.0.0.1:443: connection refused")
	newError(CodeBotFailed, "the bot's sidecar could not be reached; try again").WithCause(cause).Write(rec)
	var env httperr.Envelope[Code]
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusBadGateway || env.Error.Code != CodeBotFailed || env.Error.RequestID != "r-1" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if strings.Contains(rec.Body.String(), "dial tcp") {
		t.Fatalf("the cause was sent: %s", rec.Body)
	}
}

// TestCauseLoggedNotSent: an error's internal cause reaches the access log
// once, on the request's line with its request id, and never the answer:
// a relay to a bot whose sidecar refuses connections (the cause is the
// dial error), and a handler that panics (the cause is the panic value).
func TestCauseLoggedNotSent(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close() // nothing listens there now: connection refused
	logs := &testutil.SyncBuffer{}
	zl := zerolog.New(logs)
	s, err := New(Config{Bots: []Bot{{Name: "eleven", URL: dead, Token: secret.Secret("caller-token-0123456789")}}, Logger: &zl})
	if err != nil {
		t.Fatal(err)
	}
	panicking := s.routes()
	panicking.Get("/x", func(http.ResponseWriter, *http.Request) {
		panic("the table of secrets is at 0xdeadbeef")
	})
	tests := []struct {
		name    string
		handler http.Handler
		req     func() *http.Request
		status  int
		code    Code
		cause   string // in the log, never in the body
	}{
		{name: "relay to a dead sidecar", handler: s.Handler(), status: http.StatusBadGateway, code: CodeBotFailed, cause: "connection refused",
			req: func() *http.Request {
				r := httptest.NewRequest("POST", "http://example.test/api/bots/eleven/ops",
					strings.NewReader(`{"service":"hubspot","op":"get_viewer","grant":"`+validGrant+`"}`))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Origin", "http://example.test")
				return r
			}},
		{name: "a handler panics", handler: panicking, status: http.StatusInternalServerError, code: CodeInternal, cause: "0xdeadbeef",
			req: func() *http.Request { return httptest.NewRequest("GET", "http://example.test/x", nil) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(logs.String())
			rec := httptest.NewRecorder()
			tt.handler.ServeHTTP(rec, tt.req())
			var env httperr.Envelope[Code]
			if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || rec.Code != tt.status || env.Error.Code != tt.code {
				t.Fatalf("answered %d %s (%v), want %d %s", rec.Code, rec.Body, err, tt.status, tt.code)
			}
			id := rec.Header().Get("X-Request-Id")
			if id == "" || env.Error.RequestID != id {
				t.Fatalf("request id: header %q, body %q", id, env.Error.RequestID)
			}
			if strings.Contains(rec.Body.String(), tt.cause) || strings.Contains(rec.Body.String(), "panic") || strings.Contains(rec.Body.String(), dead) {
				t.Errorf("the cause was sent: %s", rec.Body)
			}
			logged := logs.String()[before:]
			if n := strings.Count(logged, tt.cause); n != 1 {
				t.Fatalf("the cause %q is in the log %d times, want once: %s", tt.cause, n, logged)
			}
			var line struct {
				RequestID string `json:"request_id"`
				Outcome   string `json:"outcome"`
				Cause     string `json:"cause"`
			}
			for _, l := range strings.Split(strings.TrimSpace(logged), "\n") {
				if strings.Contains(l, tt.cause) {
					if err := json.Unmarshal([]byte(l), &line); err != nil {
						t.Fatal(err)
					}
				}
			}
			if line.RequestID != id || line.Outcome != string(tt.code) || !strings.Contains(line.Cause, tt.cause) {
				t.Errorf("the log line with the cause = %+v, want request_id %q, outcome %s", line, id, tt.code)
			}
		})
	}
}

// TestMethodNotAllowedHasAllow: a 405 of pinned web names the methods the
// path takes (RFC 9110 section 15.5.6), in the services' error shape.
func TestMethodNotAllowedHasAllow(t *testing.T) {
	s, _, _ := newTestServer(t, "")
	tests := []struct{ name, method, path, allow string }{
		{name: "a GET endpoint", method: http.MethodPost, path: "/api/bots", allow: "GET"},
		{name: "a POST endpoint", method: http.MethodGet, path: "/api/bots/eleven/ops", allow: "POST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(tt.method, "http://example.test"+tt.path, nil)
			req.Header.Set("Origin", "http://example.test")
			s.Handler().ServeHTTP(rec, req)
			var env httperr.Envelope[Code]
			if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || rec.Code != http.StatusMethodNotAllowed || env.Error.Code != CodeMethod {
				t.Fatalf("%d %s (%v)", rec.Code, rec.Body, err)
			}
			if got := rec.Header().Get("Allow"); got != tt.allow {
				t.Errorf("Allow %q, want %q", got, tt.allow)
			}
		})
	}
}
