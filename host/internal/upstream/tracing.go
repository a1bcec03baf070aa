package upstream

import (
	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/tracing"
)

// endUpstreamSpan ends the upstream request's span with the provider's
// status and the bytes read; a body that could not be read under the
// cap fails it with its code (or upstream_error).
func endUpstreamSpan(span tracing.Span, status int, n int64, rerr *Failure) {
	span.Int(tracing.KeyStatus, status)
	span.Int(tracing.KeyBytes, int(n))
	if rerr != nil {
		code := rerr.Code
		if code == "" {
			code = api.CodeUpstreamError
		}
		span.Fail(string(code))
	}
	span.End()
}

// endPickSpan ends pick's span with the projected size, failed with
// upstream_invalid when the answer could not be projected.
func endPickSpan(span tracing.Span, n int, err error) {
	if err != nil {
		span.Fail(string(api.CodeUpstreamInvalid))
	} else {
		span.Int(tracing.KeyBytes, n)
	}
	span.End()
}
