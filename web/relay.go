package web

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/elevenmessenger/pinned/internal/httperr"
	"github.com/elevenmessenger/pinned/internal/httpserve"
	"github.com/elevenmessenger/pinned/internal/jsonv"
)

// identity is a sidecar's GET /v1/identity answer.
type identity struct {
	PublicKey string `json:"public_key"`
	Registry  string `json:"registry"`
}

// BotInfo is one element of GET /api/bots.
type BotInfo struct {
	// Name is the bot's Bot.Name.
	Name string `json:"name"`
	// PublicKey is the bot's X25519 key (base64) the page seals grants
	// to; empty when the sidecar could not be asked (Error says why).
	PublicKey string `json:"public_key,omitempty"`
	// Registry is the digest of the registry the sidecar executes.
	Registry string `json:"registry,omitempty"`
	// Error says, for a person, why the sidecar could not be asked.
	Error string `json:"error,omitempty"`
}

// sealedBoxOverhead is an anonymous sealed box's overhead: an ephemeral
// X25519 key and a Poly1305 tag.
const sealedBoxOverhead = 32 + 16

// identityOf asks a bot's sidecar for its public key (cached for
// DefaultIdentityMaxAge).
func (s *Server) identityOf(ctx context.Context, b Bot) (identity, error) {
	s.mu.Lock()
	if c, ok := s.identities[b.Name]; ok && time.Since(c.at) < DefaultIdentityMaxAge && c.err == nil {
		s.mu.Unlock()
		return c.id, nil
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	status, body, _, err := s.call(ctx, b, http.MethodGet, "/v1/identity", nil)
	if err != nil {
		return identity{}, err
	}
	var id identity
	if status != http.StatusOK {
		return identity{}, fmt.Errorf("GET /v1/identity answered %d", status)
	}
	if err := json.Unmarshal(body, &id); err != nil {
		return identity{}, fmt.Errorf("GET /v1/identity: %w", err)
	}
	if k, err := base64.StdEncoding.Strict().DecodeString(id.PublicKey); err != nil || len(k) != 32 {
		return identity{}, errors.New("GET /v1/identity: public_key is not 32 bytes of base64")
	}
	s.mu.Lock()
	s.identities[b.Name] = cachedIdentity{id: id, at: time.Now()}
	s.mu.Unlock()
	return id, nil
}

func (s *Server) handleBots(w http.ResponseWriter, r *http.Request) {
	out := make([]BotInfo, len(s.order))
	for i, name := range s.order {
		out[i].Name = name
		id, err := s.identityOf(r.Context(), s.bots[name])
		if err != nil {
			s.log.Warn().Str("event", "bot_identity").Str("bot", name).AnErr("cause", err).Msg("the bot's identity cannot be read")
			out[i].Error = "the bot's sidecar cannot be reached"
			continue
		}
		out[i].PublicKey, out[i].Registry = id.PublicKey, id.Registry
	}
	body, _ := json.Marshal(out)
	writeJSON(w, http.StatusOK, body)
}

// opBody is the only body POST /api/bots/{name}/ops relays.
type opBody struct {
	Service string          `json:"service"`
	Op      string          `json:"op"`
	Args    json.RawMessage `json:"args,omitempty"`
	Pages   json.RawMessage `json:"pages,omitempty"` // the sidecar checks it
	Grant   string          `json:"grant"`
}

// consentBody is the only body POST /api/bots/{name}/consent relays.
type consentBody struct {
	Service string          `json:"service"`
	Op      string          `json:"op"`
	Args    json.RawMessage `json:"args,omitempty"`
}

// revokeBody is the only body POST /api/bots/{name}/revoke relays.
type revokeBody struct {
	Grant string `json:"grant"`
}

// Bodies the relay takes (relay's kind).
const (
	bodyOp      = "op"      // opBody, its grant a sealed box
	bodyConsent = "consent" // consentBody
	bodyRevoke  = "revoke"  // revokeBody, its grant a sealed box
)

// relay forwards a JSON body to the bot's sidecar path and passes its
// answer back as it is (status and body). kind names the body it takes
// (bodyOp, bodyConsent, bodyRevoke); a grant must be a sealed box.
func (s *Server) relay(path string, kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		info := infoFrom(r)
		name := chi.URLParam(r, "name")
		b, ok := s.bots[name]
		if !ok {
			writeError(w, r, newError(CodeUnknownBot, "no bot of that name; GET /api/bots lists them"))
			return
		}
		info.Set("bot", name)
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			writeError(w, r, newError(CodeMediaType, "send the body as Content-Type: application/json"))
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.maxBodyBytes()))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				writeError(w, r, newError(CodeTooLarge, fmt.Sprintf("the body is larger than %d bytes", s.cfg.maxBodyBytes())))
				return
			}
			writeError(w, r, newError(CodeBadRequest, "the body could not be read"))
			return
		}
		if e := checkBody(body, kind, info); e != nil {
			writeError(w, r, e)
			return
		}
		status, answer, retryAfter, err := s.call(r.Context(), b, http.MethodPost, path, body)
		if err != nil {
			writeError(w, r, newError(CodeBotFailed, "the bot's sidecar could not be reached; try again").WithCause(err))
			return
		}
		info.Code = outcomeOf(status, answer)
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		writeJSON(w, status, bytes.TrimRight(answer, "\n"))
	}
}

