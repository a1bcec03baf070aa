package web

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/elevenmessenger/pinned/registry"
)

// Catalog is the answer of GET /api/integrations: the embedded registry
// as the catalog page renders it.
type Catalog struct {
	// Digest is the registry digest ("sha256:…").
	Digest string `json:"digest"`
	// Broker is the broker's public base URL ("" when OAuth is off): the
	// page sends the browser to Broker + "/oauth/<id>/start".
	Broker string `json:"broker"`
	// Services, sorted by id.
	Services []CatalogService `json:"services"`
	// Unavailable are the services the broker's registry lists that this
	// instance's embedded registry lacks, sorted by id: shown as "not
	// available on this instance yet", never run.
	Unavailable []UnavailableService `json:"unavailable,omitempty"`
}

// CatalogService is one service of the catalog.
type CatalogService struct {
	// ID, Name, Description and Docs are the manifest's id, name,
	// description and docs (the provider's API reference).
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Docs        string `json:"docs,omitempty"`
	// Host is the one API host the service's ops may reach.
	Host string `json:"host"`
	// WebHosts are the manifest's web_hosts: the only hosts a link taken
	// from the service's data may point to (pinned.safeHref).
	WebHosts []string `json:"web_hosts,omitempty"`
	// PATHelp is the provider's page to mint a scoped token.
	PATHelp string `json:"pat_help,omitempty"`
	// Viewer is the read op that says whose credential it is.
	Viewer string `json:"viewer,omitempty"`
	// OAuth is true when the manifest has an OAuth flow; OAuthEnabled when
	// the broker says the flow can start (GET /api/oauth/config).
	OAuth        bool `json:"oauth"`
	OAuthEnabled bool `json:"oauth_enabled"`
	// RevokeKey, when the broker can revoke the service's tokens, is its
	// X25519 key (base64): Disconnect seals the connection's tokens to
	// it and POSTs them to /api/revoke, so pinned web sees ciphertext only.
	RevokeKey string `json:"revoke_key,omitempty"`
	// Ops, sorted by name.
	Ops []CatalogOp `json:"ops"`
	// Resources are the manifest's resources (docs/MANIFEST.md,
	// "Resources"): what a member may limit a connection to, and the op
	// that lists the choices.
	Resources map[string]registry.Resource `json:"resources,omitempty"`
}

// CatalogOp is one op: what it reads (Fields, the pick projection) or
// writes (Confirm, the sentence a member consents to).
type CatalogOp struct {
	// Name is the op's name; Access ("read" or "write"), Summary,
	// Description, Confirm and Args are the manifest's, Root and Fields
	// its pick.
	Name        string                   `json:"name"`
	Access      string                   `json:"access"`
	Summary     string                   `json:"summary"`
	Description string                   `json:"description,omitempty"`
	Confirm     string                   `json:"confirm,omitempty"`
	Args        map[string]*registry.Arg `json:"args"`
	Root        string                   `json:"root,omitempty"`
	Fields      []string                 `json:"fields"`
	// Classes is each field's data-flow class (docs/MANIFEST.md, "Pick"),
	// by field.
	Classes map[string]string `json:"classes"`
}

// oauthMaxAge is how long a broker's "enabled" answer is reused.
const oauthMaxAge = 30 * time.Second

// catalog builds the answer; the broker is asked about each OAuth
// service (in parallel, each answer cached for oauthMaxAge).
func (s *Server) catalog(ctx context.Context) Catalog {
	c := Catalog{Digest: s.reg.Digest()}
	if s.broker != nil {
		c.Broker = s.broker.String()
	}
	var wg sync.WaitGroup
	for _, m := range s.reg.Services() {
		cs := CatalogService{
			ID: m.ID, Name: m.Name, Description: m.Description, Docs: m.Docs, Host: m.Host, WebHosts: m.WebHosts,
			PATHelp: m.Auth.PATHelp, Viewer: m.Viewer, OAuth: m.Auth.OAuth != nil, Ops: []CatalogOp{},
			Resources: m.Resources,
		}
		for _, name := range m.OpNames() {
			op := m.Ops[name]
			args := op.Args
			if args == nil {
				args = map[string]*registry.Arg{}
			}
			cs.Ops = append(cs.Ops, CatalogOp{
				Name: name, Access: op.Access, Summary: op.Summary, Description: op.Description,
				Confirm: op.Confirm, Args: args, Root: op.Pick.Root, Fields: op.Pick.Fields, Classes: op.Pick.Classes,
			})
		}
		c.Services = append(c.Services, cs)
	}
	for i := range c.Services {
		if !c.Services[i].OAuth || s.broker == nil {
			continue
		}
		wg.Add(1)
		go func(cs *CatalogService) {
			defer wg.Done()
			cs.OAuthEnabled, cs.RevokeKey = s.oauthEnabled(ctx, cs.ID)
		}(&c.Services[i])
	}
	wg.Wait()
	c.Unavailable = s.unavailable(ctx)
	return c
}

// oauthEnabled asks the broker's GET /api/oauth/config whether the flow
// of a service can start. Any failure is "no" (the page then offers
// paste-a-token only) and is logged. key is the broker's revoke_key for
// the service ("" when it cannot revoke).
func (s *Server) oauthEnabled(ctx context.Context, id string) (enabled bool, key string) {
	s.mu.Lock()
	if c, ok := s.oauth[id]; ok && time.Since(c.at) < oauthMaxAge {
		s.mu.Unlock()
		return c.v, c.key
	}
	s.mu.Unlock()
	u := *s.broker
	u.Path += "/api/oauth/config"
	u.RawQuery = "service=" + id
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false, ""
	}
	resp, err := s.client.Do(req)
	if err == nil {
		var doc struct {
			Enabled   bool   `json:"enabled"`
			RevokeKey string `json:"revoke_key"`
		}
		if resp.StatusCode == http.StatusOK && json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&doc) == nil {
			enabled = doc.Enabled
			if k, err := base64.StdEncoding.Strict().DecodeString(doc.RevokeKey); err == nil && len(k) == 32 {
				key = doc.RevokeKey
			}
		} else {
			s.log.Warn().Str("event", "broker_config").Str("service", id).Int("status", resp.StatusCode).Msg("the broker's /api/oauth/config answer is unusable")
		}
		resp.Body.Close()
	} else {
		s.log.Warn().Str("event", "broker_config").Str("service", id).AnErr("cause", err).Msg("the broker cannot be asked; offering paste-a-token only")
		return false, "" // not cached: ask again next time
	}
	s.mu.Lock()
	s.oauth[id] = cachedBool{v: enabled, key: key, at: time.Now()}
	s.mu.Unlock()
	return enabled, key
}

func (s *Server) handleIntegrations(w http.ResponseWriter, r *http.Request) {
	body, err := json.Marshal(s.catalog(r.Context()))
	if err != nil {
		writeError(w, r, newError(CodeInternal, "internal error").WithCause(err))
		return
	}
	writeJSON(w, http.StatusOK, body)
}
