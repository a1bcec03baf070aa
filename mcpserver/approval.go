package mcpserver

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elevenmessenger/pinned/sidecar"
)

// Approval links: a write confirmed on a page this server serves, for a
// client that can show a URL but not a form (MCP elicitation in URL
// mode; docs/MCP.md, "Approval links").
//
// The first round of the call answers with a URL-mode elicitation: a
// link /approve/<id> and, as for a form, a sealed requestState that now
// names the link. The link's record (service, op, the canonical args,
// their hash, the principal, the expiry) is put in the approval store
// (Redis for replicas). The page shows the consent — the confirm line
// and every value sent, whole — and records the person's decision once,
// only with the owner secret and a form of its own (CSRF). The retry
// runs the op only when the decision is "approve" for exactly the args
// sealed in the requestState; the client's own "accept" only says the
// person opened the link.

// ApprovalStore holds approval links and the person's decisions:
// internal/state's Memory or Redis. PutValue stores a value for ttl
// unless one is there (stored false: the first decision wins); Value
// reads it. An error is a store that cannot answer: refused, fail
// closed.
type ApprovalStore interface {
	PutValue(ctx context.Context, key string, value []byte, ttl time.Duration) (stored bool, err error)
	Value(ctx context.Context, key string) (value []byte, ok bool, err error)
}

// DefaultApprovalWait is how long one retry of a URL-mode confirmation
// waits for the person's decision before it answers input_required again
// (2026-07-28; a legacy session waits until the confirmation expires).
const DefaultApprovalWait = 20 * time.Second

// approvalPoll is how often a waiting retry reads the decision.
const approvalPoll = 200 * time.Millisecond

// Keys in the approval store.
const (
	linkPrefix     = "mcp-link:"     // the link's record
	decisionPrefix = "mcp-decision:" // the person's decision: decisionApprove+args hash, or decisionDecline
)

const (
	decisionApprove = "approve "
	decisionDecline = "decline"
)

// approvalLink is a link's record.
type approvalLink struct {
	Service   string          `json:"svc"`
	Op        string          `json:"op"`
	Args      json.RawMessage `json:"args"` // canonical
	ArgsHash  string          `json:"args_sha256"`
	Principal string          `json:"sub"`
	Expires   int64           `json:"exp"` // Unix ms
}

// canForm reports whether the client can show a form elicitation (an
// empty elicitation capability means form, before 2025-11-25).
func canForm(c *mcp.ClientCapabilities) bool {
	return c != nil && c.Elicitation != nil && (c.Elicitation.Form != nil || c.Elicitation.URL == nil)
}

// canURL reports whether the client can show a URL elicitation.
func canURL(c *mcp.ClientCapabilities) bool {
	return c != nil && c.Elicitation != nil && c.Elicitation.URL != nil
}

// canConfirm reports whether a write can be confirmed with this client:
// by a form, or by an approval link when the server serves them.
func (s *Server) canConfirm(c *mcp.ClientCapabilities) bool {
	if s.cfg.ApprovalOnly {
		return canURL(c)
	}
	return canForm(c) || s.cfg.ApprovalURL != "" && canURL(c)
}

// newLinkID is a link's id: 16 random bytes, base64url.
func newLinkID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// linkURL is the page of link id.
func (s *Server) linkURL(id string) string { return s.cfg.ApprovalURL + "/approve/" + id }

// linkElicitation is the URL-mode elicitation of link id.
func (s *Server) linkElicitation(service, id string) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Mode:          "url",
		URL:           s.linkURL(id),
		ElicitationID: id,
		Message: "pinned runs this " + service + " write only after you approve it on its approval page, " +
			"which shows every value the call sends. Open the link, check, and approve or decline there; nothing is sent before.",
	}
}

// putLink records a link for a confirmation.
func (s *Server) putLink(ctx context.Context, id string, l *approvalLink) error {
	b, _ := json.Marshal(l) // strings and raw canonical JSON: cannot fail
	stored, err := s.approvals.PutValue(ctx, linkPrefix+id, b, time.Until(time.UnixMilli(l.Expires))+nonceSkew)
	if err == nil && !stored {
		err = errors.New("link id taken")
	}
	return err
}

// awaitDecision reads the person's decision on link id until one is
// there, for at most d (real time), or until ctx ends. decided is false
// when none came.
func (s *Server) awaitDecision(ctx context.Context, id string, d time.Duration) (decision string, decided bool, err error) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	t := time.NewTicker(approvalPoll)
	defer t.Stop()
	for {
		v, ok, err := s.approvals.Value(ctx, decisionPrefix+id)
		if err != nil {
			return "", false, err
		}
		if ok {
			return string(v), true, nil
		}
		select {
		case <-ctx.Done():
			return "", false, nil
		case <-deadline.C:
			return "", false, nil
		case <-t.C:
		}
	}
}

