package rotate

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/elevenmessenger/pinned/internal/brokerapi"
	"github.com/elevenmessenger/pinned/secret"
)

// DefaultBrokerTimeout bounds one call to the broker.
const DefaultBrokerTimeout = 20 * time.Second

// maxBrokerAnswer bounds the broker's answer.
const maxBrokerAnswer = 64 << 10

// BrokerClient is the api.Refresher that calls the broker's POST /api/refresh
// with the sidecar's instance token. Build it with NewBrokerClient.
type BrokerClient struct {
	endpoint string        // POST /api/refresh
	revokeAt string        // POST /api/revoke
	token    secret.Secret // the instance token
	client   *http.Client
}

// BrokerOptions tune NewBrokerClient; zero values pick the defaults.
type BrokerOptions struct {
	// HTTPClient replaces the default client (TLS 1.2+, no proxy, no
	// redirects, Timeout). Tests pass one that trusts a local CA.
	HTTPClient *http.Client
	// Timeout bounds one call (default DefaultBrokerTimeout); ignored when
	// HTTPClient is set.
	Timeout time.Duration
}

// NewBrokerClient returns an api.Refresher for the broker at baseURL
// ("https://connect.example.com"), authenticating with instanceToken
// (docs/OAUTH.md, "POST /api/refresh": "Authorization: Bearer <token>").
// The URL must be https, or http on a loopback address only (a refresh
// request carries a refresh token and the instance token).
func NewBrokerClient(baseURL string, instanceToken secret.Secret, opts BrokerOptions) (*BrokerClient, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("rotate: broker URL %q: want https://host[:port][/prefix]", baseURL)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !loopbackHost(u.Hostname()) {
			return nil, fmt.Errorf("rotate: broker URL %q: plain http is allowed on loopback only", baseURL)
		}
	default:
		return nil, fmt.Errorf("rotate: broker URL %q: want https", baseURL)
	}
	if instanceToken == "" {
		return nil, errors.New("rotate: the broker instance token is empty")
	}
	c := opts.HTTPClient
	if c == nil {
		timeout := opts.Timeout
		if timeout <= 0 {
			timeout = DefaultBrokerTimeout
		}
		c = &http.Client{
			Timeout: timeout,
			Transport: &http.Transport{
				Proxy:                 nil,
				DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
				TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
				ForceAttemptHTTP2:     true,
				TLSHandshakeTimeout:   10 * time.Second,
				ResponseHeaderTimeout: timeout,
				MaxIdleConnsPerHost:   4,
				IdleConnTimeout:       90 * time.Second,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return &BrokerClient{
		endpoint: strings.TrimSuffix(u.String(), "/") + "/api/refresh",
		revokeAt: strings.TrimSuffix(u.String(), "/") + "/api/revoke",
		token:    instanceToken,
		client:   c,
	}, nil
}

// Format prints the client's endpoint, never the instance token, with
// every verb: fmt shows an unexported field's raw value without calling
// its methods, so secret.Secret alone would not redact it here.
func (c BrokerClient) Format(f fmt.State, _ rune) {
	_, _ = fmt.Fprintf(f, "rotate.BrokerClient{endpoint: %q, token: %s}", c.endpoint, secret.Redacted)
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Unmap().IsLoopback()
}

// refreshRequest is the body of POST /api/refresh (docs/OAUTH.md):
// {"service": ..., "refresh_token": ...}. The token stays a secret.Secret
// (printing the request shows "[redacted]") until body writes the wire
// bytes.
type refreshRequest struct {
	Service      string
	RefreshToken secret.Secret
}

// body is the request's JSON, the one place the token is a string.
func (r refreshRequest) body() []byte {
	b, _ := json.Marshal(struct {
		Service      string `json:"service"`
		RefreshToken string `json:"refresh_token"`
	}{r.Service, string(r.RefreshToken)})
	return b // cannot fail: two strings
}

// Refresh implements Refresher. Failures are *api.RefreshError: invalid_grant is
// api.RefreshReconnect; 5xx, 429, timeouts and network errors are api.RefreshRetryable;
// anything else (401: a wrong instance token; 404: no client for the
// service) is api.RefreshFailed. No error carries either token.
func (c *BrokerClient) Refresh(ctx context.Context, service string, refreshToken secret.Secret) (api.Pair, error) {
	body := refreshRequest{Service: service, RefreshToken: refreshToken}.body()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return api.Pair{}, &api.RefreshError{Kind: api.RefreshFailed, Err: errors.New("building the broker request failed")}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+string(c.token))
	resp, err := c.client.Do(req)
	if err != nil {
		// *url.Error names the broker URL, which holds no secret.
		return api.Pair{}, &api.RefreshError{Kind: api.RefreshRetryable, Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBrokerAnswer+1))
	if err != nil {
		return api.Pair{}, &api.RefreshError{Kind: api.RefreshRetryable, Status: resp.StatusCode, Err: fmt.Errorf("reading the broker's answer: %w", err)}
	}
	if len(raw) > maxBrokerAnswer {
		return api.Pair{}, &api.RefreshError{Kind: api.RefreshFailed, Status: resp.StatusCode, Err: errors.New("the broker's answer is too large")}
	}
	if resp.StatusCode == http.StatusOK {
		var ans struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
			ExpiresAt    string `json:"expires_at"`
			TokenType    string `json:"token_type"`
		}
		if err := json.Unmarshal(raw, &ans); err != nil || ans.AccessToken == "" {
			return api.Pair{}, &api.RefreshError{Kind: api.RefreshFailed, Status: resp.StatusCode, Err: errors.New("the broker's answer is not a token pair")}
		}
		exp, err := ParseExpiry(ans.ExpiresAt)
		if err != nil {
			return api.Pair{}, &api.RefreshError{Kind: api.RefreshFailed, Status: resp.StatusCode, Err: errors.New("the broker's expires_at is not RFC 3339")}
		}
		return api.Pair{Access: secret.Secret(ans.AccessToken), Refresh: secret.Secret(ans.RefreshToken), ExpiresAt: exp}, nil
	}
	code, msg := errorBody(raw)
	e := &api.RefreshError{Status: resp.StatusCode, Code: code}
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && ra > 0 {
		e.RetryAfter = time.Duration(ra) * time.Second
	}
	e.Err = fmt.Errorf("broker answered HTTP %d: %s", resp.StatusCode, msg)
	e.Kind = brokerKind(e.Code, resp.StatusCode)
	return api.Pair{}, e
}

