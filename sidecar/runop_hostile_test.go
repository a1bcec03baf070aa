package sidecar

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/fakeapi"
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
			_, e := env.srv.RunOp(context.Background(), OpRequest{Service: "github", Op: tc.op, Args: json.RawMessage(tc.args), Grant: tc.grant})
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