// The approval page.

// approvalCookie carries the browser's random CSRF secret; the form's
// hidden field is an HMAC of it and the link id under the server's key.
const approvalCookie = "pinned_approval"

// csrfToken is the form field of link id for the browser's cookie value.
func (s *Server) csrfToken(cookie, id string) string {
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte(cookie))
	m.Write([]byte{0})
	m.Write([]byte(id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

var approvalPage = template.Must(template.New("approve").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Approve a write — pinned</title></head>
<body><h1>{{.Title}}</h1>
{{if .Link}}<p>Your agent asks pinned to run <code>{{.Link.Op}}</code> on <code>{{.Service}}</code>. This is the whole request: nothing else is sent.</p>
<p><strong id="confirm">{{.Check.Confirm}}</strong></p>
{{if .Check.Target}}<h2>Target</h2><dl id="target">{{range .Check.Target}}<dt>{{.Arg}}</dt><dd><pre>{{.Value}}</pre></dd>{{end}}</dl>{{end}}
{{if .Check.Sends}}<h2>Also sent</h2><dl id="sends">{{range .Check.Sends}}<dt>{{.Arg}}</dt><dd><pre>{{.Value}}</pre></dd>{{end}}</dl>{{end}}
<p>The link expires at {{.Expires}} and approves this one call, once.</p>{{end}}
{{if .Error}}<p role="alert">{{.Error}}</p>{{end}}
{{if .Form}}<form method="post">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<label>Your pinned mcp token <input type="password" name="owner_secret" autocomplete="off" required></label>
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="decline" formnovalidate>Decline</button>
</form>{{end}}
</body></html>`))

// pageData is what approvalPage shows.
type pageData struct {
	Title, Service, Expires, CSRF, Error string
	Link                                 *approvalLink
	Check                                *sidecar.ConsentResponse
	Form                                 bool
}

// approvalHandler serves GET and POST /approve/<id>: the consent of a
// link, and the person's decision on it.
func (s *Server) approvalHandler() http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.approvalRender(w, http.StatusForbidden, &pageData{Title: "Refused", Error: "This form was posted from another site; nothing was recorded."})
	}))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /approve/{id}", s.approvalGet)
	mux.Handle("POST /approve/{id}", cop.Handler(http.HandlerFunc(s.approvalPost)))
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		s.approvalRender(w, http.StatusNotFound, &pageData{Title: "Not found", Error: "This is not an approval link of this server."})
	})
	return mux
}

// approvalLoad reads link id and its consent; a refusal is rendered and
// nil returned.
func (s *Server) approvalLoad(w http.ResponseWriter, r *http.Request) (string, *approvalLink, *sidecar.ConsentResponse) {
	id := r.PathValue("id")
	raw, ok, err := s.approvals.Value(r.Context(), linkPrefix+id)
	if err != nil {
		s.log.Error().Str("event", "approval_store").Str("cause", err.Error()).Msg("the approval store cannot be read")
		s.approvalRender(w, http.StatusServiceUnavailable, &pageData{Title: "Unavailable", Error: "pinned cannot read its approvals now; reload the page shortly."})
		return "", nil, nil
	}
	var l approvalLink
	if !ok || json.Unmarshal(raw, &l) != nil {
		s.approvalRender(w, http.StatusNotFound, &pageData{Title: "Unknown link", Error: "This is not an approval link of this server, or it expired. Nothing was sent; ask the agent to call the tool again."})
		return "", nil, nil
	}
	if !s.cfg.now().Before(time.UnixMilli(l.Expires)) {
		s.approvalRender(w, http.StatusGone, &pageData{Title: "Expired", Error: "This link expired. Nothing was sent; ask the agent to call the tool again."})
		return "", nil, nil
	}
	chk, err := s.side.CheckOp(r.Context(), sidecar.ConsentRequest{Service: l.Service, Op: l.Op, Args: l.Args})
	if err != nil || chk.ArgsSHA256 != l.ArgsHash {
		s.approvalRender(w, http.StatusConflict, &pageData{Title: "Cannot be approved", Error: "The request no longer passes the sandbox's checks; nothing was sent."})
		return "", nil, nil
	}
	return id, &l, &chk
}

func (s *Server) approvalGet(w http.ResponseWriter, r *http.Request) {
	id, l, chk := s.approvalLoad(w, r)
	if l == nil {
		return
	}
	d := s.pageFor(l, chk)
	if dec, ok, err := s.approvals.Value(r.Context(), decisionPrefix+id); err != nil || ok {
		d.Error = decidedText(string(dec), err)
		s.approvalRender(w, http.StatusOK, d)
		return
	}
	cookie := ""
	if c, err := r.Cookie(approvalCookie); err == nil && len(c.Value) == 43 {
		cookie = c.Value
	} else {
		cookie = newLinkID() + newLinkID()[:21]
		http.SetCookie(w, &http.Cookie{Name: approvalCookie, Value: cookie, Path: "/approve/", HttpOnly: true,
			Secure: strings.HasPrefix(s.cfg.ApprovalURL, "https:"), SameSite: http.SameSiteStrictMode})
	}
	d.Form, d.CSRF = true, s.csrfToken(cookie, id)
	s.approvalRender(w, http.StatusOK, d)
}

func (s *Server) approvalPost(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		s.approvalRender(w, http.StatusBadRequest, &pageData{Title: "Refused", Error: "The form could not be read; nothing was recorded."})
		return
	}
	id := r.PathValue("id")
	c, err := r.Cookie(approvalCookie)
	if err != nil || c.Value == "" || !hmac.Equal([]byte(r.PostForm.Get("csrf")), []byte(s.csrfToken(c.Value, id))) {
		s.log.Warn().Str("event", "approval_refused").Str("reason", "csrf").Msg("an approval without this page's form token")
		s.approvalRender(w, http.StatusForbidden, &pageData{Title: "Refused", Error: "This form did not come from this link's page (open the link again); nothing was recorded."})
		return
	}
	id, l, chk := s.approvalLoad(w, r)
	if l == nil {
		return
	}
	d := s.pageFor(l, chk)
	if !s.owner(r.PostForm.Get("owner_secret")) {
		s.log.Warn().Str("event", "approval_refused").Str("reason", "owner_secret").Msg("an approval with a wrong owner secret")
		d.Form, d.CSRF, d.Error = true, s.csrfToken(c.Value, id), "That is not this server's token; nothing was recorded."
		s.approvalRender(w, http.StatusUnauthorized, d)
		return
	}
	decision := decisionDecline
	if r.PostForm.Get("decision") == "approve" {
		decision = decisionApprove + l.ArgsHash
	}
	stored, err := s.approvals.PutValue(r.Context(), decisionPrefix+id, []byte(decision), time.Until(time.UnixMilli(l.Expires))+nonceSkew)
	if err != nil || !stored {
		dec, _, rerr := s.approvals.Value(r.Context(), decisionPrefix+id)
		if err == nil {
			err = rerr
		}
		d.Error = decidedText(string(dec), err)
		s.approvalRender(w, http.StatusConflict, d)
		return
	}
	s.log.Info().Str("event", "approval").Str("service", l.Service).Str("op", l.Op).Bool("approved", decision != decisionDecline).Msg("the person decided on an approval link")
	d.Title = "Declined"
	d.Error = "Declined: nothing is sent. You can close this page."
	if decision != decisionDecline {
		d.Title = "Approved"
		d.Error = "Approved: the agent's call runs once, with exactly these values. You can close this page."
	}
	s.approvalRender(w, http.StatusOK, d)
}

// decidedText says what was already decided on a link.
func decidedText(dec string, err error) string {
	switch {
	case err != nil:
		return "pinned cannot read its approvals now; nothing was recorded. Reload the page shortly."
	case dec == decisionDecline:
		return "This link was already declined; a link is decided once. Nothing was sent."
	}
	return "This link was already approved; a link is decided once and runs one call."
}

func (s *Server) pageFor(l *approvalLink, chk *sidecar.ConsentResponse) *pageData {
	return &pageData{Title: "Approve a write", Service: l.Service, Link: l, Check: chk,
		Expires: time.UnixMilli(l.Expires).UTC().Format(time.RFC3339)}
}

func (s *Server) approvalRender(w http.ResponseWriter, status int, d *pageData) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	if d.Check == nil {
		d.Check = &sidecar.ConsentResponse{}
	}
	_ = approvalPage.Execute(w, d)
}

// owner reports whether secret is the approval secret (constant time on
// SHA-256 digests).
func (s *Server) owner(secret string) bool {
	got, want := sha256.Sum256([]byte(secret)), sha256.Sum256([]byte(s.cfg.ApprovalSecret))
	return s.cfg.ApprovalSecret != "" && subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// checkApprovalURL checks Config.ApprovalURL: an absolute https URL, or
// http on a loopback host, without query or fragment.
func checkApprovalURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil ||
		(u.Scheme != "https" && !(u.Scheme == "http" && isLoopbackHost(u.Host))) {
		return "", errors.New("mcpserver: Config.ApprovalURL must be an https URL (http only on loopback) without query or fragment")
	}
	return strings.TrimSuffix(raw, "/"), nil
}
