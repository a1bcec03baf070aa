package broker

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/internal/brokerapi"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
)

// postRevoke sends POST /api/revoke with the first instance token.
func (e *env) postRevoke(t *testing.T, body map[string]string) (int, []byte) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, e.url+"/api/revoke", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testInstance)
	status, _, out := e.do(t, req)
	return status, out
}

// do sends req to the broker and returns the status, headers and body.
func (e *env) do(t *testing.T, req *http.Request) (int, http.Header, []byte) {
	t.Helper()
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// TestRevoke: disconnecting a Linear connection revokes its refresh token
// then its access token at the provider (RFC 7009), after which the
// access token no longer works and the refresh token no longer refreshes.
func TestRevoke(t *testing.T) {
	e := newEnv(t, nil)
	fr := e.pairFor(t, fakeapi.Linear)
	access, refresh := fr.Get("access_token"), fr.Get("refresh_token")
	if st := e.viewer(t, fakeapi.Linear, access); st != 200 {
		t.Fatalf("before revocation: viewer %d", st)
	}
	status, body := e.postRevoke(t, map[string]string{"service": fakeapi.Linear, "refresh_token": refresh, "access_token": access})
	if status != 200 {
		t.Fatalf("revoke: %d %s", status, body)
	}
	var got RevokeResponse
	if err := json.Unmarshal(body, &got); err != nil || !slices.Equal(got.Revoked, []string{"refresh_token", "access_token"}) {
		t.Fatalf("revoke answer %s (%v)", body, err)
	}
	want := []fakeapi.Revocation{{Token: refresh, TokenTypeHint: "refresh_token", Revoked: true}, {Token: access, TokenTypeHint: "access_token", Revoked: true}}
	if rv := e.fake.Revocations(fakeapi.Linear); !slices.Equal(rv, want) {
		t.Errorf("the fake recorded %+v, want %+v", rv, want)
	}
	if st := e.viewer(t, fakeapi.Linear, access); st != 401 {
		t.Errorf("after revocation: viewer %d, want 401", st)
	}
	if st, _, b := e.postRefresh(t, testInstance, "application/json", refreshBody(fakeapi.Linear, refresh)); st != 400 || apiError(t, b) != brokerapi.CodeInvalidGrant {
		t.Errorf("refresh after revocation: %d %s, want 400 invalid_grant", st, b)
	}
	if logs := e.logs.String(); strings.Contains(logs, access) || strings.Contains(logs, refresh) || strings.Contains(logs, fakeapi.OAuthClientSecret(fakeapi.Linear)) {
		t.Errorf("a token or the client secret is in the logs:\n%s", logs)
	}
}

// TestRevokeRefuses: every refusal names its code, and a provider that
// fails leaves the token working and says so.
func TestRevokeRefuses(t *testing.T) {
	tests := []struct {
		name    string
		body    map[string]string
		prepare func(e *env)
		status  int
		code    brokerapi.Code
	}{
		{name: "no revocation endpoint (github)", body: map[string]string{"service": fakeapi.GitHub, "access_token": "gho_x"}, status: 400, code: brokerapi.CodeRevokeUnsupported},
		{name: "no token", body: map[string]string{"service": fakeapi.Linear}, status: 400, code: brokerapi.CodeBadRequest},
		{name: "unknown service", body: map[string]string{"service": "nope", "access_token": "x"}, status: 404, code: brokerapi.CodeUnknownService},
		{name: "provider 503", body: map[string]string{"service": fakeapi.Linear}, prepare: func(e *env) { e.fake.SetRevokeStatus(fakeapi.Linear, 503) }, status: 502, code: brokerapi.CodeProviderUnavailable},
		{name: "provider 400", body: map[string]string{"service": fakeapi.Linear}, prepare: func(e *env) { e.fake.SetRevokeStatus(fakeapi.Linear, 400) }, status: 502, code: brokerapi.CodeProviderRejected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			access := ""
			if tt.body["service"] == fakeapi.Linear && tt.prepare != nil {
				access = e.pairFor(t, fakeapi.Linear).Get("access_token")
				tt.body["access_token"] = access
				tt.prepare(e)
			}
			status, body := e.postRevoke(t, tt.body)
			if status != tt.status || apiError(t, body) != tt.code {
				t.Fatalf("got %d %s, want %d %s", status, body, tt.status, tt.code)
			}
			if access != "" {
				if st := e.viewer(t, fakeapi.Linear, access); st != 200 {
					t.Errorf("a failed revocation: viewer %d, want 200 (the token still works)", st)
				}
				if strings.Contains(string(body), access) || strings.Contains(e.logs.String(), access) {
					t.Error("the token is in the answer or the logs")
				}
			}
		})
	}
}

// TestRevokeRefusesForeignHost: a revocation endpoint on a host the
// manifest does not pin (forged past the loader, which refuses it) is
// never reached: nothing is sent, and the answer says so.
func TestRevokeRefusesForeignHost(t *testing.T) {
	e := newEnv(t, nil)
	c := e.b.clients[fakeapi.Linear]
	forged := *c.oauth
	forged.RevokeURL = "https://auth.evil.example/oauth/revoke"
	c.oauth = &forged
	e.fake.Reset()
	status, body := e.postRevoke(t, map[string]string{"service": fakeapi.Linear, "access_token": fakeapi.OAuthToken(fakeapi.Linear)})
	if status != 502 || apiError(t, body) != brokerapi.CodeProviderRejected {
		t.Fatalf("got %d %s, want 502 provider_rejected", status, body)
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Errorf("the fake saw %d requests, want none", n)
	}
	if st := e.viewer(t, fakeapi.Linear, fakeapi.OAuthToken(fakeapi.Linear)); st != 200 {
		t.Errorf("viewer %d", st)
	}
}
