package rotate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/elevenmessenger/pinned/secret"
)

const instanceToken = "instance-token-0123456789abcdefghijklmnopqrstuvwxyz"

func TestNewBrokerClient(t *testing.T) {
	tests := []struct {
		name  string
		url   string
		token string
		ok    bool
	}{
		{name: "https", url: "https://connect.example.com", token: "t", ok: true},
		{name: "https with prefix", url: "https://example.com/broker/", token: "t", ok: true},
		{name: "http loopback", url: "http://127.0.0.1:8081", token: "t", ok: true},
		{name: "http localhost", url: "http://localhost:8081", token: "t", ok: true},
		{name: "http elsewhere", url: "http://connect.example.com", token: "t"},
		{name: "no token", url: "https://connect.example.com"},
		{name: "userinfo", url: "https://u:p@connect.example.com", token: "t"},
		{name: "not a URL", url: "connect.example.com", token: "t"},
		{name: "ftp", url: "ftp://connect.example.com", token: "t"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewBrokerClient(tt.url, secret.Secret(tt.token), BrokerOptions{})
			if (err == nil) != tt.ok {
				t.Fatalf("err %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestBrokerClientAnswers(t *testing.T) {
	exp := time.Date(2026, 5, 1, 20, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		status     int
		body       string
		header     map[string]string
		want       api.Pair
		kind       api.RefreshKind
		code       string
		retryAfter time.Duration
	}{
		{name: "ok", status: 200, body: `{"access_token":"a","refresh_token":"r","expires_at":"2026-05-01T20:00:00Z","token_type":"Bearer"}`,
			want: api.Pair{Access: "a", Refresh: "r", ExpiresAt: exp}},
		{name: "ok with unknown expiry", status: 200, body: `{"access_token":"a","refresh_token":"r","expires_at":"","token_type":"Bearer"}`,
			want: api.Pair{Access: "a", Refresh: "r"}},
		{name: "bad expires_at", status: 200, body: `{"access_token":"a","refresh_token":"r","expires_at":"tomorrow"}`, kind: api.RefreshFailed},
		{name: "no access token", status: 200, body: `{"refresh_token":"r"}`, kind: api.RefreshFailed},
		{name: "invalid_grant", status: 400, body: `{"error":{"code":"invalid_grant","message":"reconnect"}}`, kind: api.RefreshReconnect, code: "invalid_grant"},
		{name: "provider 5xx", status: 502, body: `{"error":{"code":"provider_unavailable","message":"x"}}`, kind: api.RefreshRetryable, code: "provider_unavailable"},
		{name: "provider timeout", status: 504, body: `{"error":{"code":"provider_unavailable","message":"x"}}`, kind: api.RefreshRetryable, code: "provider_unavailable"},
		{name: "provider timeout (its own code)", status: 504, body: `{"error":{"code":"provider_timeout","message":"x","request_id":"ab12"}}`, kind: api.RefreshRetryable, code: "provider_timeout"},
		{name: "body too large is not retryable", status: 413, body: `{"error":{"code":"request_too_large","message":"x"}}`, kind: api.RefreshFailed, code: "request_too_large"},
		{name: "rate limited", status: 429, body: `{"error":{"code":"rate_limited","message":"x"}}`, header: map[string]string{"Retry-After": "7"},
			kind: api.RefreshRetryable, code: "rate_limited", retryAfter: 7 * time.Second},
		{name: "provider rejected is not retryable", status: 502, body: `{"error":{"code":"provider_rejected","message":"x"}}`, kind: api.RefreshFailed, code: "provider_rejected"},
		{name: "wrong instance token", status: 401, body: `{"error":{"code":"unauthorized","message":"x"}}`, kind: api.RefreshFailed, code: "unauthorized"},
		{name: "refresh disabled", status: 503, body: `{"error":{"code":"refresh_disabled","message":"x"}}`, kind: api.RefreshFailed, code: "refresh_disabled"},
		{name: "proxy 503 html", status: 503, body: `<html>bad gateway</html>`, kind: api.RefreshRetryable},
		{name: "unexpected 418", status: 418, body: `teapot`, kind: api.RefreshFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req map[string]string
				body, _ := io.ReadAll(r.Body)
				if r.Method != http.MethodPost || r.URL.Path != "/api/refresh" || r.Header.Get("Authorization") != "Bearer "+instanceToken ||
					r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &req) != nil ||
					req["service"] != "github" || req["refresh_token"] != "rt-secret" || len(req) != 2 {
					http.Error(w, "bad request from the client", http.StatusTeapot)
					return
				}
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c, err := NewBrokerClient(srv.URL, instanceToken, BrokerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Refresh(context.Background(), "github", "rt-secret")
			if tt.kind == 0 {
				if err != nil || !got.ExpiresAt.Equal(tt.want.ExpiresAt) || got.Access != tt.want.Access || got.Refresh != tt.want.Refresh {
					t.Fatalf("%v %v, want %v", got, err, tt.want)
				}
				return
			}
			var e *api.RefreshError
			if !errors.As(err, &e) || e.Kind != tt.kind || e.Code != tt.code || e.RetryAfter != tt.retryAfter {
				t.Fatalf("err %#v, want kind %v code %q", err, tt.kind, tt.code)
			}
			if strings.Contains(err.Error(), "rt-secret") || strings.Contains(err.Error(), instanceToken) {
				t.Fatal("a secret in the error")
			}
		})
	}
}

func TestBrokerClientTransportFailures(t *testing.T) {
	t.Run("timeout is retryable", func(t *testing.T) {
		stop := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-stop:
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		defer close(stop)
		c, _ := NewBrokerClient(srv.URL, instanceToken, BrokerOptions{Timeout: 100 * time.Millisecond})
		_, err := c.Refresh(context.Background(), "github", "rt")
		if !errors.Is(err, api.ErrRetryable) || errors.Is(err, api.ErrReconnectRequired) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("connection refused is retryable", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		c, _ := NewBrokerClient(url, instanceToken, BrokerOptions{})
		_, err := c.Refresh(context.Background(), "github", "rt")
		if !errors.Is(err, api.ErrRetryable) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("huge answer is refused", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"access_token":"` + strings.Repeat("a", 100000) + `"}`))
		}))
		defer srv.Close()
		c, _ := NewBrokerClient(srv.URL, instanceToken, BrokerOptions{})
		_, err := c.Refresh(context.Background(), "github", "rt")
		var e *api.RefreshError
		if !errors.As(err, &e) || e.Kind != api.RefreshFailed {
			t.Fatalf("%v", err)
		}
	})
}

// TestTokensNeverPrint: the refresh request, the client (which holds the
// instance token) and a pair print "[redacted]" with every verb, while
// the request's wire body carries the real token (TestBrokerClient's
// server checks the broker receives it).
func TestTokensNeverPrint(t *testing.T) {
	const rt, at = "rt-hunter2-refresh", "at-hunter2-access"
	req := refreshRequest{Service: "github", RefreshToken: rt}
	c, err := NewBrokerClient("https://connect.example.com", instanceToken, BrokerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pair := api.Pair{Access: at, Refresh: rt, ExpiresAt: time.Unix(1700000000, 0)}
	for _, v := range []struct {
		name string
		val  any
	}{{"request", req}, {"*request", &req}, {"client", c}, {"*client", *c}, {"pair", pair}, {"*pair", &pair}} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			out := fmt.Sprintf(verb, v.val)
			for _, tok := range []string{rt, at, instanceToken} {
				if strings.Contains(out, tok) {
					t.Errorf("%s %s shows a token: %s", verb, v.name, out)
				}
			}
		}
	}
	var wire map[string]string
	if err := json.Unmarshal(req.body(), &wire); err != nil || wire["refresh_token"] != rt || wire["service"] != "github" || len(wire) != 2 {
		t.Fatalf("body() = %s, %v; want the real token on the wire", req.body(), err)
	}
}
