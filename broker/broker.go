package broker

import (
	"crypto/cipher"
	"crypto/sha256"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/elevenmessenger/pinned/broker/regsync"
	"github.com/elevenmessenger/pinned/internal/brokerapi"
	"github.com/elevenmessenger/pinned/internal/httpserve"
	"github.com/elevenmessenger/pinned/registry"
)

// Broker is the OAuth relay. It is safe for concurrent use. Build one with
// New, serve Handler, and Close it when done.
type Broker struct {
	reg       *registry.Registry
	publicURL string // no trailing slash
	allowed   map[string]bool
	aead      cipher.AEAD
	stateTTL  time.Duration
	bind      bool
	timeout   time.Duration
	clients   map[string]*client
	instances [][sha256.Size]byte // SHA-256 of each instance token
	limiter   *limiter
	// revokeKeys open the tokens of POST /api/revoke/sealed.
	revokeKeys revokeKeys
	http       *http.Client
	transport  *http.Transport
	log        zerolog.Logger
	metrics    *metrics
	promReg    *prometheus.Registry // serves /metrics when Config.Metrics is nil
	now        func() time.Time

	registryBody []byte
	registryETag string
	sync         *regsync.Syncer
	synced       atomic.Pointer[syncedDoc]
}

// client is one configured confidential client with its manifest.
type client struct {
	service string
	oauth   *registry.OAuth
	conf    *oauth2.Config
}

// New checks cfg and builds a Broker. It fails closed: no state key, a
// malformed public URL or allowlist entry, a short instance token, or a
// client for a service without auth.oauth is an error.
func New(cfg Config) (*Broker, error) {
	if len(cfg.StateKey) != StateKeySize {
		return nil, fmt.Errorf("broker: the state key must be %d bytes (got %d); generate one with `pinned broker --gen-state-key`", StateKeySize, len(cfg.StateKey))
	}
	aead, err := newAEAD(cfg.StateKey)
	if err != nil {
		return nil, fmt.Errorf("broker: state key: %w", err)
	}
	pub, err := parsePublicURL(cfg.PublicURL)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	b := &Broker{
		reg:       cfg.registry(),
		publicURL: pub.String(),
		allowed:   map[string]bool{},
		aead:      aead,
		stateTTL:  cfg.stateTTL(),
		bind:      !cfg.NoBrowserBinding,
		timeout:   cfg.providerTimeout(),
		clients:   map[string]*client{},
		limiter:   newLimiter(cfg.refreshRate(), cfg.refreshBurst(), cfg.now()),
		now:       cfg.now(),
		log:       zerolog.Nop(),
		sync:      cfg.RegistrySync,
	}
	if b.revokeKeys, err = newRevokeKeys(); err != nil {
		return nil, fmt.Errorf("broker: the revoke key: %w", err)
	}
	if cfg.Logger != nil {
		b.log = cfg.Logger.With().Str("component", "broker").Logger()
	}
	for _, o := range cfg.AllowedReturnOrigins {
		if strings.TrimSpace(o) == "" {
			continue
		}
		c, err := parseAllowedOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("broker: %w", err)
		}
		b.allowed[c] = true
	}
	for i, t := range cfg.InstanceTokens {
		if len(t) < MinInstanceTokenLen {
			return nil, fmt.Errorf("broker: instance token #%d is %d characters; at least %d are required", i+1, len(t), MinInstanceTokenLen)
		}
		b.instances = append(b.instances, sha256.Sum256([]byte(t)))
	}
	ids := make([]string, 0, len(cfg.Clients))
	for id := range cfg.Clients {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		c := cfg.Clients[id]
		m, ok := b.reg.Service(id)
		if !ok || m.Auth.OAuth == nil {
			return nil, fmt.Errorf("broker: a client is configured for %q, which has no auth.oauth in the registry", id)
		}
		if c.ID == "" || c.Secret == "" {
			return nil, fmt.Errorf("broker: the client of %q needs both an id and a secret", id)
		}
		redirect := c.RedirectURL
		if redirect == "" {
			redirect = b.publicURL + "/oauth/" + id + "/callback"
		} else if _, err := parsePublicURL(redirect); err != nil {
			return nil, fmt.Errorf("broker: redirect URI of %q: %w", id, err)
		}
		b.clients[id] = &client{
			service: id,
			oauth:   m.Auth.OAuth,
			conf: &oauth2.Config{
				ClientID:     c.ID,
				ClientSecret: c.Secret,
				RedirectURL:  redirect,
				Endpoint: oauth2.Endpoint{
					AuthURL:  m.Auth.OAuth.AuthorizeURL,
					TokenURL: m.Auth.OAuth.TokenURL,
					// Credentials in the body (client_secret_post), which
					// every shipped provider accepts. An explicit style also
					// stops x/oauth2 from probing: a failed first attempt is
					// never retried with the same single-use refresh token.
					AuthStyle: oauth2.AuthStyleInParams,
				},
			},
		}
	}
	b.http, b.transport, err = newProviderClient(&cfg)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	reg := cfg.Metrics
	if reg == nil {
		b.promReg = prometheus.NewRegistry()
		reg = b.promReg
	}
	b.metrics = newMetrics(reg)
	if b.sync != nil && cfg.Metrics == nil {
		reg.MustRegister(b.sync.Collectors()...)
	}
	if err := b.buildRegistryBody(); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	return b, nil
}

