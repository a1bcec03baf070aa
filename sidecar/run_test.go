package sidecar

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// TestRunOpMatchesHTTP: RunOp answers what POST /v1/ops answers, for the
// same grants: a read, a write under a read grant, another op than the
// grant's, other args than the grant's, a replay, an expired grant.
func TestRunOpMatchesHTTP(t *testing.T) {
	env := newTestEnv(t, nil)
	exp := time.Now().Add(time.Minute)
	issue := `{"owner":"pinned-tester","repo":"notes","title":"t"}`
	hash, _ := grant.ArgsSHA256([]byte(issue))
	cases := []struct {
		name, op, args string
		g              grant.Grant
		want           Code // "" = 200
	}{
		{"read", "get_viewer", `{}`, grant.Grant{Access: grant.AccessRead, ExpiresAt: exp}, ""},
		{"write under read", "create_issue", issue, grant.Grant{Access: grant.AccessRead, ExpiresAt: exp}, CodeAccessDenied},
		{"other op", "list_repos", `{}`, grant.Grant{Access: grant.AccessRead, ExpiresAt: exp, Op: "get_viewer"}, CodeGrantMismatch},
		{"other args", "create_issue", `{"owner":"pinned-tester","repo":"notes","title":"u"}`,
			grant.Grant{Access: grant.AccessWrite, ExpiresAt: exp, Op: "create_issue", ArgsSHA256: hash}, CodeGrantMismatch},
		{"expired", "get_viewer", `{}`, grant.Grant{Access: grant.AccessRead, ExpiresAt: time.Now().Add(-time.Hour)}, CodeGrantExpired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, via := range []string{"http", "RunOp"} {
				sealed := env.seal(t, tc.g)
				var code Code
				var data json.RawMessage
				if via == "http" {
					r := env.op(t, "github", tc.op, tc.args, sealed)
					code = Code(r.err.Error.Code)
					var ok OpResponse
					_ = json.Unmarshal(r.body, &ok)
					data = ok.Data
				} else {
					res, err := env.srv.RunOp(context.Background(), OpRequest{Service: "github", Op: tc.op, Args: json.RawMessage(tc.args), Grant: sealed})
					e := asError(t, err)
					if e != nil {
						code = e.Code
					}
					data = res.Data
				}
				if code != tc.want {
					t.Errorf("%s: code %q, want %q", via, code, tc.want)
				}
				if tc.want == "" && len(data) < 10 {
					t.Errorf("%s: data %s", via, data)
				}
				if tc.want == "" {
					// The same grant again is a replay, both ways.
					_, err := env.srv.RunOp(context.Background(), OpRequest{Service: "github", Op: tc.op, Args: json.RawMessage(tc.args), Grant: sealed})
					e := asError(t, err)
					if e == nil || e.Code != CodeGrantReplayed {
						t.Errorf("%s then RunOp replay: %v", via, e)
					}
				}
			}
		})
	}
}
