package sidecar

import (
	"github.com/elevenmessenger/pinned/internal/tracing"
)

// endOpSpan sets an op's root span's attributes and ends it: the
// service and op as the registry names them ("unknown" otherwise, so a
// caller's text never reaches a span), the access, the source and the
// refusal code. No arg, grant or answer byte is set.
func (s *Server) endOpSpan(span tracing.Span, source string, req *OpRequest, e *Error) {
	svc, op := s.labels(req.Service, req.Op)
	span.Str(tracing.KeyService, svc)
	span.Str(tracing.KeyOp, op)
	span.Str(tracing.KeySource, source)
	if m, ok := s.services[req.Service]; ok {
		if o, ok := m.Op(req.Op); ok {
			span.Str(tracing.KeyAccess, o.Access)
		}
	}
	if e != nil {
		span.Fail(string(e.Code))
		if e.UpstreamStatus != 0 {
			span.Int(tracing.KeyStatus, e.UpstreamStatus)
		}
	}
	span.End()
}

// endSpan ends a stage's span, failed with e's code when e is not nil.
func endSpan(span tracing.Span, e *Error) {
	if e != nil {
		span.Fail(string(e.Code))
	}
	span.End()
}
