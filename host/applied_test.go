package host

import (
	"testing"

	"github.com/elevenmessenger/pinned/host/api"
)

// TestWriteAppliedReported: a write op that fails after its request was
// sent says so. A create_issue whose answer is over the result cap after
// the provider's 201 reports the 201 and applied "yes" (the issue was
// created; a retry would create a second one); a write the provider
// refused reports "no"; a read op and an op that sent nothing carry no
// applied.
func TestWriteAppliedReported(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.MaxResultBytes = 16 })
	for _, tt := range []struct {
		name, op, args string
		code           api.Code
		status         int
		applied        api.Applied
		sent           int
	}{
		{"201 then over the result cap", "create_issue", `{"owner":"pinned-tester","repo":"notes","title":"t"}`, api.CodeResultTooLarge, 201, api.AppliedYes, 1},
		{"the provider refuses the write", "create_issue", `{"owner":"pinned-tester","repo":"no-such-repo","title":"t"}`, api.CodeUpstreamError, 404, api.AppliedNo, 1},
		{"a read over the result cap", "get_repo", `{"owner":"pinned-tester","repo":"notes"}`, api.CodeResultTooLarge, 200, "", 1},
		{"a write with bad args sends nothing", "create_issue", `{"owner":"pinned-tester","repo":"notes"}`, api.CodeBadArgs, 0, "", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.Reset()
			_, err := env.run("github", tt.op, tt.args)
			if err == nil || err.Code != tt.code || err.Status != tt.status || err.Applied != tt.applied {
				t.Fatalf("got %+v, want %s HTTP %d applied %q", err, tt.code, tt.status, tt.applied)
			}
			if n := len(env.fake.Requests()); n != tt.sent {
				t.Fatalf("the fake received %d requests, want %d", n, tt.sent)
			}
		})
	}
	evs := egressEvents(t, env.logs.String())
	if len(evs) == 0 || evs[0]["applied"] != string(api.AppliedYes) {
		t.Fatalf("the audit event lacks applied: %v", evs)
	}
}
