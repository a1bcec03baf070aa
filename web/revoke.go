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
	"time"

	"github.com/elevenmessenger/pinned/internal/jsonv"
)

// sealedRevokeBody is the only body POST /api/revoke relays: the connection's
// tokens sealed in the browser to the broker's revoke key, never in the
// clear.
type sealedRevokeBody struct {
	Service string `json:"service"`
	Sealed  string `json:"sealed"`
}

// handleRevoke relays Disconnect's revocation to the broker's POST
// /api/revoke/sealed and passes its answer back as it is: 200
// {"revoked": [...]} when the provider confirmed, else the broker's error.
// pinned web holds no broker token and sees only a sealed box.
func (s *Server) handleRevoke(w http.ResponseWriter, r *http.Request) {
	info := infoFrom(r)
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, r, newError(CodeMediaType, "send the body as Content-Type: application/json"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<10))
	if err != nil {
		writeError(w, r, newError(CodeTooLarge, "the body is larger than 16384 bytes"))
		return
	}
	var rb sealedRevokeBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if _, err := jsonv.Parse(body); err != nil || dec.Decode(&rb) != nil {
		writeError(w, r, newError(CodeBadRequest, "the body must be {service, sealed}"))
		return
	}
	m, ok := s.cfg.registry().Service(rb.Service)
	if !ok || m.Auth.OAuth == nil {
		writeError(w, r, newError(CodeBadRequest, "service must be a service of the catalog with OAuth"))
		return
	}
	info.Set("service", rb.Service)
	raw, err := base64.StdEncoding.Strict().DecodeString(rb.Sealed)
	if err != nil || len(raw) <= sealedBoxOverhead || isText(raw) {
		writeError(w, r, newError(CodeBadRequest, "sealed must be a sealed box (standard base64); pinned web relays no token in the clear"))
		return
	}
	if s.broker == nil {
		writeError(w, r, newError(CodeBrokerFailed, "no broker is configured (--broker-url), so nothing can be revoked from here"))
		return
	}
	u := *s.broker
	u.Path += "/api/revoke/sealed"
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	out, _ := json.Marshal(rb)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(out))
	if err != nil {
		writeError(w, r, newError(CodeInternal, "internal error").WithCause(err))
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		writeError(w, r, newError(CodeBrokerFailed, "the broker could not be reached; the token is still valid").WithCause(err))
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil || !json.Valid(answer) {
		writeError(w, r, newError(CodeBrokerFailed, "the broker's answer is not JSON; the token may still be valid").WithCause(errors.Join(err, fmt.Errorf("status %d", resp.StatusCode))))
		return
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		w.Header().Set("Retry-After", ra)
	}
	writeJSON(w, resp.StatusCode, bytes.TrimRight(answer, "\n"))
}
