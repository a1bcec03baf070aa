package host

import (
	"context"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/host/internal/sandbox"
	"github.com/elevenmessenger/pinned/internal/tracing"
)

// endSandboxSpan ends the sandbox's span with the run's outcome: its code
// when the run did not end in an accepted request, and the deny reason
// of a denied one.
func endSandboxSpan(ctx context.Context, span tracing.Span, out sandbox.Outcome, deny api.DenyReason, err error) {
	switch {
	case err != nil:
		span.Fail(string(guestFailure(ctx, err).Code))
	case out == sandbox.OutcomeRejected:
		span.Fail(string(api.CodeBadArgs))
	case out == sandbox.OutcomeDenied:
		span.Str(tracing.KeyDeny, string(deny))
		span.Fail(string(api.CodeEgressDenied))
	case out != sandbox.OutcomeAccepted:
		span.Fail(string(api.CodeSandboxError))
	}
	span.End()
}
