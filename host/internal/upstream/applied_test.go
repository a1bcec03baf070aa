package upstream

import "testing"

// TestMarkApplied: what each failure after sending says about the write
// (the kinds are the host's codes one to one: KindError is upstream_error).
func TestMarkApplied(t *testing.T) {
	for _, tt := range []struct {
		kind   Kind
		status int
		sent   bool
		want   Applied
	}{
		{KindResultTooLarge, 201, true, AppliedYes},
		{KindInvalid, 200, true, AppliedYes},
		{KindTooLarge, 200, true, AppliedYes},
		{KindError, 200, true, AppliedMaybe}, // GraphQL errors in a 200
		{KindError, 500, true, AppliedMaybe},
		{KindError, 502, true, AppliedMaybe},
		{KindError, 302, true, AppliedMaybe},
		{KindError, 422, true, AppliedNo},
		{KindRateLimited, 429, true, AppliedNo},
		{KindRateLimited, 200, true, AppliedMaybe}, // GraphQL RATELIMITED in a 200
		{KindTimeout, 201, true, AppliedYes},       // the body timed out after a 201
		{KindTimeout, 0, true, AppliedMaybe},
		{KindUnreachable, 0, true, AppliedMaybe},
		{KindUnreachable, 0, false, ""},
		{KindDenied, 0, false, ""},
	} {
		f := &Failure{Kind: tt.kind, Status: tt.status}
		markApplied(f, tt.sent)
		if f.Applied != tt.want {
			t.Errorf("kind %d HTTP %d sent=%v: applied %q, want %q", tt.kind, tt.status, tt.sent, f.Applied, tt.want)
		}
	}
}