// Close releases idle connections to providers.
func (b *Broker) Close() { b.transport.CloseIdleConnections() }

// Enabled returns the ids of the services whose OAuth flow can start (a
// client is configured), sorted.
func (b *Broker) Enabled() []string {
	out := make([]string, 0, len(b.clients))
	for id := range b.clients {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// RedirectURL returns the redirect URI registered for a service's client
// ("" when none is configured): what the provider's app settings must
// list as the callback URL.
func (b *Broker) RedirectURL(service string) string {
	if c := b.clients[service]; c != nil {
		return c.conf.RedirectURL
	}
	return ""
}

// Handler returns the broker's HTTP API:
//
//	GET  /healthz                 liveness
//	GET  /registry                the embedded manifests (CORS-open, ETag)
//	GET  /api/oauth/config        ?service= whether the flow can start (CORS-open)
//	GET  /oauth/{id}/start        ?cap=read|write&return=URL → 302 to the provider
//	GET  /oauth/{id}/callback     the provider's redirect → 302 to the return URL
//	POST /api/refresh             {service, refresh_token} → a fresh pair (instance token)
//	POST /api/revoke              {service, refresh_token, access_token} → revoked at the provider (RFC 7009; instance token)
//	POST /api/revoke/sealed       {service, sealed} → the same, the tokens sealed to revoke_key (no instance token)
//	GET  /metrics                 Prometheus (when the broker owns its registry)
func (b *Broker) Handler() http.Handler { return b.routes() }

func (b *Broker) routes() *chi.Mux {
	r := httpserve.NewRouter(httpserve.Options{
		Log: b.log, Requests: b.metrics.requests, Docs: "docs/OAUTH.md",
		Fail: func(w http.ResponseWriter, r *http.Request, code, msg string, cause error) {
			writeError(w, r, brokerapi.NewError(brokerapi.Code(code), msg).WithCause(cause))
		},
	})
	r.Use(securityHeaders)
	r.Get("/healthz", b.health)
	r.Get("/registry", b.registry)
	r.Head("/registry", b.registry)
	r.Options("/registry", corsPreflight)
	r.Get("/api/oauth/config", b.oauthConfig)
	r.Options("/api/oauth/config", corsPreflight)
	r.Get("/oauth/{id}/start", b.start)
	r.Get("/oauth/{id}/callback", b.callback)
	r.Post("/api/refresh", b.refresh)
	r.Post("/api/revoke", b.revoke)
	r.Post("/api/revoke/sealed", b.revokeSealed)
	if b.promReg != nil {
		r.Handle("/metrics", promhttp.HandlerFor(b.promReg, promhttp.HandlerOpts{}))
	}
	return r
}

// securityHeaders sets headers every answer carries.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}

func corsPreflight(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "If-None-Match")
	h.Set("Access-Control-Max-Age", "86400")
	w.WriteHeader(http.StatusNoContent)
}

func (b *Broker) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (b *Broker) buildRegistryBody() error {
	body, err := b.reg.DocumentJSON()
	if err != nil {
		return fmt.Errorf("encoding the registry: %w", err)
	}
	b.registryBody = append(body, '\n')
	b.registryETag = `"` + b.reg.Digest() + `"`
	return nil
}

// registry serves the registry document (the synced snapshot's when a
// sync job has one, else the embedded manifests): CORS-open (any catalog UI may
// read them), with a strong ETag equal to the registry digest, and 304 when
// If-None-Match names it. A catalog may render them; execution never trusts
// a fetched copy.
func (b *Broker) registry(w http.ResponseWriter, r *http.Request) {
	body, etag := b.registryDoc()
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", "ETag")
	h.Set("ETag", etag)
	h.Set("Cache-Control", "public, max-age=300, must-revalidate")
	if etagMatch(r.Header.Values("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// etagMatch implements If-None-Match (RFC 9110 section 13.1.2): "*" or a
// list of entity tags compared weakly.
func etagMatch(headers []string, etag string) bool {
	for _, h := range headers {
		for _, t := range strings.Split(h, ",") {
			t = strings.TrimSpace(t)
			if t == "*" || strings.TrimPrefix(t, "W/") == etag {
				return true
			}
		}
	}
	return false
}

// capScopes is cap_scopes in the config answer.
type capScopes struct {
	Read  []string `json:"read"`
	Write []string `json:"write"`
}

// oauthConfigDoc answers GET /api/oauth/config.
type oauthConfigDoc struct {
	Service string `json:"service"`
	// Enabled is true when the flow can start: the manifest has auth.oauth
	// and the broker holds a client for it.
	Enabled bool `json:"enabled"`
	// CapScopes are the provider scopes each connection cap asks for.
	CapScopes capScopes `json:"cap_scopes"`
	// Refresh is true when the provider's tokens come with refresh tokens
	// (the connection then rotates itself).
	Refresh bool `json:"refresh"`
	// RevokeKey, when the manifest declares a revocation endpoint and the
	// broker holds a client, is the X25519 public key (standard base64)
	// a page seals a connection's tokens to for POST /api/revoke/sealed.
	RevokeKey string `json:"revoke_key,omitempty"`
}

// oauthConfig tells a catalog UI whether to show a service's Connect
// button.
func (b *Broker) oauthConfig(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	q := r.URL.Query()
	if len(q["service"]) != 1 || q.Get("service") == "" {
		writeError(w, r, errorf(brokerapi.CodeBadRequest, "give exactly one service parameter"))
		return
	}
	id := q.Get("service")
	m, ok := b.reg.Service(id)
	if !ok {
		writeError(w, r, errorf(brokerapi.CodeUnknownService, "no service %q in the registry", truncate(id, 64)))
		return
	}
	doc := oauthConfigDoc{Service: id, CapScopes: capScopes{Read: []string{}, Write: []string{}}}
	if o := m.Auth.OAuth; o != nil {
		doc.Enabled = b.clients[id] != nil
		doc.CapScopes = capScopes{Read: slices.Clone(o.Scopes), Write: slices.Clone(o.ScopesWrite)}
		doc.Refresh = o.Refresh
		if doc.Enabled && o.RevokeURL != "" {
			doc.RevokeKey = b.revokeKeys.public()
		}
	}
	writeJSON(w, http.StatusOK, doc)
}

// lookupClient finds the configured client of a service or explains why
// there is none.
func (b *Broker) lookupClient(id string) (*client, *brokerError) {
	m, ok := b.reg.Service(id)
	switch {
	case !ok:
		return nil, errorf(brokerapi.CodeUnknownService, "no service %q in the registry", truncate(id, 64))
	case m.Auth.OAuth == nil:
		return nil, errorf(brokerapi.CodeOAuthUnsupported, "%s has no OAuth flow; paste a scoped token instead", m.Name)
	case b.clients[id] == nil:
		return nil, errorf(brokerapi.CodeOAuthNotConfigured, "this broker has no OAuth app for %s; paste a scoped token instead", m.Name)
	}
	return b.clients[id], nil
}

// truncate shortens untrusted text echoed in a message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
