package broker

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/crypto/nacl/box"

	"github.com/elevenmessenger/pinned/internal/brokerapi"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
)

// revokeKeyOf reads GET /api/oauth/config's revoke_key of service.
func (e *env) revokeKeyOf(t *testing.T, service string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.url+"/api/oauth/config?service="+url.QueryEscape(service), nil)
	_, _, body := e.do(t, req)
	var doc oauthConfigDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.RevokeKey
}

// sealTo seals plain to the base64 X25519 key pub.
func sealTo(t *testing.T, pub string, plain string) string {
	t.Helper()
	k, err := base64.StdEncoding.DecodeString(pub)
	if err != nil || len(k) != 32 {
		t.Fatalf("revoke key %q", pub)
	}
	out, err := box.SealAnonymous(nil, []byte(plain), (*[32]byte)(k), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(out)
}

func (e *env) postSealed(t *testing.T, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.url+"/api/revoke/sealed", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	status, _, out := e.do(t, req)
	return status, out
}

// TestRevokeSealed: tokens sealed to the broker's revoke key are revoked
// at the provider without an instance token, and the access token stops
// working. Hostile: a box sealed to another key, a box naming another
// service, a text "sealed" and a service without a revocation endpoint
// are refused, and nothing reaches the provider; no token is logged.
func TestRevokeSealed(t *testing.T) {
	e := newEnv(t, nil)
	key := e.revokeKeyOf(t, fakeapi.Linear)
	if key == "" {
		t.Fatal("linear's oauth config has no revoke_key")
	}
	if k := e.revokeKeyOf(t, fakeapi.GitHub); k != "" {
		t.Errorf("github declares no revocation endpoint, yet has revoke_key %q", k)
	}
	fr := e.pairFor(t, fakeapi.Linear)
	access, refresh := fr.Get("access_token"), fr.Get("refresh_token")
	tokens, _ := json.Marshal(map[string]string{"refresh_token": refresh, "access_token": access})
	otherPub, _, _ := box.GenerateKey(rand.Reader)

	bad := []struct {
		name, body string
		status     int
		code       brokerapi.Code
	}{
		{"another key", `{"service":"linear","sealed":"` + sealTo(t, base64.StdEncoding.EncodeToString(otherPub[:]), string(tokens)) + `"}`, 400, brokerapi.CodeBadRequest},
		{"another service inside", `{"service":"linear","sealed":"` + sealTo(t, key, `{"service":"hubspot","access_token":"`+access+`"}`) + `"}`, 400, brokerapi.CodeBadRequest},
		{"not base64", `{"service":"linear","sealed":"` + access + `!"}`, 400, brokerapi.CodeBadRequest},
		{"unknown member", `{"service":"linear","sealed":"` + sealTo(t, key, string(tokens)) + `","x":1}`, 400, brokerapi.CodeBadRequest},
		{"no revocation endpoint", `{"service":"github","sealed":"` + sealTo(t, key, `{"access_token":"gho_x"}`) + `"}`, 400, brokerapi.CodeRevokeUnsupported},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			status, body := e.postSealed(t, tt.body)
			if status != tt.status || apiError(t, body) != tt.code {
				t.Fatalf("got %d %s, want %d %s", status, body, tt.status, tt.code)
			}
		})
	}
	if n := len(e.fake.Revocations(fakeapi.Linear)); n != 0 {
		t.Fatalf("refused requests reached the provider %d times", n)
	}
	if st := e.viewer(t, fakeapi.Linear, access); st != 200 {
		t.Fatalf("before revocation: viewer %d", st)
	}
	status, body := e.postSealed(t, `{"service":"linear","sealed":"`+sealTo(t, key, string(tokens))+`"}`)
	if status != 200 {
		t.Fatalf("sealed revoke: %d %s", status, body)
	}
	if st := e.viewer(t, fakeapi.Linear, access); st != 401 {
		t.Errorf("after revocation: viewer %d, want 401", st)
	}
	if n := len(e.fake.Revocations(fakeapi.Linear)); n != 2 {
		t.Errorf("the fake saw %d revocations, want 2", n)
	}
	if logs := e.logs.String(); strings.Contains(logs, access) || strings.Contains(logs, refresh) {
		t.Errorf("a token is in the logs:\n%s", logs)
	}
}
