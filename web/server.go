package web

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/elevenmessenger/pinned/secret"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/registry"
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

// Config configures a Server.
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
	v  bool
	at time.Time
}

// New checks cfg and builds the server.
func New(cfg Config) (*Server, error) {
	if cfg.Registry == nil {
		cfg.Registry = registry.Default()
	}
	if len(cfg.Bots) == 0 {
		return nil, errors.New("web: at least one bot is required (--bot NAME=URL)")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.BotTimeout <= 0 {
		cfg.BotTimeout = DefaultBotTimeout
	}
	s := &Server{
		cfg: cfg, reg: cfg.Registry, bots: map[string]Bot{}, log: zerolog.Nop(),
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
		if u.Scheme == "http" && !isLoopbackHost(u.Host) {
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
			Timeout:   cfg.BotTimeout,
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

// loopbackHost is DNS-rebinding protection (as the MCP SDK's): a request
// that arrived on a loopback address must name a loopback host (localhost,
// 127.0.0.0/8, ::1) or one of Config.Hosts. A page of another site whose
// name was rebound to 127.0.0.1 is same-origin to the browser (its Origin
// and Host agree), so only the Host tells it from this server's own pages.
func (s *Server) loopbackHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil && isLoopbackHost(la.String()) &&
			!isLoopbackHost(r.Host) && !s.hostAllowed(r.Host) {
			writeError(w, r, newError(CodeCrossOrigin, "refused: the Host header names another site on this loopback server (DNS rebinding?); open pinned web by its own address").
				WithCause(errors.New("a non-loopback Host on a loopback connection")))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isLoopbackHost reports whether a host or host:port is localhost or a
// loopback IP.
func isLoopbackHost(hostport string) bool {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		h = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Unmap().IsLoopback()
}

func (s *Server) hostAllowed(hostport string) bool {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		h = hostport
	}
	for _, a := range s.cfg.Hosts {
		if strings.EqualFold(h, a) {
			return true
		}
	}
	return false
}

func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(sanitizeRequestID, middleware.RequestID, s.accessLog, s.recoverer, securityHeaders, s.loopbackHost)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, newError(CodeNotFound, "no such page or endpoint"))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, newError(CodeMethod, r.Method+" is not allowed here"))
	})
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
		r.Post("/bots/{name}/ops", s.relay("/v1/ops", true))
		r.Post("/bots/{name}/consent", s.relay("/v1/consent", false))
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
		WriteTimeout:      s.cfg.BotTimeout + 10*time.Second,
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

type ctxKey struct{}

// reqInfo is what a handler tells the access log: names and codes only,
// never a body.
type reqInfo struct {
	bot, service, op, outcome, cause string
}

func infoFrom(r *http.Request) *reqInfo {
	if i, ok := r.Context().Value(ctxKey{}).(*reqInfo); ok {
		return i
	}
	return &reqInfo{}
}

// requestIDRe is what an incoming X-Request-Id must look like to be kept
// (the sidecar's rule); anything else is replaced by a generated id.
var requestIDRe = regexp.MustCompile(`^[A-Za-z0-9._:/-]{1,64}$`)

func sanitizeRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get(middleware.RequestIDHeader); id != "" && !requestIDRe.MatchString(id) {
			r.Header.Del(middleware.RequestIDHeader)
		}
		next.ServeHTTP(w, r)
	})
}

// accessLog writes one event per request: method, route pattern, status,
// sizes, duration and, for a relay, the bot, service, op and the answer's
// code. Never a body, a query or a header value.
func (s *Server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &reqInfo{}
		id := middleware.GetReqID(r.Context())
		w.Header().Set(middleware.RequestIDHeader, id)
		sw := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, info))
		next.ServeHTTP(sw, r)
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			route = rc.RoutePattern()
		}
		status := sw.Status()
		if status == 0 {
			status = http.StatusOK
		}
		ev := s.log.Info()
		if status >= 500 {
			ev = s.log.Warn()
		}
		ev = ev.Str("event", "access").Str("request_id", id).Str("method", r.Method).Str("route", route).Int("status", status).
			Int64("bytes_in", r.ContentLength).Int("bytes_out", sw.BytesWritten()).
			Float64("duration_ms", float64(time.Since(start).Microseconds())/1000)
		for _, kv := range [][2]string{{"bot", info.bot}, {"service", info.service}, {"op", info.op}, {"outcome", info.outcome}, {"cause", info.cause}} {
			if kv[1] != "" {
				ev = ev.Str(kv[0], kv[1])
			}
		}
		ev.Msg("request")
	})
}

func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				// The access log writes the cause once, with the request id.
				writeError(w, r, newError(CodeInternal, "internal error; the log has the details").WithCause(fmt.Errorf("panic: %v", v)))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// clip cuts s to at most n bytes, as valid UTF-8 (for text from callers).
func clip(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
