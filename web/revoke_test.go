package web

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/crypto/nacl/box"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/testing/testenv"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
)

// TestDisconnectRevokes: Disconnect's POST /api/revoke, with the tokens
// sealed to the revoke key /api/integrations gives, revokes them at the
// provider through a real broker, and the access token stops working at
// the fake. pinned web relays no token in the clear (a plaintext or text
// "sealed" is refused before the broker is asked) and logs none; a
// service without OAuth is refused.
func TestDisconnectRevokes(t *testing.T) {
	fake := testutil.Fake(t)
	brokerURL := testenv.Broker(t, fake, "web-test-instance-token-0123456789", testenv.BrokerOptions{Services: []string{fakeapi.Linear}})
	s, _, logs := newTestServer(t, brokerURL)
	post := func(body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "http://example.test/api/revoke", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "http://example.test")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "http://example.test/api/integrations", nil)
	s.Handler().ServeHTTP(rec, req)
	var c Catalog
	if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	key := ""
	for _, cs := range c.Services {
		if cs.ID == fakeapi.Linear {
			key = cs.RevokeKey
		} else if cs.RevokeKey != "" {
			t.Errorf("%s has a revoke key but no revocation client at the broker", cs.ID)
		}
	}
	raw, err := base64.StdEncoding.DecodeString(key)
	if err != nil || len(raw) != 32 {
		t.Fatalf("linear's revoke_key %q", key)
	}
	p := testutil.MintPair(t, fake, fakeapi.Linear, 0)
	tokens, _ := json.Marshal(map[string]string{"refresh_token": p.Refresh, "access_token": p.Access})
	sealed, err := box.SealAnonymous(nil, tokens, (*[32]byte)(raw), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}

	refused := []struct{ name, body, code string }{
		{"plaintext tokens", string(tokens), string(CodeBadRequest)},
		{"text as sealed", `{"service":"linear","sealed":"` + base64.StdEncoding.EncodeToString([]byte(`{"access_token":"`+p.Access+`"}`)) + `"}`, string(CodeBadRequest)},
		{"unknown service", `{"service":"nope","sealed":"` + base64.StdEncoding.EncodeToString(sealed) + `"}`, string(CodeBadRequest)},
		{"unknown member", `{"service":"linear","sealed":"` + base64.StdEncoding.EncodeToString(sealed) + `","access_token":"x"}`, string(CodeBadRequest)},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			rec := post(tt.body)
			var e struct{ Error struct{ Code string } }
			if rec.Code != 400 || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error.Code != tt.code {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
		})
	}
	if n := len(fake.Revocations(fakeapi.Linear)); n != 0 {
		t.Fatalf("refused requests reached the provider %d times", n)
	}
	if st := testutil.ViewerStatus(t, fake, fakeapi.Linear, p.Access); st != 200 {
		t.Fatalf("before: viewer %d", st)
	}
	rec = post(`{"service":"linear","sealed":"` + base64.StdEncoding.EncodeToString(sealed) + `"}`)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"revoked":["refresh_token","access_token"]`) {
		t.Fatalf("revoke: %d %s", rec.Code, rec.Body)
	}
	if st := testutil.ViewerStatus(t, fake, fakeapi.Linear, p.Access); st != 401 {
		t.Errorf("after Disconnect: viewer %d, want 401", st)
	}
	if l := logs.String(); strings.Contains(l, p.Access) || strings.Contains(l, p.Refresh) {
		t.Errorf("a token is in pinned web's log:\n%s", l)
	}

	// Without a broker: broker_unavailable, nothing sent.
	s2, _, _ := newTestServer(t, "")
	req = httptest.NewRequest("POST", "http://example.test/api/revoke", strings.NewReader(`{"service":"linear","sealed":"`+base64.StdEncoding.EncodeToString(sealed)+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://example.test")
	rec = httptest.NewRecorder()
	s2.Handler().ServeHTTP(rec, req)
	if rec.Code != 502 || !strings.Contains(rec.Body.String(), string(CodeBrokerFailed)) {
		t.Errorf("no broker: %d %s", rec.Code, rec.Body)
	}
}