// checkBody refuses anything but the endpoint's JSON object: strict JSON
// (no duplicate keys), no unknown member, and for an op or a revocation a
// grant that is standard base64 of a sealed box. Names go to the access
// log.
func checkBody(body []byte, kind string, info *httpserve.Basic) *webError {
	if _, err := jsonv.Parse(body); err != nil {
		return newError(CodeBadRequest, "the body is not one strict JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	switch kind {
	case bodyOp:
		var ob opBody
		if err := dec.Decode(&ob); err != nil {
			return newError(CodeBadRequest, "the body must be {service, op, args, grant}")
		}
		info.Set("service", clip(ob.Service, 32))
		info.Set("op", clip(ob.Op, 48))
		return checkSealed(ob.Grant)
	case bodyRevoke:
		var rb revokeBody
		if err := dec.Decode(&rb); err != nil {
			return newError(CodeBadRequest, "the body must be {grant}")
		}
		return checkSealed(rb.Grant)
	}
	var cb consentBody
	if err := dec.Decode(&cb); err != nil {
		return newError(CodeBadRequest, "the body must be {service, op, args}")
	}
	info.Set("service", clip(cb.Service, 32))
	info.Set("op", clip(cb.Op, 48))
	return nil
}

// checkSealed refuses a grant that is not standard base64 of a sealed box.
func checkSealed(grant string) *webError {
	raw, err := base64.StdEncoding.Strict().DecodeString(grant)
	if err != nil || len(raw) <= sealedBoxOverhead || isText(raw) {
		return newError(CodeBadRequest, "grant must be a sealed grant (standard base64 of a sealed box); pinned web relays nothing else")
	}
	return nil
}

// isText reports whether b reads as text: valid UTF-8 without a control
// byte other than tab, CR and LF. A sealed box (an ephemeral X25519 key,
// a Poly1305 tag and ciphertext, all uniform bytes) of more than 48 bytes
// is text with a probability below 2^-48; a grant (or a token) a page
// base64-encoded in the clear is text, and is not relayed.
func isText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return false
		}
	}
	return true
}

// outcomeOf is "ok" or the sidecar's error code, for the access log.
func outcomeOf(status int, answer []byte) string {
	if status == http.StatusOK {
		return "ok"
	}
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(answer, &e) == nil && e.Error.Code != "" {
		return clip(e.Error.Code, 32)
	}
	return fmt.Sprintf("http_%d", status)
}

// call sends one request to a bot's sidecar with its caller token and
// returns the status, the body (at most maxAnswerBytes; a JSON answer is
// required) and its Retry-After (busy, rate_limited, refresh_unavailable).
func (s *Server) call(ctx context.Context, b Bot, method, path string, body []byte) (int, []byte, string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.botTimeout())
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.URL+path, rd)
	if err != nil {
		return 0, nil, "", err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.Token != "" {
		req.Header.Set("Authorization", "Bearer "+string(b.Token))
	}
	// The sidecar keeps the id, so one request is one id in both logs.
	if id := httpserve.RequestID(ctx); httpserve.ValidRequestID(id) {
		req.Header.Set(httperr.RequestIDHeader, id)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return 0, nil, "", err
	}
	if len(answer) > maxAnswerBytes {
		return 0, nil, "", errors.New("the sidecar's answer is over 1 MiB")
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return 0, nil, "", fmt.Errorf("the sidecar answered %d with Content-Type %q", resp.StatusCode, clip(resp.Header.Get("Content-Type"), 64))
	}
	ra := resp.Header.Get("Retry-After")
	if len(ra) > 8 || strings.Trim(ra, "0123456789") != "" {
		ra = "" // delay-seconds only
	}
	return resp.StatusCode, answer, ra, nil
}
