package sidecar

import "context"

// RunOp enforces and runs one op exactly as POST /v1/ops does — the same
// code: lookup, concurrency slot, grant (open, expiry, service, access,
// op and args binding, replay), token rotation, sandbox, pick — for
// callers inside the process that speak another protocol (the MCP server,
// package mcpserver). req is the decoded body of POST /v1/ops; the answer
// is its 200 body, or the error it would have answered (with Rotated set
// when the op rotated the pair and then failed). The op is counted in the
// sidecar's metrics like an HTTP one; nothing is logged here: the caller
// logs the error's Code and, for itself only, its Cause. The error, when
// not nil, is an *Error (errors.As).
func (s *Server) RunOp(ctx context.Context, req OpRequest) (OpResponse, error) {
	res, rotated, rc, e := s.enforceOp(ctx, sourceRun, &reqInfo{}, &req, nil)
	svc, op := s.labels(req.Service, req.Op)
	outcome := "ok"
	if e != nil {
		outcome = string(e.Code)
	}
	s.m.ops.WithLabelValues(svc, op, outcome).Inc()
	if e != nil {
		return OpResponse{}, e
	}
	return OpResponse{Status: res.Status, Data: nullIfEmpty(res.Data), Rotated: rotated,
		Next: res.Next, Pages: res.Pages, Stopped: string(res.Stopped), StopMessage: res.StopMessage, Receipt: rc}, nil
}

// CheckOp is POST /v1/consent without HTTP: it validates the args in the
// sandbox (nothing is sent, no grant is needed) and renders a write op's
// confirm sentence, answering what the endpoint answers. The error, when
// not nil, is an *Error (errors.As).
func (s *Server) CheckOp(ctx context.Context, req ConsentRequest) (ConsentResponse, error) {
	res, e := s.checkConsent(ctx, &reqInfo{}, &req)
	svc, op := s.labels(req.Service, req.Op)
	outcome := "ok"
	if e != nil {
		outcome = string(e.Code)
	}
	s.m.consent.WithLabelValues(svc, op, outcome).Inc()
	if e != nil {
		return ConsentResponse{}, e
	}
	return *res, nil
}

// FlowRefused counts a call refused as a cross-service flow (package
// internal/flow) in pinned_sidecar_flow_refused_total: surface is
// "research" or "mcp", from the service that returned the value, to the
// service the call was for. Names outside the registry count as
// "unknown", so a caller cannot grow the label set.
func (s *Server) FlowRefused(surface, from, to string) {
	if surface != "research" && surface != "mcp" {
		surface = unknownLabel
	}
	if !s.reg.Has(from) {
		from = unknownLabel
	}
	if !s.reg.Has(to) {
		to = unknownLabel
	}
	s.m.flowRefused.WithLabelValues(surface, from, to).Inc()
}

// AuditRefusal records in the audit trail (Config.Audit) a call its
// caller refused before RunOp, as POST /v1/ops records its refusals:
// source "run", the service and op as named, the args' digest, code.
// Nothing when there is no trail; a failure to record is counted and
// logged.
func (s *Server) AuditRefusal(ctx context.Context, service, op string, args []byte, code string) {
	s.auditRefusal(ctx, sourceRun, nil, service, op, args, code)
}
