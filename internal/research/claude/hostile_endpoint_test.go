package claude

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"
)

// TestHostileModelEndpointLeaksNothing: a hostile or misconfigured Messages
// API endpoint. A redirect (to another host, or the same) is not
// followed, so the x-api-key header is never forwarded anywhere; an error
// answer that echoes the key and the request, a body that is not JSON, an
// endless answer (cut at MaxResponseBytes), a hanging server and one that
// drops the connection each come back as an
// error that names at most the status, never the key, the URL's path or
// the conversation.
func TestHostileModelEndpointLeaksNothing(t *testing.T) {
	const key = "sk-ant-redteam-model-key-0123456789abcdef"
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		if r.Header.Get("X-Api-Key") != "" {
			t.Errorf("the redirect target got the API key")
		}
		w.WriteHeader(http.StatusTeapot)
	}))
	defer other.Close()
	question := "the member's secret question 4f1d"
	tests := []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request)
		want    string // in the error
	}{
		{"307 to another host", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/v1/messages", http.StatusTemporaryRedirect)
		}, "redirect"},
		{"308 to another host", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/v1/messages", http.StatusPermanentRedirect)
		}, "redirect"},
		{"302 to another host", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
		}, "redirect"},
		{"error echoing the key and the body", func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%q}}`, "bad key "+r.Header.Get("X-Api-Key")+" for "+string(body))
		}, "HTTP 400"},
		{"not JSON", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, "<html>%s</html>", r.Header.Get("X-Api-Key"))
		}, "could not be reached"},
		{"endless answer", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"`)
			chunk := strings.Repeat("A", 64<<10)
			for range (MaxResponseBytes / len(chunk)) * 4 {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
		}, "more than"},
		{"drops the connection", func(w http.ResponseWriter, r *http.Request) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}, "could not be reached"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(tt.handler))
			defer srv.Close()
			elsewhere.Store(0)
			c, err := New(Config{APIKey: key, BaseURL: srv.URL, MaxRetries: -1, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Turn(context.Background(), &api.TurnRequest{System: "s", MaxTokens: 16,
				Messages: []api.Message{{Role: api.RoleUser, Content: []api.Block{{Type: api.BlockText, Text: question}}}}})
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error %q, want %q", msg, tt.want)
			}
			for _, bad := range []string{key, key[8:24], question, "/v1/messages", srv.URL} {
				if strings.Contains(msg, bad) {
					t.Errorf("the error %q holds %q", msg, bad)
				}
			}
			if n := elsewhere.Load(); n != 0 {
				t.Errorf("the redirect was followed (%d requests elsewhere)", n)
			}
		})
	}
	// A given HTTPClient is not followed through redirects either, and the
	// caller's client is left as it was.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/v1/messages", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	hc := &http.Client{}
	c, err := New(Config{APIKey: key, BaseURL: srv.URL, MaxRetries: -1, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Turn(context.Background(), &api.TurnRequest{MaxTokens: 16, Messages: []api.Message{{Role: api.RoleUser,
		Content: []api.Block{{Type: api.BlockText, Text: "q"}}}}}); err == nil || !strings.Contains(err.Error(), "redirect") || elsewhere.Load() != 0 || hc.CheckRedirect != nil {
		t.Errorf("given client: err %v, %d requests elsewhere", err, elsewhere.Load())
	}
	// A hanging server: the context ends the turn with the context's error.
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so the server notices the client leave
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer hang.Close()
	c, _ = New(Config{APIKey: key, BaseURL: hang.URL, MaxRetries: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = c.Turn(ctx, &api.TurnRequest{MaxTokens: 16, Messages: []api.Message{{Role: api.RoleUser, Content: []api.Block{{Type: api.BlockText, Text: question}}}}})
	if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), key) || strings.Contains(err.Error(), question) {
		t.Errorf("hanging server: %v", err)
	}
}
