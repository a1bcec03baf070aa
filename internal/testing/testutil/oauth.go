package testutil

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
)

// Pair is a token pair the fake's OAuth provider issued. ExpiresAt is the
// access token's expiry (issued + expires_in, truncated to the second), or
// zero when the answer had no expires_in.
type Pair struct {
	Access, Refresh string
	ExpiresAt       time.Time
}

// MintPair connects service at the fake's OAuth endpoints with the
// authorization code grant (RFC 6749 §4.1): authorize, then exchange the
// code with the fake's default client. The fake's clock is set back by age
// while minting, so the pair is issued age ago: with age past its lifetime
// it is already expired, at the fake and by its ExpiresAt. The test fails
// unless both tokens come back.
func MintPair(t testing.TB, fake *fakeapi.Server, service string, age time.Duration) Pair {
	t.Helper()
	issued := time.Now().Add(-age)
	if age != 0 {
		fake.SetClock(func() time.Time { return time.Now().Add(-age) })
		defer fake.SetClock(nil)
	}
	authorize, tokenURL := fakeapi.OAuthEndpoints(service)
	c := &http.Client{
		Transport:     fake.Client().Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       10 * time.Second,
	}
	const redirect = "http://127.0.0.1/callback"
	q := url.Values{"client_id": {fakeapi.OAuthClientID(service)}, "redirect_uri": {redirect}, "response_type": {"code"}, "state": {"s0"}}
	resp, err := c.Get(authorize + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("authorize: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	form := url.Values{
		"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {redirect},
		"client_id": {fakeapi.OAuthClientID(service)}, "client_secret": {fakeapi.OAuthClientSecret(service)},
	}
	req, _ := http.NewRequest(http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var tok struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		ExpiresIn    int    `json:"expires_in"`
	}
	if err := json.Unmarshal(body, &tok); err != nil || tok.AccessToken == "" || tok.RefreshToken == "" {
		t.Fatalf("token exchange: %d %s", resp.StatusCode, body)
	}
	p := Pair{Access: tok.AccessToken, Refresh: tok.RefreshToken}
	if tok.ExpiresIn > 0 {
		p.ExpiresAt = issued.Add(time.Duration(tok.ExpiresIn) * time.Second).Truncate(time.Second)
	}
	return p
}
