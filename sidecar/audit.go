package sidecar

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"github.com/elevenmessenger/pinned/internal/tracing"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/sidecar/api"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// Sources of an audit record: where the op came from.
const (
	sourceOps      = "ops"      // POST /v1/ops
	sourceRun      = "run"      // Server.RunOp (pinned mcp)
	sourceResearch = "research" // a research session's tool call
)

// botID is what audit records say of the bot: the first 16 hex
// characters of the SHA-256 of its public key.
func botID(k *grant.PrivateKey) string {
	pub := k.Public()
	sum := sha256.Sum256(pub[:])
	return hex.EncodeToString(sum[:8])
}

// auditReady refuses an op before anything runs when the audit trail
// cannot take its record: an op is never run unrecorded.
func (s *Server) auditReady() *Error {
	if s.cfg.Audit == nil {
		return nil
	}
	if err := s.cfg.Audit.Ready(); err != nil {
		return s.unavailable("the audit log cannot be written, so no op runs until it can; the operator must fix the log's disk").withCause(err)
	}
	return nil
}

// enforceOp is the one enforcement path (cap → grant → sandbox → pick) of
// POST /v1/ops, RunOp and each tool call of a research session, with its
// audit record: the op runs only when the audit trail can take the
// record, and its outcome, success or refusal, is appended with the
// receipt returned. A result whose record cannot be written is withheld
// (unavailable). source is one of the source* constants.
func (s *Server) enforceOp(ctx context.Context, source string, info *reqInfo, req *OpRequest, held *heldGrant) (_ *host.Result, _ string, _ *api.Receipt, e *Error) {
	ctx, span := tracing.Root(ctx, s.cfg.Tracer, tracing.SpanOp)
	if span.Recording() {
		defer func() { s.endOpSpan(span, source, req, e) }()
	}
	if e := s.auditReady(); e != nil {
		return nil, "", nil, e
	}
	res, rotated, e := s.enforceGrantAndRun(ctx, info, req, held)
	if s.cfg.Audit == nil {
		return res, rotated, nil, e
	}
	ev := api.AuditEvent{Source: source, Bot: s.bot, Grant: info.grantID, Service: clip(req.Service, 64), Op: clip(req.Op, 64),
		Target: info.target, Limit: info.limit}
	if sum, err := grant.ArgsSHA256(argsOrEmpty(req.Args)); err == nil {
		ev.ArgsSHA256 = sum
	}
	if res != nil {
		ev.Status, ev.Bytes = res.Status, int64(len(res.Data))
	} else if e != nil {
		ev.Status, ev.Applied, ev.Code = e.UpstreamStatus, e.Applied, string(e.Code)
	}
	rc, err := s.cfg.Audit.Append(ctx, ev)
	if err != nil {
		s.m.auditErrors.Inc()
		if e != nil {
			s.log.Error().Str("event", "audit_failed").Str("service", ev.Service).Str("op", ev.Op).Str("outcome", ev.Code).AnErr("cause", err).Msg("an op's refusal could not be recorded in the audit log")
			return nil, "", nil, e
		}
		ue := s.unavailable("the op ran, but its audit record could not be written, so its result is withheld; the operator must fix the audit log's disk").withCause(err)
		if s.isWrite(req) {
			ue.Applied = "yes"
		}
		ue.UpstreamStatus = res.Status
		ue.Rotated = rotated
		return nil, "", nil, ue
	}
	if e != nil {
		e.Receipt = &rc
	}
	return res, rotated, &rc, e
}

// isWrite reports whether req names a write op of the registry.
func (s *Server) isWrite(req *OpRequest) bool {
	m, ok := s.services[req.Service]
	if !ok {
		return false
	}
	op, ok := m.Op(req.Op)
	return ok && op.Access == registry.AccessWrite
}

// auditRefusal records a refusal decided before enforceOp (a research
// session's cross-service flow). held is the session's grant for the
// service. A failure to record is counted and logged: the call is
// refused either way.
func (s *Server) auditRefusal(ctx context.Context, source string, held *heldGrant, service, op string, args []byte, code string) {
	if s.cfg.Audit == nil {
		return
	}
	ev := api.AuditEvent{Source: source, Bot: s.bot, Service: clip(service, 64), Op: clip(op, 64), Code: code}
	if held != nil {
		ev.Grant = grantID(held.get())
	}
	if sum, err := grant.ArgsSHA256(argsOrEmpty(args)); err == nil {
		ev.ArgsSHA256 = sum
	}
	if _, err := s.cfg.Audit.Append(ctx, ev); err != nil {
		s.m.auditErrors.Inc()
		s.log.Error().Str("event", "audit_failed").Str("service", ev.Service).Str("op", ev.Op).Str("outcome", code).AnErr("cause", err).Msg("a refusal could not be recorded in the audit log")
	}
}
