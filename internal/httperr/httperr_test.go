package httperr

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type code string

var table = Statuses[code]{"bad_request": 400, "busy": 503}

// TestWriteSendsNoCause: the answer has the table's status, the request id
// of the response's X-Request-Id, Retry-After, and never the cause.
func TestWriteSendsNoCause(t *testing.T) {
	tests := []struct {
		name       string
		code       code
		retryAfter int
		status     int
	}{
		{name: "known code", code: "bad_request", status: 400},
		{name: "retry after", code: "busy", retryAfter: 3, status: 503},
		{name: "unknown code is a 500", code: "nope", status: 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := table.New(tt.code, "say what to do").WithCause(errors.New("secret-bearing cause ghp_x"))
			e.RetryAfter = tt.retryAfter
			rec := httptest.NewRecorder()
			rec.Header().Set(RequestIDHeader, "req-1")
			e.Write(rec)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d", rec.Code, tt.status)
			}
			if strings.Contains(rec.Body.String(), "ghp_x") || strings.Contains(rec.Body.String(), "cause") {
				t.Fatalf("the cause was sent: %s", rec.Body)
			}
			var env Envelope[code]
			if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
				t.Fatal(err)
			}
			want := Body[code]{Code: tt.code, Message: "say what to do", RequestID: "req-1", RetryAfter: tt.retryAfter}
			if env.Error != want {
				t.Fatalf("body %+v, want %+v", env.Error, want)
			}
			if got := rec.Header().Get("Retry-After"); (tt.retryAfter > 0) != (got != "") {
				t.Fatalf("Retry-After %q with retry_after %d", got, tt.retryAfter)
			}
			for h, v := range map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"} {
				if got := rec.Header().Get(h); got != v {
					t.Errorf("%s: %q, want %q", h, got, v)
				}
			}
			if !errors.Is(e, e.Cause()) || !strings.Contains(e.Error(), "ghp_x") {
				t.Fatalf("the cause is not kept for the log: %v", e)
			}
		})
	}
}

func TestCodesSorted(t *testing.T) {
	if got := table.Codes(); len(got) != 2 || got[0] != "bad_request" || got[1] != "busy" {
		t.Fatalf("Codes() = %v", got)
	}
}

func TestDocumentedCodes(t *testing.T) {
	doc := []byte("| code | status |\n| --- | --- |\n| `bad_request` | 400 | x |\n| `busy` | 503 + `Retry-After` | y |\n| `frag` | fragment | z |\n")
	got := DocumentedCodes(doc)
	if len(got) != 2 || got["bad_request"] != http.StatusBadRequest || got["busy"] != 503 {
		t.Fatalf("DocumentedCodes = %v", got)
	}
}
