package sidecar

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// TestRunOpRefusesHostileGrants: RunOp (the MCP server's way in) is the
// same enforcement as POST /v1/ops: a grant sealed to another bot, a
// grant of another service, a grant in the clear, a huge or empty grant,
// a write op named under a read grant and a write grant bound to other
// args are each refused with their code, nothing reaches the provider,
// and no message carries the secret.
func TestRunOpRefusesHostileGrants(t *testing.T) {
	env := newTestEnv(t, nil)
	other, err := grant.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	issue := `{"owner":"pinned-tester","repo":"notes","title":"t"}`
	otherHash, _ := grant.ArgsSHA256([]byte(`{"owner":"pinned-tester","repo":"notes","title":"u"}`))
	plain, _ := json.Marshal(map[string]any{"v": 1, "service": "github", "access": "write", "kind": "pat", "secret": fakeapi.Token("github"), "expires_at": time.Now().Add(time.Minute)})
	cases := []struct {
		name, op, args, grant string
		want                  Code
	}{
		{"sealed to another bot", "get_viewer", `{}`, sealTo(t, grant.Grant{Access: grant.AccessRead}, other.Public()), CodeGrantInvalid},
		{"another service's grant", "get_viewer", `{}`, env.seal(t, grant.Grant{Service: "stripe", Access: grant.AccessRead}), CodeServiceMismatch},
		{"a grant in the clear", "get_viewer", `{}`, base64.StdEncoding.EncodeToString(plain), CodeGrantInvalid},
		{"a huge grant", "get_viewer", `{}`, strings.Repeat("A", 4<<20), CodeGrantInvalid},
		{"an empty grant", "get_viewer", `{}`, "", CodeBadRequest},
		{"write op under a read grant", "create_issue", issue, env.seal(t, grant.Grant{Access: grant.AccessRead, Op: "create_issue"}), CodeAccessDenied},
		{"write grant bound to other args", "create_issue", issue, env.seal(t, grant.Grant{Access: grant.AccessWrite, Op: "create_issue", ArgsSHA256: otherHash}), CodeGrantMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env.fake.Reset()
			_, err := env.srv.RunOp(context.Background(), OpRequest{Service: "github", Op: tc.op, Args: json.RawMessage(tc.args), Grant: tc.grant})
			e := asError(t, err)
			if e == nil || e.Code != tc.want {
				t.Fatalf("got %v, want %s", e, tc.want)
			}
			if strings.Contains(e.Message, fakeapi.Token("github")) || e.Rotated != "" {
				t.Errorf("message %q rotated %q", e.Message, e.Rotated)
			}
			if n := len(env.fake.Requests()); n != 0 {
				t.Errorf("%d requests reached the fake", n)
			}
		})
	}
	if strings.Contains(env.allLogs(), fakeapi.Token("github")) {
		t.Error("the secret is in the sidecar's log")
	}
}

// TestOpsWithholdCredentialEcho: a provider that echoes the grant's token
// in a picked field gets the result withheld on POST /v1/ops and RunOp
// alike (the host's one check, api.CodeCredentialEcho): 502
// credential_echo, no data, and the token in no answer or log line.
func TestOpsWithholdCredentialEcho(t *testing.T) {
	env := newTestEnv(t, nil)
	tok := fakeapi.Token("github")
	escaped := `ghp\u005f` + tok[4:]
	issue := `{"owner":"pinned-tester","repo":"notes","title":"t"}`
	tests := []struct {
		name, op, args, body string
		status               int
		applied              string
	}{
		{"the token as the login", "get_viewer", `{}`, `{"login":"` + tok + `","id":1}`, 200, ""},
		{"the token JSON-escaped", "get_viewer", `{}`, `{"login":"` + escaped + `","id":1}`, 200, ""},
		{"the token after 1e400 (refused as ambiguous)", "get_viewer", `{}`, `{"login":"x","id":1e400,"name":"` + escaped + `"}`, 200, ""},
		{"the token in a write's answer", "create_issue", issue, `{"number":1,"title":"` + tok + `"}`, 201, "yes"},
	}
	for _, tt := range tests {
		for _, via := range []string{"POST /v1/ops", "RunOp"} {
			t.Run(tt.name+" via "+via, func(t *testing.T) {
				env.fake.Reset()
				env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tt.status)
					_, _ = w.Write([]byte(tt.body))
					return true
				})
				defer env.fake.SetHandler(nil)
				access := grant.AccessRead
				if tt.op == "create_issue" {
					access = grant.AccessWrite
				}
				sealed := env.seal(t, grant.Grant{Access: access})
				var text string
				var code Code
				var applied string
				if via == "RunOp" {
					res, err := env.srv.RunOp(context.Background(), OpRequest{Service: "github", Op: tt.op, Args: json.RawMessage(tt.args), Grant: sealed})
					e := asError(t, err)
					if res.Data != nil || e == nil {
						t.Fatalf("RunOp returned %+v, %v", res, e)
					}
					code, applied, text = e.Code, e.Applied, e.Message
				} else {
					r := env.op(t, "github", tt.op, tt.args, sealed)
					if r.status != http.StatusBadGateway {
						t.Fatalf("%d %s", r.status, r.body)
					}
					code, applied, text = Code(r.err.Error.Code), r.err.Error.Applied, string(r.body)
				}
				want := CodeCredentialEcho
				if strings.Contains(tt.body, "1e400") {
					want = CodeUpstreamInvalid
				}
				if code != want || applied != tt.applied {
					t.Fatalf("code %s applied %q, want %s %q", code, applied, want, tt.applied)
				}
				if n := len(env.fake.Requests()); n != 1 {
					t.Errorf("%d requests reached the provider, want 1", n)
				}
				for _, s := range []string{tok, escaped, tok[4:20]} {
					if strings.Contains(text, s) || strings.Contains(env.allLogs(), s) {
						t.Errorf("%q is in the answer or the log", s)
					}
				}
			})
		}
	}
}
