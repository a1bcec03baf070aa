package web

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/internal/httpserve"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/secret"
)

//go:embed static
var staticFS embed.FS

// Static returns the embedded assets (index.html, github.html, the
// scripts, the vendored libsodium), rooted at web/static.
func Static() fs.FS {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}

// Defaults of Config, and how long a bot's identity is cached.
const (
	// DefaultMaxBodyBytes is Config.MaxBodyBytes' default: 256 KiB.
	DefaultMaxBodyBytes = 256 << 10
	// DefaultBotTimeout is Config.BotTimeout's default.
	DefaultBotTimeout = 60 * time.Second
	// DefaultIdentityMaxAge is how long a sidecar's GET /v1/identity
	// answer is reused for GET /api/bots (not configurable).
	DefaultIdentityMaxAge = 30 * time.Second
	// maxAnswerBytes bounds a relayed sidecar answer (a result is at most
	// 64 KiB of data, plus a rotated pair and the envelope).
	maxAnswerBytes = 1 << 20
)

// Bot is one bot sidecar the catalog may grant.
type Bot struct {
	// Name is how the page names the bot: 1–32 of [a-z0-9_-], starting
	// with a letter or digit.
	Name string
	// URL is the sidecar's base URL: https, or http on loopback only
	// (localhost, a loopback IP), e.g. "http://127.0.0.1:8080".
	URL string
	// Token is the sidecar's caller token, sent as Bearer; empty when the
	// sidecar has none. The browser never sees it.
	Token secret.Secret
}

var botNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// Config configures a Server. Bots is required; every other zero field
// takes its default.
type Config struct {
	// Registry is what /api/integrations describes; default
	// registry.Default(), the embedded snapshot.
	Registry *registry.Registry
	// Bots are the sidecars ops are relayed to, at least one.
	Bots []Bot
	// BrokerURL is the broker's public base URL, where the browser is sent
	// to start an OAuth flow and where pinned web asks
	// /api/oauth/config; empty means paste-a-token only.
	BrokerURL string
	// Logger receives one access event per request; default disabled.
	Logger *zerolog.Logger
	// Client calls the sidecars and the broker; default a client with
	// BotTimeout that follows no redirects and ignores proxy variables.
	Client *http.Client
	// MaxBodyBytes bounds a relayed request body; default 256 KiB.
	MaxBodyBytes int64
	// BotTimeout bounds one relayed call; default 60s.
	BotTimeout time.Duration
	// Hosts are the host names (without a port) pinned web answers to
	// when it is reached over loopback, besides localhost and loopback
	// IPs: a reverse proxy on the same machine that keeps the public
	// Host. Any other Host on a loopback connection is a DNS-rebinding
	// page and is refused (cross_origin).
	Hosts []string
}

// The fields with their defaults: a zero (or negative) value is the
// documented default.
func (c *Config) registry() *registry.Registry { return cmp.Or(c.Registry, registry.Default()) }
func (c *Config) maxBodyBytes() int64          { return cmp.Or(max(c.MaxBodyBytes, 0), DefaultMaxBodyBytes) }
func (c *Config) botTimeout() time.Duration    { return cmp.Or(max(c.BotTimeout, 0), DefaultBotTimeout) }

// Server is pinned web. Build it with New.
type Server struct {
	cfg     Config
	reg     *registry.Registry
	bots    map[string]Bot
	order   []string
	broker  *url.URL // nil: no OAuth
	log     zerolog.Logger
	client  *http.Client
	handler http.Handler

	mu         sync.Mutex
	identities map[string]cachedIdentity
	oauth      map[string]cachedBool
	upcoming   *cachedUnavailable
}

type cachedIdentity struct {
	id  identity
	at  time.Time
	err error
}

type cachedBool struct {
	v   bool
	at  time.Time
	key string // the broker's revoke_key
}

// New checks cfg and builds the server.
func New(cfg Config) (*Server, error) {
	if len(cfg.Bots) == 0 {
		return nil, errors.New("web: at least one bot is required (--bot NAME=URL)")
	}
	s := &Server{
		cfg: cfg, reg: cfg.registry(), bots: map[string]Bot{}, log: zerolog.Nop(),
		identities: map[string]cachedIdentity{}, oauth: map[string]cachedBool{},
	}
	for _, b := range cfg.Bots {
		if !botNameRe.MatchString(b.Name) {
			return nil, fmt.Errorf("web: bot name %q: use 1-32 of a-z, 0-9, _ and -", b.Name)
		}
		if _, dup := s.bots[b.Name]; dup {
			return nil, fmt.Errorf("web: bot %q is configured twice", b.Name)
		}
		u, err := url.Parse(b.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("web: bot %q: the URL must be http(s)://host[:port][/path], got %q", b.Name, b.URL)
		}
		// Over plain http anyone on the path could swap the public key
		// /v1/identity answers, and members would seal their credentials
		// to it; the caller token would travel in the clear too.
		if u.Scheme == "http" && !httpserve.IsLoopback(u.Host) {
			return nil, fmt.Errorf("web: bot %q: plain http is allowed on loopback only (the page seals credentials to the key this URL answers); use https://, got %q", b.Name, b.URL)
		}
		b.URL = strings.TrimRight(u.String(), "/")
		s.bots[b.Name] = b
		s.order = append(s.order, b.Name)
	}
	if cfg.BrokerURL != "" {
		u, err := url.Parse(cfg.BrokerURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("web: the broker URL must be http(s)://host[:port][/path], got %q", cfg.BrokerURL)
		}
		u.Path = strings.TrimRight(u.Path, "/")
		s.broker = u
	}
	if cfg.Logger != nil {
		s.log = *cfg.Logger
	}
	s.client = cfg.Client
	if s.client == nil {
		s.client = &http.Client{
			Timeout:   cfg.botTimeout(),
			Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second},
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	s.handler = s.routes()
	return s, nil
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// contentSecurityPolicy allows this origin's own scripts, styles, images
// and fetches and nothing else: no inline script or style, no other
// origin, no framing. 'wasm-unsafe-eval' lets libsodium compile its
// WebAssembly module (it would fall back to slower asm.js without it); it
// permits no JavaScript eval.
const contentSecurityPolicy = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; " +
	"img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// securityHeaders sets the headers every answer carries.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
		next.ServeHTTP(w, r)
	})
}

