package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/internal/httperr"
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
