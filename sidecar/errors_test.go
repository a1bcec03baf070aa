package sidecar

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestErrorBodyCarriesRequestID: every error answer carries the answer's
// X-Request-Id as request_id (generated, or the caller's when it is a
// short token), so a bot can quote it and an operator find the log line
// with the cause.
func TestErrorBodyCarriesRequestID(t *testing.T) {
	env := newTestEnv(t, nil)
	tests := []struct {
		name   string
		header []string
		status int
		want   string // "" = generated
	}{
		{name: "generated", status: http.StatusNotFound},
		{name: "the caller's", header: []string{"X-Request-Id", "bot-42.req:7"}, status: http.StatusNotFound, want: "bot-42.req:7"},
		{name: "a hostile one is replaced", header: []string{"X-Request-Id", "a\"}<script>" + strings.Repeat("x", 80)}, status: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := env.do(t, http.MethodGet, "/v1/nope", nil, tt.header...)
			var body struct {
				Error struct {
					Code      string `json:"code"`
					RequestID string `json:"request_id"`
				} `json:"error"`
			}
			if err := json.Unmarshal(r.body, &body); err != nil {
				t.Fatalf("not an error body: %s", r.body)
			}
			id := r.header.Get("X-Request-Id")
			if r.status != tt.status || body.Error.Code != string(CodeNotFound) || id == "" || body.Error.RequestID != id {
				t.Fatalf("status %d, body %s, X-Request-Id %q", r.status, r.body, id)
			}
			if tt.want != "" && id != tt.want {
				t.Fatalf("request id %q, want the caller's %q", id, tt.want)
			}
			if strings.Contains(string(r.body), "<script>") {
				t.Fatalf("the hostile request id reached the body: %s", r.body)
			}
		})
	}
}
