package upstream

import (
	"testing"

	"github.com/elevenmessenger/pinned/host/api"
)

// TestMarkApplied: what each failure after sending says about the write
// (by the failure's code).
func TestMarkApplied(t *testing.T) {
	for _, tt := range []struct {
		code   api.Code
		status int
		sent   bool
		want   api.Applied
	}{
		{api.CodeResultTooLarge, 201, true, api.AppliedYes},
		{api.CodeUpstreamInvalid, 200, true, api.AppliedYes},
		{api.CodeUpstreamTooLarge, 200, true, api.AppliedYes},
		{api.CodeUpstreamError, 200, true, api.AppliedMaybe}, // GraphQL errors in a 200
		{api.CodeUpstreamError, 500, true, api.AppliedMaybe},
		{api.CodeUpstreamError, 502, true, api.AppliedMaybe},
		{api.CodeUpstreamError, 302, true, api.AppliedMaybe},
		{api.CodeUpstreamError, 422, true, api.AppliedNo},
		{api.CodeRateLimited, 429, true, api.AppliedNo},
		{api.CodeRateLimited, 200, true, api.AppliedMaybe}, // GraphQL RATELIMITED in a 200
		{api.CodeTimeout, 201, true, api.AppliedYes},       // the body timed out after a 201
		{api.CodeTimeout, 0, true, api.AppliedMaybe},
		{api.CodeUpstreamUnreachable, 0, true, api.AppliedMaybe},
		{api.CodeUpstreamUnreachable, 0, false, ""},
		{api.CodeEgressDenied, 0, false, ""},
	} {
		f := &Failure{Code: tt.code, Status: tt.status}
		markApplied(f, tt.sent)
		if f.Applied != tt.want {
			t.Errorf("%s HTTP %d sent=%v: applied %q, want %q", tt.code, tt.status, tt.sent, f.Applied, tt.want)
		}
	}
}