// brokerKind classifies a broker error answer: by its code when it has a
// known one, else by status (an intermediary's 5xx, 429 or 408 is
// transient).
func brokerKind(code string, status int) api.RefreshKind {
	switch c := brokerapi.Code(code); {
	case c == brokerapi.CodeInvalidGrant:
		return api.RefreshReconnect
	case c.Retryable():
		return api.RefreshRetryable
	case c.Status() != http.StatusInternalServerError: // one of the broker's other codes
		return api.RefreshFailed
	}
	if status >= 500 || status == http.StatusTooManyRequests || status == http.StatusRequestTimeout {
		return api.RefreshRetryable
	}
	return api.RefreshFailed
}

// RevokeError is a failed POST /api/revoke: the broker's code and message
// (never a token), or the transport error when no answer came.
type RevokeError struct {
	Status int    // the broker's HTTP status; 0 when it was not reached
	Code   string // the broker's error code (docs/OAUTH.md), or ""
	Err    error
}

func (e *RevokeError) Error() string { return e.Err.Error() }
func (e *RevokeError) Unwrap() error { return e.Err }

// Revoke asks the broker to revoke a connection's tokens at the provider
// (docs/OAUTH.md, "POST /api/revoke"; RFC 7009): the refresh token first,
// then the access token, either may be "". It returns the token_type_hint
// of each token the provider confirmed, or a *RevokeError. No error
// carries a token.
func (c *BrokerClient) Revoke(ctx context.Context, service string, refreshToken, accessToken secret.Secret) ([]string, error) {
	body, _ := json.Marshal(struct {
		Service      string `json:"service"`
		RefreshToken string `json:"refresh_token,omitempty"`
		AccessToken  string `json:"access_token,omitempty"`
	}{service, string(refreshToken), string(accessToken)})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.revokeAt, bytes.NewReader(body))
	if err != nil {
		return nil, &RevokeError{Err: errors.New("building the broker request failed")}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+string(c.token))
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, &RevokeError{Err: err} // *url.Error names the broker URL, no secret
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxBrokerAnswer))
	if resp.StatusCode == http.StatusOK {
		var ans struct {
			Revoked []string `json:"revoked"`
		}
		if err := json.Unmarshal(raw, &ans); err != nil || len(ans.Revoked) == 0 {
			return nil, &RevokeError{Status: resp.StatusCode, Err: errors.New("the broker's answer is not a revocation result")}
		}
		return ans.Revoked, nil
	}
	code, msg := errorBody(raw)
	return nil, &RevokeError{Status: resp.StatusCode, Code: code, Err: fmt.Errorf("broker answered HTTP %d: %s", resp.StatusCode, msg)}
}

// errorBody reads a broker error answer ({"error": {"code", "message"}}):
// its code and its message cut to 200 bytes.
func errorBody(raw []byte) (code, msg string) {
	var eb struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &eb)
	msg = eb.Error.Message
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return eb.Error.Code, msg
}
