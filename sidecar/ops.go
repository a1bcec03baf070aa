package sidecar

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/elevenmessenger/pinned/internal/tracing"
	"net/http"
	"strings"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/elevenmessenger/pinned/secret"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/jsonenc"
	"github.com/elevenmessenger/pinned/internal/jsonv"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// OpRequest is the body of POST /v1/ops.
type OpRequest struct {
	// Service is the manifest id ("github") and Op the op's name
	// ("create_issue"), as GET /v1/registry lists them.
	Service string `json:"service"`
	Op      string `json:"op"`
	// Args are the op's args, a JSON object (absent means {}); the host
	// checks them against the op's declarations.
	Args json.RawMessage `json:"args,omitempty"`
	// Grant is the sealed grant (standard padded base64, package
	// sidecar/grant) for Service; it runs once.
	Grant string `json:"grant"`
	// Pages, for an op that pages, asks the host to follow next for up
	// to this many pages (1 to the op's paginate.max_pages) under the
	// one grant, merged into one list. Absent or 0 reads one page.
	Pages int `json:"pages,omitempty"`
	// ManifestSHA256, when set, is the hex SHA-256 of the manifest the
	// caller built the request against (GET /v1/registry's
	// manifest_sha256); another value than this sidecar's answers
	// manifest_drift and runs nothing.
	ManifestSHA256 string `json:"manifest_sha256,omitempty"`
}

// OpResponse is the answer of a successful POST /v1/ops.
type OpResponse struct {
	// Status is the provider's HTTP status (2xx).
	Status int `json:"status"`
	// Data is the response projected by the op's pick.
	Data json.RawMessage `json:"data"`
	// Rotated, when the op rotated the grant's token pair, is the fresh
	// pair sealed to the grant's member_key (grant.SealRotated; open it
	// with grant.OpenRotated and the member's private key).
	Rotated string `json:"rotated,omitempty"`
	// Next, for an op that pages, is the args of the next page (plain
	// values of the op's declared args); absent on the last page.
	Next json.RawMessage `json:"next,omitempty"`
	// Pages is how many pages data holds, when the request asked for
	// pages.
	Pages int `json:"pages,omitempty"`
	// Stopped says why paging ended (docs/API.md, "Pages"); StopMessage
	// explains it.
	Stopped     string `json:"stopped,omitempty"`
	StopMessage string `json:"stop_message,omitempty"`
	// Receipt, when the sidecar keeps an audit trail, names the op's
	// audit record: its replica's chain, its seq there and its SHA-256
	// (docs/OPERATING.md, "Audit and evidence").
	Receipt *api.Receipt `json:"receipt,omitempty"`
}

// ConsentRequest is the body of POST /v1/consent: service, op and args
// for an op's consent, or services (and optionally question) for a
// research session's.
type ConsentRequest struct {
	// Service, Op and Args name an op and its args, as in OpRequest.
	Service string          `json:"service"`
	Op      string          `json:"op"`
	Args    json.RawMessage `json:"args,omitempty"`

	// Services are the manifest ids a research session would read, and
	// Question its question (docs/API.md, "Research consent"); used
	// instead of Service, Op and Args.
	Services []string `json:"services,omitempty"`
	Question string   `json:"question,omitempty"`
	// Flows are the cross-service flows the research consent allows
	// ({"from": "dnsimple", "to": "github"}), named in its sentence; the
	// bot sends the same flows with POST /v1/research.
	Flows []api.Flow `json:"flows,omitempty"`
}

