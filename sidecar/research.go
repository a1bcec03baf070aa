package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/elevenmessenger/pinned/secret"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/elevenmessenger/pinned/internal/flow"
	"github.com/elevenmessenger/pinned/internal/httperr"
	"github.com/elevenmessenger/pinned/internal/research"
	"github.com/elevenmessenger/pinned/internal/rotate"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// Research sessions (docs/API.md, "POST /v1/research"; the loop is package
// internal/research). How one grant per service serves many tool calls:
//
//   - The session opens every grant once, before the model is asked
//     anything, and refuses the whole request unless each one is a read (or
//     legacy) grant, for a registry service, unbound to an op, alive, and
//     expiring within ResearchGrantTTL (default 15 minutes); one grant per
//     service.
//   - Then it records every nonce: the grants are spent by the session as
//     a whole, and can never run again — not in another session, not in
//     POST /v1/ops — whatever becomes of the session.
//   - Each tool call then runs through enforceOp with the opened grant held in
//     the session (its held parameter, a heldGrant): lookup, slot, expiry, service, access,
//     binding, rotation, sandbox, pick — everything POST /v1/ops checks but
//     opening and recording the nonce. A grant expiring mid-session fails
//     its later calls (grant_expired).
//   - The opened grants live only in this handler's locals and die with
//     the request; a rotated pair replaces the held one, so later calls run
//     with it, and goes back sealed to member_key in `rotated`.
//   - Cross-service flow control (package internal/flow): the session
//     records the values each service returned, by the pick's data-flow
//     classes; a call whose args carry a value another service returned is
//     refused before enforceOp runs (cross_service_flow, naming the op that
//     returned it), unless the request's flows allow that flow.

// Defaults of the research configuration.
const (
	// DefaultResearchGrantTTL bounds how far ahead a research grant may
	// expire: a research grant serves many reads, so it must be short.
	DefaultResearchGrantTTL = 15 * time.Minute
	// SuggestedResearchGrantTTL is the grant life /v1/consent suggests.
	SuggestedResearchGrantTTL = 10 * time.Minute
	// DefaultMaxResearch bounds the sessions running at once.
	DefaultMaxResearch = 4
	// MaxResearchGrants bounds the grants (services) of one session.
	MaxResearchGrants = 8
)

// ResearchRequest is the body of POST /v1/research.
type ResearchRequest struct {
	// Question is the member's question (at most 4 KiB).
	Question string `json:"question"`
	// Grants are sealed read grants, one per service.
	Grants []string `json:"grants"`
	// Limits override the session's bounds (api.Limits).
	Limits *api.Limits `json:"limits,omitempty"`
	// Flows are the cross-service flows the member allowed on the
	// research consent ({"from": "dnsimple", "to": "github"}: a read of
	// GitHub may carry a value DNSimple returned), each sealed in the
	// grants of both its services (grant.Grant.Flows), else
	// grant_mismatch. Without one, no value a service returned goes into
	// a call to another (cross_service_flow).
	Flows []api.Flow `json:"flows,omitempty"`
}

// ResearchResponse is the answer of POST /v1/research (also the data of
// the last server-sent event, "answer").
type ResearchResponse struct {
	// Answer is the model's final text.
	Answer string `json:"answer"`
	// Stop is why the loop ended: "end_turn" or the bound reached
	// ("tool_calls", "turns", "result_bytes", "wall_time").
	Stop string `json:"stop"`
	// Steps are the model's tool calls, in order (api.Step): the
	// service and op (or the tool name, when it names no op of the
	// palette), the args, the outcome ("ok" or a code) and the bytes of
	// the result that entered the model's context.
	Steps []api.Step `json:"steps"`
	// Turns counts the model turns; ResultBytes the tool_result text that
	// entered the model's context.
	Turns       int `json:"turns"`
	ResultBytes int `json:"result_bytes"`
	// Rotated holds, by service, each pair the session rotated, sealed to
	// that grant's member_key (grant.OpenRotated opens it).
	Rotated map[string]string `json:"rotated,omitempty"`
}

// heldGrant is a research session's opened grant for one service.
type heldGrant struct {
	mu sync.Mutex
	g  *grant.Grant
	// past are the grants a rotation replaced: their credentials are
	// still never to reach the model.
	past []*grant.Grant
}

