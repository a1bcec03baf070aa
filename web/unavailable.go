package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"time"
	"unicode/utf8"
)

// UnavailableService is a service the broker's registry lists but this
// instance's embedded registry does not: the catalog shows it as "not
// available on this instance yet", and no op of it can run here (a
// sidecar runs only its own embedded snapshot).
type UnavailableService struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Host        string `json:"host,omitempty"`
	// Ops is how many ops the broker's manifest declares.
	Ops int `json:"ops"`
}

// brokerRegistryMaxAge is how long the broker's registry is reused.
const brokerRegistryMaxAge = 60 * time.Second

// brokerRegistryMaxBytes bounds the broker's registry document.
const brokerRegistryMaxBytes = 16 << 20

var unavailableIDRe = regexp.MustCompile(`^[a-z][a-z0-9]{1,30}$`)

// unavailable returns the services the broker's GET /registry lists and
// the embedded registry lacks, sorted by id (none without a broker, or
// when the broker cannot be read: that is logged). The answer is cached
// for brokerRegistryMaxAge.
func (s *Server) unavailable(ctx context.Context) []UnavailableService {
	if s.broker == nil {
		return nil
	}
	s.mu.Lock()
	if s.upcoming != nil && time.Since(s.upcoming.at) < brokerRegistryMaxAge {
		v := s.upcoming.v
		s.mu.Unlock()
		return v
	}
	s.mu.Unlock()
	v, err := s.fetchUnavailable(ctx)
	if err != nil {
		s.log.Warn().Str("error", err.Error()).Msg("the broker's registry could not be read; the catalog shows this instance's services only")
	}
	s.mu.Lock()
	s.upcoming = &cachedUnavailable{v: v, at: time.Now()}
	s.mu.Unlock()
	return v
}

type cachedUnavailable struct {
	v  []UnavailableService
	at time.Time
}

func (s *Server) fetchUnavailable(ctx context.Context) ([]UnavailableService, error) {
	u := *s.broker
	u.Path += "/registry"
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /registry: status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, brokerRegistryMaxBytes+1))
	if err != nil {
		return nil, err
	}
	if len(body) > brokerRegistryMaxBytes {
		return nil, fmt.Errorf("GET /registry: over %d bytes", brokerRegistryMaxBytes)
	}
	return parseUnavailable(body, s.reg.Has)
}

// parseUnavailable reads a registry document (docs/API.md, "GET
// /v1/registry") from the broker, an outside source, and returns its
// services that have returns false for. Only display fields are kept,
// each clipped; an id that is not a manifest id is skipped.
func parseUnavailable(body []byte, has func(string) bool) ([]UnavailableService, error) {
	var doc struct {
		Services []struct {
			ID          string                     `json:"id"`
			Name        string                     `json:"name"`
			Description string                     `json:"description"`
			Host        string                     `json:"host"`
			Ops         map[string]json.RawMessage `json:"ops"`
		} `json:"services"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("GET /registry: not a registry document: %w", err)
	}
	var out []UnavailableService
	seen := map[string]bool{}
	for _, m := range doc.Services {
		if !unavailableIDRe.MatchString(m.ID) || has(m.ID) || seen[m.ID] {
			continue
		}
		seen[m.ID] = true
		out = append(out, UnavailableService{ID: m.ID, Name: clipText(m.Name, 80), Description: clipText(m.Description, 300), Host: clipText(m.Host, 253), Ops: len(m.Ops)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// clipText cuts s to at most n bytes on a rune boundary, marking a cut.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