// ConsentResponse is the answer of POST /v1/consent.
type ConsentResponse struct {
	// Service and Op are the request's.
	Service string `json:"service"`
	Op      string `json:"op"`
	// Access is "read" or "write".
	Access string `json:"access"`
	// Confirm is the write op's confirm line: its target first, quoted,
	// then the manifest's sentence with the args filled in (defaults
	// applied); "" for a read op.
	Confirm string `json:"confirm"`
	// Target is the write's target args and values, as Confirm shows them
	// first (absent for a read op).
	Target []host.Shown `json:"target,omitempty"`
	// Sends is every other arg value the request will carry that Confirm
	// does not show whole, labelled by arg name, each value whole
	// (never cut; invisible code points as visible escapes such as
	// ⟨U+200B⟩). A consent shows Confirm and every Sends value: nothing
	// else is sent. Absent when Confirm shows everything.
	Sends []host.Shown `json:"sends,omitempty"`
	// Text is the whole consent as text (Confirm, then "Also sent:" and
	// one "- arg: value" entry per Sends value; host.ConsentText).
	Text string `json:"text,omitempty"`
	// ArgsSHA256 is the value of a grant's args_sha256 that binds exactly
	// these args (grant.ArgsSHA256).
	ArgsSHA256 string `json:"args_sha256"`
	// ManifestSHA256 is the hex SHA-256 of this sidecar's manifest of
	// Service: the value of a grant's manifest_sha256 that refuses to run
	// under other manifest bytes.
	ManifestSHA256 string `json:"manifest_sha256,omitempty"`
}

// decode parses a request body strictly: one JSON object (no duplicate
// keys, valid UTF-8, nothing after it) whose members are all known.
func decode(body []byte, v any) *Error {
	if _, err := jsonv.Parse(body); err != nil {
		return newError(CodeBadRequest, "the body is not one strict JSON object (unique keys, valid UTF-8)")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg := "the body is not the endpoint's JSON object"
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			msg = "unknown member " + clip(f, 64) + " in the body"
		}
		return newError(CodeBadRequest, msg)
	}
	return nil
}

// argsOrEmpty treats absent and null args as the empty object.
func argsOrEmpty(a json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(a); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return json.RawMessage("{}")
	}
	return a
}

// lookup finds the op in the registry, with the host's codes.
func (s *Server) lookup(info *reqInfo, service, opName string) (*registry.Op, *Error) {
	info.service, info.op = clip(service, 64), clip(opName, 64)
	m, ok := s.services[service]
	if !ok {
		return nil, newError(CodeUnknownService, fmt.Sprintf("unknown service %q (services: %s)", clip(service, 64), strings.Join(s.reg.IDs(), ", ")))
	}
	op, ok := m.Op(opName)
	if !ok {
		return nil, newError(CodeUnknownOp, fmt.Sprintf("service %s has no op %q (ops: %s)", service, clip(opName, 64), strings.Join(m.OpNames(), ", ")))
	}
	info.access = op.Access
	return op, nil
}

// labels returns the metric labels of a request: registry names only.
func (s *Server) labels(service, op string) (string, string) {
	m, ok := s.services[service]
	if !ok {
		return unknownLabel, unknownLabel
	}
	if _, ok := m.Op(op); !ok {
		return service, unknownLabel
	}
	return service, op
}