// rotated replaces the held pair with the fresh one a call rotated to.
func (h *heldGrant) rotated(p api.Pair) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := *h.g
	c.Kind = grant.KindOAuth
	c.Secret, c.Refresh = secret.Secret(p.Access), secret.Secret(p.Refresh)
	c.TokenExpiresAt = rotate.FormatExpiry(p.ExpiresAt)
	h.past = append(h.past, h.g)
	h.g = &c
}

// all returns the held grant and every one it replaced.
func (h *heldGrant) all() []*grant.Grant {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*grant.Grant{h.g}, h.past...)
}

func (h *heldGrant) get() *grant.Grant {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.g
}

// researchFailure is an error answer of /v1/research: the error, and the
// pairs rotated before it.
func (s *Server) researchFail(w http.ResponseWriter, r *http.Request, e *Error, rotated map[string]string) {
	s.m.research.WithLabelValues(string(e.Code)).Inc()
	if len(rotated) == 0 {
		s.fail(w, r, e)
		return
	}
	info := infoFrom(r)
	info.outcome = string(e.Code)
	if e.cause != nil {
		info.cause = e.cause.Error()
	}
	var b struct {
		Error   json.RawMessage   `json:"error"`
		Rotated map[string]string `json:"rotated"`
	}
	var inner struct {
		Error json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(e.body(httperr.RequestID(w)), &inner)
	b.Error, b.Rotated = inner.Error, rotated
	body, _ := json.Marshal(b)
	writeJSON(w, e.Status, body)
}

func (s *Server) handleResearch(w http.ResponseWriter, r *http.Request) {
	info := infoFrom(r)
	if s.cfg.Model == nil {
		s.researchFail(w, r, newError(CodeModelNotConfigured, "this sidecar has no model configured for research (docs/OPERATING.md)"), nil)
		return
	}
	body, e := s.readBody(w, r)
	if e != nil {
		s.researchFail(w, r, e, nil)
		return
	}
	var req ResearchRequest
	if e := decode(body, &req); e != nil {
		s.researchFail(w, r, e, nil)
		return
	}
	q := strings.TrimSpace(req.Question)
	switch {
	case q == "" || len(req.Grants) == 0:
		e = newError(CodeBadRequest, "question and grants are required")
	case len(q) > research.MaxQuestionBytes || !utf8.ValidString(q):
		e = newError(CodeBadRequest, fmt.Sprintf("the question must be valid UTF-8 of at most %d bytes", research.MaxQuestionBytes))
	case len(req.Grants) > MaxResearchGrants:
		e = newError(CodeBadRequest, fmt.Sprintf("at most %d grants (one per service)", MaxResearchGrants))
	}
	if e == nil {
		e = s.checkFlows(req.Flows, nil)
	}
	var lim api.Limits
	if e == nil && req.Limits != nil {
		if _, err := req.Limits.Resolve(); err != nil {
			e = newError(CodeBadRequest, err.Error())
		}
		lim = *req.Limits
	}
	if e != nil {
		s.researchFail(w, r, e, nil)
		return
	}
	select {
	case s.researchSlots <- struct{}{}:
		defer func() { <-s.researchSlots }()
	default:
		s.researchFail(w, r, s.busy("every research slot is taken; retry shortly"), nil)
		return
	}
	held, services, e := s.openResearchGrants(r.Context(), info, req.Grants, req.Flows)
	if e != nil {
		if strings.HasPrefix(string(e.Code), "grant_") || e.Code == CodeAccessDenied {
			s.m.denials.WithLabelValues("grant", string(e.Code)).Inc()
		}
		s.researchFail(w, r, e, nil)
		return
	}
	palette, err := research.NewPalette(s.reg, services)
	if err != nil { // openResearchGrants checked every service
		s.researchFail(w, r, newError(CodeInternal, "the palette could not be built").withCause(err), nil)
		return
	}
	flows := flow.New(req.Flows, 0)
	resolved, _ := lim.Resolve()
	// The session outlives the server's write timeout.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(resolved.Wall() + research.FinalTurnTimeout + 30*time.Second))

	var mu sync.Mutex
	rotated := map[string]string{}
	reqID := middleware.GetReqID(r.Context())
	exec := func(ctx context.Context, service, op string, args json.RawMessage) research.Result {
		h := held[service]
		if h == nil { // the palette holds granted services only
			return research.Result{Err: &research.ToolError{Code: string(CodeServiceMismatch), Message: "no grant for " + service}}
		}
		step := &reqInfo{}
		start := time.Now()
		// Before anything else: a value another service returned in this
		// session does not go to this one.
		if bad, _ := flows.Check(service, args); bad != nil {
			s.log.Warn().Str("event", "research_step").Str("request_id", reqID).Str("service", service).Str("op", op).
				Str("outcome", api.CodeCrossServiceFlow).Str("flow_source", bad.Source.String()).Str("flow_arg", bad.Arg).
				Float64("duration_ms", float64(time.Since(start).Microseconds())/1000).Msg("research step")
			svc, o := s.labels(service, op)
			s.m.researchSteps.WithLabelValues(svc, o, api.CodeCrossServiceFlow).Inc()
			s.FlowRefused("research", bad.Source.Service, service)
			s.auditRefusal(ctx, sourceResearch, h, service, op, args, api.CodeCrossServiceFlow)
			return research.Result{Err: &research.ToolError{Code: api.CodeCrossServiceFlow, Message: fmt.Sprintf(
				"not run: arg %s carries a value that %s returned in this session, and what one service returns does not go to another; answer from what each service says", bad.Arg, bad.Source)}}
		}
		res, rot, _, e := s.enforceOp(ctx, sourceResearch, step, &OpRequest{Service: service, Op: op, Args: args}, h)
		if e != nil && e.Rotated != "" {
			rot = e.Rotated
		}
		// A provider echoing a credential: the host withheld the result
		// (api.CodeCredentialEcho), so it never reaches the model.
		echo := e != nil && e.Code == CodeCredentialEcho
		// What reaches the model is recorded first; what cannot be recorded
		// does not reach it.
		full := false
		if e == nil {
			m, _ := s.reg.Service(service)
			o, _ := m.Op(op)
			full = flows.Record(service, op, o.Pick, res.Data) != nil
		}
		if rot != "" {
			mu.Lock()
			rotated[service] = rot
			mu.Unlock()
		}
		outcome := "ok"
		if e != nil {
			outcome = string(e.Code)
		}
		ev := s.log.Info()
		if e != nil && e.Code == CodeInternal {
			ev = s.log.Error()
		}
		if echo {
			ev = s.log.Warn()
		}
		if full {
			outcome, ev = api.CodeFlowLimit, s.log.Warn()
		}
		ev = ev.Str("event", "research_step").Str("request_id", reqID).Str("service", step.service).Str("op", step.op).
			Str("outcome", outcome).Str("grant_id", step.grantID).
			Float64("duration_ms", float64(time.Since(start).Microseconds())/1000)
		if step.upstreamStatus != 0 {
			ev = ev.Int("upstream_status", step.upstreamStatus)
		}
		if step.rotation != "" {
			ev = ev.Str("rotation", step.rotation)
		}
		if step.deny != "" {
			ev = ev.Str("deny", step.deny)
		}
		if e != nil && e.cause != nil {
			ev = ev.Str("cause", clip(e.cause.Error(), 512))
		}
		ev.Msg("research step")
		svc, o := s.labels(service, op)
		s.m.researchSteps.WithLabelValues(svc, o, outcome).Inc()
		if full {
			return research.Result{Err: &research.ToolError{Code: api.CodeFlowLimit,
				Message: "the session has read more than it can keep track of; the result was withheld: answer from the results so far"}}
		}
		if e != nil {
			if e.Code == CodeUpstreamError && e.UpstreamStatus == 0 {
				e.UpstreamStatus = step.upstreamStatus
			}
			return research.Result{Err: &research.ToolError{Code: string(e.Code), Message: e.Message, UpstreamStatus: e.UpstreamStatus}}
		}
		return research.Result{Status: res.Status, Data: nullIfEmpty(res.Data), Next: res.Next}
	}

	stream := wantsEventStream(r)
	var sse *sseWriter
	cfg := research.Config{Question: q, Palette: palette, Model: s.cfg.Model, Exec: exec, Limits: lim}
	info.service = clip(strings.Join(services, ","), 64)
	if stream {
		sse = newSSE(w)
		cfg.OnStep = func(st api.Step) { sse.event("step", st) }
	}
	ans, err := research.Run(r.Context(), cfg)
	mu.Lock()
	rot := maps(rotated)
	mu.Unlock()
	if err != nil {
		var me *research.ModelError
		switch {
		case errors.As(err, &me):
			e = newError(CodeModelError, "the model API failed; the sidecar log has the cause").withCause(err)
		case r.Context().Err() != nil:
			e = newError(CodeCanceled, "the caller went away").withCause(err)
		default:
			e = newError(CodeInternal, "the research session failed").withCause(err)
		}
		if stream {
			s.m.research.WithLabelValues(string(e.Code)).Inc()
			info.outcome = string(e.Code)
			if e.cause != nil {
				info.cause = e.cause.Error()
			}
			var b map[string]any
			_ = json.Unmarshal(e.body(httperr.RequestID(w)), &b)
			if len(rot) > 0 {
				b["rotated"] = rot
			}
			sse.event("error", b)
			return
		}
		s.researchFail(w, r, e, rot)
		return
	}
	s.m.research.WithLabelValues(ans.Stop).Inc()
	info.outcome = "ok"
	resp := ResearchResponse{Answer: ans.Answer, Stop: ans.Stop, Steps: ans.Steps, Turns: ans.Turns, ResultBytes: ans.ResultBytes, Rotated: rot}
	if stream {
		sse.event("answer", resp)
		return
	}
	out, err := json.Marshal(resp)
	if err != nil {
		s.researchFail(w, r, newError(CodeInternal, "the answer could not be encoded").withCause(err), rot)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func maps(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// openResearchGrants opens and checks every grant of a session, checks
// that the grants of both services of each of flows seal it (the flows
// are the member's consent, not the bot's word), then records their
// nonces (all or none).
func (s *Server) openResearchGrants(ctx context.Context, info *reqInfo, sealed []string, flows []api.Flow) (map[string]*heldGrant, []string, *Error) {
	now := s.cfg.now()
	held := map[string]*heldGrant{}
	var services []string
	var ids []string
	for i, sg := range sealed {
		g, err := grant.Open(sg, s.key)
		if err != nil {
			return nil, nil, newError(CodeGrantInvalid, fmt.Sprintf("grant %d cannot be opened by this bot", i+1)).withCause(err)
		}
		ids = append(ids, grantID(g))
		ttl := s.cfg.researchGrantTTL()
		if g.IsStanding() {
			ttl = min(ttl, s.cfg.standingGrantTTL())
		}
		switch err := g.CheckTime(now, ttl); err {
		case nil:
		case grant.ErrExpired:
			return nil, nil, newError(CodeGrantExpired, fmt.Sprintf("grant %d (%s) has expired; ask the member for a new one", i+1, g.Service)).withCause(err)
		default:
			return nil, nil, newError(CodeGrantInvalid, fmt.Sprintf("grant %d (%s) expires more than %s from now; research grants must be short-lived", i+1, g.Service, ttl)).withCause(err)
		}
		if !s.reg.Has(g.Service) {
			return nil, nil, newError(CodeUnknownService, fmt.Sprintf("grant %d is for service %q, which is not in the registry", i+1, clip(g.Service, 64)))
		}
		if held[g.Service] != nil {
			return nil, nil, newError(CodeBadRequest, fmt.Sprintf("two grants for %s: send one grant per service", g.Service))
		}
		if g.Access == grant.AccessWrite {
			return nil, nil, newError(CodeAccessDenied, fmt.Sprintf("grant %d (%s) is a write grant; research runs under read grants only", i+1, g.Service))
		}
		if g.Op != "" {
			return nil, nil, newError(CodeGrantMismatch, fmt.Sprintf("grant %d (%s) is bound to op %q; a research grant must not be bound to an op", i+1, g.Service, g.Op))
		}
		held[g.Service] = &heldGrant{g: g}
		services = append(services, g.Service)
	}
	info.grantID = strings.Join(ids, ",")
	for i, f := range flows {
		for _, svc := range []string{f.From, f.To} {
			if h := held[svc]; h == nil || !h.g.SealsFlow(f.From, f.To) {
				return nil, nil, newError(CodeGrantMismatch, fmt.Sprintf(
					"flow %d (%s to %s) is not sealed in the %s grant: a research session allows only the flows the member's consent showed, sealed in the grants of both services (grant flows)", i+1, f.From, f.To, svc))
			}
		}
	}
	var recorded []*api.Nonce
	for _, svc := range services {
		if g := held[svc].g; g.IsStanding() {
			// Not recorded: checked again on every tool call (enforceGrantAndRun).
			if e := s.useStanding(ctx, g); e != nil {
				for _, r := range recorded {
					s.forget(ctx, r)
				}
				return nil, nil, e
			}
			continue
		}
		rec, e := s.record(ctx, held[svc].g)
		if e != nil {
			for _, r := range recorded {
				s.forget(ctx, r) // nothing ran: the grants recorded so far are not spent
			}
			if e.Code == CodeGrantReplayed {
				e.Message = fmt.Sprintf("the %s grant was already used; a grant runs once", svc)
			}
			return nil, nil, e
		}
		recorded = append(recorded, rec)
	}
	return held, services, nil
}

func wantsEventStream(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/event-stream" {
			return true
		}
	}
	return false
}

// sseWriter writes server-sent events (https://html.spec.whatwg.org/multipage/server-sent-events.html):
// one "step" per tool call, then "answer" or "error".
type sseWriter struct {
	mu sync.Mutex
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
}

// event writes one event; data is JSON on one line (encoding/json writes
// no raw newline).
func (s *sseWriter) event(name string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"error":{"code":"internal","message":"the event could not be encoded"}}`)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b)
	_ = s.rc.Flush()
}

// checkFlows refuses a research request's or consent's flows that are
// malformed (flow.CheckAllows) or, when services is not nil, name a
// service the session does not read.
func (s *Server) checkFlows(flows []api.Flow, services []string) *Error {
	if err := flow.CheckAllows(s.reg, flows); err != nil {
		return newError(CodeBadRequest, "flows: "+err.Error())
	}
	if services == nil {
		return nil
	}
	for i, f := range flows {
		if !slices.Contains(services, f.From) || !slices.Contains(services, f.To) {
			return newError(CodeBadRequest, fmt.Sprintf("flow %d (%s to %s) names a service the session does not read (services: %s)", i+1, f.From, f.To, strings.Join(services, ", ")))
		}
	}
	return nil
}

// researchConsent is the answer of POST /v1/consent for a research
// session.
type researchConsent struct {
	Services []string `json:"services"`
	Access   string   `json:"access"`
	Confirm  string   `json:"confirm"`
	// Flows are the cross-service flows the consent allows (the request's),
	// which Confirm names.
	Flows []api.Flow `json:"flows,omitempty"`
	// Ops are the palette: every read op the session may call.
	Ops []string `json:"ops"`
	// GrantTTLSeconds is the life to seal each grant with (10 minutes);
	// the sidecar refuses more than ResearchGrantTTL.
	GrantTTLSeconds int `json:"grant_ttl_seconds"`
}

func (s *Server) researchConsent(req *ConsentRequest) (*researchConsent, *Error) {
	if req.Service != "" || req.Op != "" || len(req.Args) > 0 {
		return nil, newError(CodeBadRequest, "send either services (a research consent) or service and op, not both")
	}
	if len(req.Services) == 0 || len(req.Services) > MaxResearchGrants {
		return nil, newError(CodeBadRequest, fmt.Sprintf("services must name 1 to %d services", MaxResearchGrants))
	}
	seen := map[string]bool{}
	for _, id := range req.Services {
		if !s.reg.Has(id) {
			return nil, newError(CodeUnknownService, fmt.Sprintf("unknown service %q", clip(id, 64)))
		}
		if seen[id] {
			return nil, newError(CodeBadRequest, fmt.Sprintf("service %s is listed twice", id))
		}
		seen[id] = true
	}
	if len(req.Question) > research.MaxQuestionBytes {
		return nil, newError(CodeBadRequest, fmt.Sprintf("the question must be at most %d bytes", research.MaxQuestionBytes))
	}
	if e := s.checkFlows(req.Flows, req.Services); e != nil {
		return nil, e
	}
	sentence, ops, err := research.Consent(s.reg, req.Services, req.Question, SuggestedResearchGrantTTL, req.Flows)
	if err != nil {
		return nil, newError(CodeInternal, "the consent could not be rendered").withCause(err)
	}
	svcs, _ := research.NewPalette(s.reg, req.Services)
	return &researchConsent{Services: svcs.Services(), Access: grant.AccessRead, Confirm: sentence, Flows: req.Flows, Ops: ops,
		GrantTTLSeconds: int(SuggestedResearchGrantTTL / time.Second)}, nil
}