// sameOrigin refuses a request another site made: a Sec-Fetch-Site other
// than same-origin (or none, a typed URL, for GET), or an Origin whose
// host is not this request's Host. A POST must carry Origin (every
// browser sends it on a POST fetch), so a form or script elsewhere cannot
// drive the relay, whatever its browser.
func sameOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := crossOrigin(r); why != "" {
			writeError(w, r, newError(CodeCrossOrigin, "refused: "+why+"; pinned web answers its own pages only").WithCause(errors.New(why)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func crossOrigin(r *http.Request) string {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin":
	case "none":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			return "a request the browser did not start from a page"
		}
	default:
		return "Sec-Fetch-Site is " + clip(site, 32)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			return ""
		}
		return "a POST without an Origin header"
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
		return "the Origin is another origin"
	}
	return ""
}

func (s *Server) routes() *chi.Mux {
	r := httpserve.NewRouter(httpserve.Options{
		Log: s.log, Docs: "docs/WEB.md",
		Fail: func(w http.ResponseWriter, r *http.Request, code, msg string, cause error) {
			writeError(w, r, newError(Code(code), msg).WithCause(cause))
		},
	})
	// A loopback request must name a loopback host or one of Config.Hosts:
	// a page of another site whose name was rebound to 127.0.0.1 is
	// same-origin to the browser, so only the Host tells it apart.
	r.Use(securityHeaders, httpserve.LoopbackHost(s.cfg.Hosts, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, newError(CodeCrossOrigin, "refused: the Host header names another site on this loopback server (DNS rebinding?); open pinned web by its own address").
			WithCause(errors.New("a non-loopback Host on a loopback connection")))
	}))
	static := Static()
	r.Get("/", s.page(static, "index.html"))
	r.Get("/apps/github", s.page(static, "github.html"))
	files := http.StripPrefix("/static/", http.FileServerFS(static))
	r.Get("/static/*", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") { // no directory listings
			writeError(w, r, newError(CodeNotFound, "no such file"))
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
	r.Get("/favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
	})
	r.Route("/api", func(r chi.Router) {
		r.Use(sameOrigin)
		r.Get("/integrations", s.handleIntegrations)
		r.Get("/bots", s.handleBots)
		r.Post("/bots/{name}/ops", s.relay("/v1/ops", bodyOp))
		r.Post("/bots/{name}/consent", s.relay("/v1/consent", bodyConsent))
		r.Post("/bots/{name}/revoke", s.relay("/v1/grants/revoke", bodyRevoke))
		r.Post("/revoke", s.handleRevoke)
	})
	return r
}

func (s *Server) page(static fs.FS, name string) http.HandlerFunc {
	body, err := fs.ReadFile(static, name)
	if err != nil {
		panic(err) // embedded at build time
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	}
}

// Serve serves on ln until ctx is done, then shuts down (in-flight
// requests get up to 10 s).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      s.cfg.botTimeout() + 10*time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          log.New(errorLog{s.log}, "", 0),
	}
	s.log.Info().Str("event", "listening").Str("addr", ln.Addr().String()).Strs("bots", s.order).
		Bool("oauth", s.broker != nil).Msg("pinned web listening")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	<-errc
	return nil
}

type errorLog struct{ log zerolog.Logger }

func (e errorLog) Write(p []byte) (int, error) {
	e.log.Debug().Str("event", "http_server").Str("error", string(p)).Msg("http server")
	return len(p), nil
}

// infoFrom returns the request's note: for a relay, the bot, service, op
// and the answer's code; for an error, its code and internal cause.
func infoFrom(r *http.Request) *httpserve.Basic { return httpserve.NoteOf[httpserve.Basic](r) }

// clip cuts s to at most n bytes, as valid UTF-8 (for text from callers).
func clip(s string, n int) string { return httpserve.Clip(s, n) }