func (s *Server) handleOps(w http.ResponseWriter, r *http.Request) {
	var req OpRequest
	res, rotated, rc, e := s.serveOp(w, r, &req)
	svc, op := s.labels(req.Service, req.Op)
	outcome := "ok"
	if e != nil {
		outcome = string(e.Code)
	}
	s.m.ops.WithLabelValues(svc, op, outcome).Inc()
	if e != nil {
		s.fail(w, r, e)
		return
	}
	infoFrom(r).outcome = "ok"
	body, err := jsonenc.Marshal(OpResponse{Status: res.Status, Data: nullIfEmpty(res.Data), Rotated: rotated,
		Next: res.Next, Pages: res.Pages, Stopped: string(res.Stopped), StopMessage: res.StopMessage, Receipt: rc})
	if err != nil {
		e := newError(CodeInternal, "the result could not be encoded").withCause(err)
		e.Rotated = rotated
		s.fail(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

func nullIfEmpty(d json.RawMessage) json.RawMessage {
	if len(d) == 0 {
		return json.RawMessage("null")
	}
	return d
}

// serveOp enforces the grant and runs the op. Every refusal happens before
// the engine is called; the nonce is recorded only after every other check
// passed. A grant carrying a refresh token may rotate its pair (see
// rotation.go); the fresh pair, sealed to the member key, is returned as
// rotated, or on the error when the op failed after rotating.
func (s *Server) serveOp(w http.ResponseWriter, r *http.Request, req *OpRequest) (*host.Result, string, *api.Receipt, *Error) {
	body, e := s.readBody(w, r)
	if e != nil {
		return nil, "", nil, e
	}
	if e := decode(body, req); e != nil {
		return nil, "", nil, e
	}
	return s.enforceOp(tracing.Extract(r.Context(), s.cfg.Tracer, r.Header), sourceOps, infoFrom(r), req, nil)
}

// enforceGrantAndRun is enforceOp (audit.go) without the audit record:
// the one enforcement path (cap → grant → sandbox → pick) of POST
// /v1/ops, RunOp and each tool call of a research session.
//
// held is nil for a call under its own sealed grant (req.Grant). For a
// research session's tool call it is the session's grant for the service,
// opened and its nonce recorded once when the session started: every
// other check runs again on every call, the nonce is neither recorded
// again nor ever forgotten (rec stays nil: the session spent the grant),
// and a rotated pair replaces the held one so the next call runs with it.
func (s *Server) enforceGrantAndRun(ctx context.Context, info *reqInfo, req *OpRequest, held *heldGrant) (*host.Result, string, *Error) {
	if req.Service == "" || req.Op == "" || (req.Grant == "" && held == nil) {
		return nil, "", newError(CodeBadRequest, "service, op and grant are required")
	}
	op, e := s.lookup(info, req.Service, req.Op)
	if e != nil {
		return nil, "", e
	}
	if e := s.checkDrift(req.Service, "the request", req.ManifestSHA256); e != nil {
		return nil, "", e
	}
	release, e := s.acquire()
	if e != nil {
		return nil, "", e
	}
	defer release()

	_, gspan := tracing.Start(ctx, tracing.SpanGrantOpen)
	g, args, e := s.checkGrant(info, req, op, held)
	if e == nil {
		e = s.checkDrift(req.Service, "the grant", g.ManifestSHA256)
	}
	endSpan(gspan, e)
	var rec *api.Nonce
	var backedOff *time.Time // read with the record, in one round trip
	switch {
	case e != nil:
	case g.IsStanding():
		// A standing grant runs many times: its series is checked (and
		// bound to its scope) on every op, held by a research session or not.
		_, sspan := tracing.Start(ctx, tracing.SpanState)
		sspan.Str(tracing.KeyStateCall, "use_standing")
		e = s.useStanding(ctx, g)
		endSpan(sspan, e)
	case held == nil:
		_, sspan := tracing.Start(ctx, tracing.SpanState)
		sspan.Str(tracing.KeyStateCall, "record_nonce")
		rec, backedOff, e = s.recordChecked(ctx, req.Service, g)
		endSpan(sspan, e)
	}
	if e == nil {
		_, sspan := tracing.Start(ctx, tracing.SpanState)
		sspan.Str(tracing.KeyStateCall, "check_limits")
		e = s.checkLimits(ctx, info, req.Service, g, backedOff)
		endSpan(sspan, e)
		if e != nil {
			s.forget(ctx, rec) // refused before anything was sent: the grant is not spent
		}
	}
	if e != nil {
		if e.Code != CodeBusy && e.Code != CodeUnavailable && e.Code != CodeRateLimited {
			s.m.denials.WithLabelValues("grant", string(e.Code)).Inc()
		}
		return nil, "", e
	}

	cred := host.Credential{Kind: g.Kind, Secret: g.Secret, User: g.User, Tenant: g.Tenant}
	rot := s.rotationFor(req.Service, g)
	if rot != nil {
		if e := rot.before(ctx, info); e != nil {
			// Nothing reached the provider's API: the grant is not spent.
			s.forget(ctx, rec)
			return nil, "", e
		}
		cred = rot.credential()
		cred.Tenant = g.Tenant // the connection's host, whichever token
	}
	// Every secret of the grant (and of the pairs a research session's
	// rotations replaced) is withheld like the credential if an answer
	// echoes it (host.Call.Withhold).
	withhold := []secret.Secret{g.Secret, g.Refresh}
	if held != nil {
		for _, past := range held.all() {
			withhold = append(withhold, past.Secret, past.Refresh)
		}
	}
	res, err := s.run(ctx, info, req, args, cred, withhold)
	if he := hostError(err); rot != nil && unauthorized401(he) {
		retry, re := rot.unauthorized(ctx, info, he)
		if re != nil {
			// The provider answered 401: it did nothing, so the grant is
			// not spent.
			s.forget(ctx, rec)
			return nil, "", re
		}
		if retry {
			res, err = s.run(ctx, info, req, args, rot.credential(), append(withhold, rot.pair.Refresh))
		}
	}
	s.backOff(ctx, req.Service, g, err)
	if held != nil && rot != nil && rot.rotated {
		held.rotated(rot.pair)
	}
	rotated, se := rot.seal()
	if se != nil {
		return nil, "", se
	}
	if err != nil {
		if he := hostError(err); he != nil && Code(he.Code) == CodeBadArgs {
			// Nothing left the sandbox: the grant is not spent, so the bot
			// can correct the args and retry with it.
			s.forget(ctx, rec)
		}
		e := opError(err, "the op failed")
		// The fresh pair goes back even when the op failed: the provider
		// has already retired the old refresh token.
		e.Rotated = rotated
		return nil, "", e
	}
	info.upstreamStatus = res.Status
	if g.Resources != "" {
		data, fe := filterList(s.services[req.Service], req.Op, g, res.Data)
		if fe != nil {
			fe.Rotated = rotated
			return nil, "", fe
		}
		res.Data = data
	}
	s.spendBytes(ctx, g, len(res.Data))
	return res, rotated, nil
}

// grantID is what logs say of a grant: a digest of its nonce, or of a
// standing grant's series (one id across its renewals, so its rate and
// budget span them).
func grantID(g *grant.Grant) string {
	id := g.Nonce
	if g.IsStanding() {
		id = "standing\x00" + g.Standing
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:8])
}

// run runs the op once in the engine, timing it and counting an egress
// denial. The error is the engine's: a *host.Error for a failed op.
func (s *Server) run(ctx context.Context, info *reqInfo, req *OpRequest, args json.RawMessage, cred host.Credential, withhold []secret.Secret) (*host.Result, error) {
	start := time.Now()
	res, err := s.eng.Run(ctx, host.Call{Service: req.Service, Op: req.Op, Args: args, Credential: cred, Pages: req.Pages, Withhold: withhold})
	s.m.duration.WithLabelValues(req.Service, req.Op).Observe(time.Since(start).Seconds())
	s.denied(info, err)
	if res != nil {
		info.target = res.Target
	} else if he := hostError(err); he != nil {
		info.target = he.Target
	}
	return res, err
}

// denied records an egress denial of the engine's error, if it is one.
func (s *Server) denied(info *reqInfo, err error) {
	if he := hostError(err); he != nil && he.Deny != "" {
		info.deny = string(he.Deny)
		s.m.denials.WithLabelValues("egress", string(he.Deny)).Inc()
	}
}

// hostError is err's op failure, or nil when err is not one.
func hostError(err error) *host.Error {
	var he *host.Error
	if errors.As(err, &he) {
		return he
	}
	return nil
}

// checkGrant opens the grant and checks it against the call, in order:
// grant_invalid, grant_expired (and grant_invalid for an expiry too far
// ahead), service_mismatch, access_denied, grant_mismatch,
// resource_denied (a grant limited to chosen resources, checkResources). The last check,
// grant_replayed, is record's: the nonce is recorded only when everything
// else passed. It returns the args to run: the request's (empty is {}),
// or, when the grant binds them, their canonical form, the exact bytes
// whose hash the member confirmed. held is a research session's grant
// (enforceOp).
func (s *Server) checkGrant(info *reqInfo, req *OpRequest, op *registry.Op, held *heldGrant) (*grant.Grant, json.RawMessage, *Error) {
	var g *grant.Grant
	if held != nil {
		g = held.get() // opened, and its nonce recorded, when the session started
	} else {
		var err error
		if g, err = grant.Open(req.Grant, s.key); err != nil {
			return nil, nil, newError(CodeGrantInvalid, "the grant cannot be opened by this bot").withCause(err)
		}
	}
	info.grantID = grantID(g)
	now := s.cfg.now()
	maxTTL := s.cfg.maxGrantTTL()
	what := "grants"
	if held != nil {
		maxTTL = s.cfg.researchGrantTTL()
	}
	if g.IsStanding() {
		maxTTL, what = min(maxTTL, s.cfg.standingGrantTTL()), "standing grants"
	}
	switch err := g.CheckTime(now, maxTTL); err {
	case nil:
	case grant.ErrExpired:
		return nil, nil, newError(CodeGrantExpired, "the grant has expired; ask the member for a new one").withCause(err)
	default:
		return nil, nil, newError(CodeGrantInvalid, fmt.Sprintf("the grant expires more than %s from now; %s must be short-lived", maxTTL, what)).withCause(err)
	}
	if g.Service != req.Service {
		return nil, nil, newError(CodeServiceMismatch, fmt.Sprintf("the grant is for service %q, not %q", g.Service, req.Service))
	}
	if !g.Allows(op.Access) {
		what := "a read-only grant"
		if g.Access == grant.AccessLegacy {
			what = "a grant without access (legacy, read-only)"
		}
		return nil, nil, newError(CodeAccessDenied, fmt.Sprintf("%s.%s is a %s op; %s cannot run it", req.Service, req.Op, op.Access, what))
	}
	if err := g.CheckBinding(req.Op, ""); err == grant.ErrOpMismatch {
		return nil, nil, newError(CodeGrantMismatch, fmt.Sprintf("the grant is bound to op %q", g.Op)).withCause(err)
	}
	args := argsOrEmpty(req.Args)
	if g.BindsArgs() {
		canon, hash, err := grant.CanonicalArgsSHA256(args)
		if err != nil {
			return nil, nil, newError(CodeGrantMismatch, "the args are not a strict JSON object, so they cannot match the args the grant is bound to").withCause(err)
		}
		if err := g.CheckBinding(req.Op, hash); err != nil {
			return nil, nil, newError(CodeGrantMismatch, "the args differ from the args the member confirmed (args_sha256)").withCause(err)
		}
		args = canon // run exactly the bytes whose hash the member confirmed
	}
	if e := checkResources(s.services[req.Service], req.Op, op, g, args); e != nil {
		return nil, nil, e
	}
	return g, args, nil
}

// record records the grant's nonce in the state store, the last check
// (grant_replayed). Its receipt lets the op forget the record again (a
// refusal that did not spend the grant). A store that does not answer
// refuses the op (unavailable): a grant whose use cannot be recorded does
// not run.
func (s *Server) record(ctx context.Context, g *grant.Grant) (*api.Nonce, *Error) {
	return s.recorded(s.store.RecordNonce(ctx, g.Nonce, g.ExpiresAt.Add(grant.ClockSkew), s.cfg.now()))
}

// recorded maps a store's answer to recording a grant's nonce.
func (s *Server) recorded(rec api.Nonce, err error) (*api.Nonce, *Error) {
	switch {
	case err == nil:
		return &rec, nil
	case errors.Is(err, api.ErrReplayed):
		return nil, newError(CodeGrantReplayed, "the grant was already used; a grant runs once").withCause(err)
	case errors.Is(err, api.ErrFull):
		return nil, s.busy("too many live grants are remembered; retry shortly").withCause(err)
	}
	return nil, s.unavailable("the shared state store (Redis) did not answer, so the grant's use cannot be recorded; retry shortly (the grant is not spent)").withCause(err)
}

// recordChecked is record and, with a store that can (s.gate), the
// credential's back-off read in the same round trip; backedOff is nil
// when it was not read. A back-off it cannot read refuses the op
// (unavailable) as checkLimits does, the record forgotten.
func (s *Server) recordChecked(ctx context.Context, service string, g *grant.Grant) (rec *api.Nonce, backedOff *time.Time, e *Error) {
	if s.gate == nil {
		rec, e = s.record(ctx, g)
		return rec, nil, e
	}
	start := time.Now()
	n, until, err := s.gate.RecordNonceBackedOff(ctx, g.Nonce, g.ExpiresAt.Add(grant.ClockSkew), s.cfg.now(), credKey(service, g))
	instrumented{m: s.m}.observe("record", start, err)
	if err != nil && n.Key != "" {
		s.forget(ctx, &n)
		return nil, nil, s.unavailable("the shared state store (Redis) did not answer, so the op's limits cannot be checked; retry shortly (the grant is not spent)").withCause(err)
	}
	if rec, e = s.recorded(n, err); e != nil {
		return nil, nil, e
	}
	return rec, &until, nil
}

func (s *Server) handleConsent(w http.ResponseWriter, r *http.Request) {
	var req ConsentRequest
	res, e := s.serveConsent(w, r, &req)
	svc, op := s.labels(req.Service, req.Op)
	outcome := "ok"
	if e != nil {
		outcome = string(e.Code)
	}
	s.m.consent.WithLabelValues(svc, op, outcome).Inc()
	s.reply(w, r, res, e)
}

// reply writes e, or res as JSON with 200 and the access log's outcome
// "ok".
func (s *Server) reply(w http.ResponseWriter, r *http.Request, res any, e *Error) {
	if e != nil {
		s.fail(w, r, e)
		return
	}
	infoFrom(r).outcome = "ok"
	body, _ := jsonenc.Marshal(res)
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) serveConsent(w http.ResponseWriter, r *http.Request, req *ConsentRequest) (any, *Error) {
	body, e := s.readBody(w, r)
	if e != nil {
		return nil, e
	}
	if e := decode(body, req); e != nil {
		return nil, e
	}
	if req.Services != nil {
		return s.researchConsent(req)
	}
	return s.checkConsent(r.Context(), infoFrom(r), req)
}

// checkConsent is serveConsent after the body is decoded (POST /v1/consent
// and CheckOp).
func (s *Server) checkConsent(ctx context.Context, info *reqInfo, req *ConsentRequest) (*ConsentResponse, *Error) {
	if req.Service == "" || req.Op == "" {
		return nil, newError(CodeBadRequest, "service and op are required")
	}
	if len(req.Flows) > 0 {
		return nil, newError(CodeBadRequest, "flows belong to a research consent (services), not an op's")
	}
	if _, e := s.lookup(info, req.Service, req.Op); e != nil {
		return nil, e
	}
	release, e := s.acquire()
	if e != nil {
		return nil, e
	}
	defer release()
	args := argsOrEmpty(req.Args)
	c, err := s.eng.Check(ctx, req.Service, req.Op, args)
	if err != nil {
		s.denied(info, err)
		return nil, opError(err, "the check failed")
	}
	hash, err := grant.ArgsSHA256(args)
	if err != nil {
		// The sandbox accepted args canonicalization refuses: the two
		// parsers disagree, which is a bug.
		return nil, newError(CodeInternal, "the args could not be canonicalized").withCause(err)
	}
	res := &ConsentResponse{Service: c.Service, Op: c.Op, Access: c.Access, Confirm: c.Confirm, Target: c.Target, Sends: c.Sends, ArgsSHA256: hash, ManifestSHA256: s.reg.ManifestSHA256(c.Service)}
	if c.Confirm != "" {
		res.Text = c.Text()
	}
	return res, nil
}

func (s *Server) handleTools(w http.ResponseWriter, r *http.Request) {
	d, err := s.docs()
	if err != nil {
		s.fail(w, r, newError(CodeInternal, "the tool descriptions could not be encoded").withCause(err))
		return
	}
	switch f := r.URL.Query().Get("format"); f {
	case "", "anthropic":
		writeJSON(w, http.StatusOK, d.toolsAnthropic)
	case "mcp":
		writeJSON(w, http.StatusOK, d.toolsMCP)
	default:
		s.fail(w, r, newError(CodeBadRequest, fmt.Sprintf("unknown format %q: use anthropic or mcp", clip(f, 32))))
	}
}

func (s *Server) handleRegistry(w http.ResponseWriter, r *http.Request) {
	d, err := s.docs()
	if err != nil {
		s.fail(w, r, newError(CodeInternal, "the registry document could not be encoded").withCause(err))
		return
	}
	writeJSON(w, http.StatusOK, d.registryJSON)
}

// Identity is the answer of GET /v1/identity: who a member seals grants to.
type Identity struct {
	// PublicKey is the bot's X25519 public key, standard padded base64 (44
	// characters), as grant.PublicKey.String writes it.
	PublicKey string `json:"public_key"`
	// Registry is the digest of the embedded registry ("sha256:…"), the
	// snapshot this sidecar executes.
	Registry string `json:"registry"`
}

func (s *Server) handleIdentity(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.identityJSON)
}

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if e := s.readyErr(r.Context()); e != nil {
		s.fail(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, []byte(`{"status":"ready"}`))
}
