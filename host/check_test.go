package host

import (
	"context"
	"errors"
	"testing"

	"github.com/elevenmessenger/pinned/host/api"
)

func TestCheck(t *testing.T) {
	env := newEnv(t, nil)
	ctx := context.Background()
	tests := []struct {
		name, service, op, args string
		access, confirm         string
		code                    api.Code
	}{
		{"write op renders its confirm line", "github", "create_issue",
			`{"owner":"pinned-tester","repo":"notes","title":"Fix \"it\"","body":"x"}`,
			"write", `[GitHub: owner "pinned-tester", repo "notes"] Open an issue titled "Fix "it"" in pinned-tester/notes?`, ""},
		{"read op has no confirm", "github", "list_repos", `{"per_page":5}`, "read", "", ""},
		{"bad args are refused by the sandbox", "github", "create_issue", `{"owner":"pinned-tester","repo":"notes"}`, "", "", api.CodeBadArgs},
		{"unknown op", "github", "delete_repo", `{}`, "", "", api.CodeUnknownOp},
		{"dnsimple register", "dnsimple", "register_domain", `{"account":1385,"domain":"blip.com","registrant_id":2715}`,
			"write", `[DNSimple: account "1385", domain "blip.com"] Register blip.com? This buys the domain and costs real money.`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.Reset()
			c, err := env.eng.Check(ctx, tt.service, tt.op, []byte(tt.args))
			if tt.code != "" {
				var he *Error
				if !errors.As(err, &he) || he.Code != tt.code {
					t.Fatalf("got %v, want %s", err, tt.code)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if c.Access != tt.access || c.Confirm != tt.confirm {
					t.Fatalf("got %+v", c)
				}
			}
			if n := len(env.fake.Requests()); n != 0 {
				t.Fatalf("Check sent %d requests", n)
			}
		})
	}
}
