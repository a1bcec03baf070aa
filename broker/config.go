package broker

import (
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/registry"
)

// Defaults of Config.
const (
	// DefaultListen is where `pinned broker` listens unless told otherwise.
	DefaultListen = "127.0.0.1:8081"
	// DefaultStateTTL bounds how long a member may take on the provider's
	// consent page.
	DefaultStateTTL = 10 * time.Minute
	// DefaultProviderTimeout bounds one call to a provider's token endpoint.
	DefaultProviderTimeout = 15 * time.Second
	// DefaultRefreshRate and DefaultRefreshBurst are the token bucket of
	// POST /api/refresh, per caller (instance token).
	DefaultRefreshRate  = 5.0
	DefaultRefreshBurst = 30
	// StateKeySize is the size of the state sealing key (XChaCha20-Poly1305).
	StateKeySize = 32
	// MinInstanceTokenLen is the shortest instance token accepted.
	MinInstanceTokenLen = 32
)

// Config configures a Broker. The zero value of every optional field picks
// the documented default.
type Config struct {
	// Registry supplies the services and their auth.oauth endpoints; nil is
	// registry.Default(), the embedded snapshot.
	Registry *registry.Registry
	// PublicURL is the broker's own base URL as browsers and providers
	// reach it ("https://connect.example.com", optionally with a path
	// prefix). Redirect URIs default to PublicURL + "/oauth/<id>/callback".
	// Required.
	PublicURL string
	// AllowedReturnOrigins are the origins ("https://app.example.com",
	// "http://localhost:3000") a flow may return to. A return URL must match
	// one exactly in scheme, host and port (default ports implied).
	AllowedReturnOrigins []string
	// StateKey seals the OAuth state (XChaCha20-Poly1305); exactly 32
	// bytes. Required: the broker refuses to start without one.
	StateKey []byte
	// StateTTL is how long a started flow may take; default 10 minutes.
	StateTTL time.Duration
	// NoBrowserBinding turns off the cookie that binds a flow to the
	// browser that started it (a login-CSRF defence). Leave it off unless
	// the start and callback cannot share cookies.
	NoBrowserBinding bool
	// InstanceTokens authenticate POST /api/refresh (Authorization: Bearer);
	// each at least 32 characters. With none, refresh is disabled (503).
	InstanceTokens []string
	// RefreshRate (per second) and RefreshBurst bound POST /api/refresh per
	// caller; defaults 5 and 30.
	RefreshRate  float64
	RefreshBurst int
	// Clients are the confidential OAuth clients, by service id
	// (ClientsFromEnv reads them from the environment).
	Clients map[string]Client
	// ProviderTimeout bounds each call to a token endpoint; default 15s.
	ProviderTimeout time.Duration
	// Proxy, when set, is the one proxy for calls to providers. Proxy
	// environment variables are ignored.
	Proxy *url.URL
	// Override, for tests and trials only, sends every provider call to a
	// local server (the provider fake).
	Override *Override
	// Logger receives structured logs; nil discards them.
	Logger *zerolog.Logger
	// Metrics, when set, receives the broker's Prometheus collectors.
	Metrics prometheus.Registerer
	// Now is the clock for state expiry and rate limits; nil is time.Now.
	Now func() time.Time
}

// The fields with their defaults: a zero (or negative) value is the
// documented default.
func (c *Config) registry() *registry.Registry { return cmp.Or(c.Registry, registry.Default()) }
func (c *Config) stateTTL() time.Duration      { return cmp.Or(max(c.StateTTL, 0), DefaultStateTTL) }
func (c *Config) providerTimeout() time.Duration {
	return cmp.Or(max(c.ProviderTimeout, 0), DefaultProviderTimeout)
}
func (c *Config) refreshRate() float64 { return cmp.Or(max(c.RefreshRate, 0), DefaultRefreshRate) }
func (c *Config) refreshBurst() int    { return cmp.Or(max(c.RefreshBurst, 0), DefaultRefreshBurst) }
func (c *Config) now() func() time.Time {
	if c.Now == nil {
		return time.Now
	}
	return c.Now
}

// Client is one confidential OAuth client (RFC 6749 section 2.1). Its
// String and GoString methods redact the secret.
type Client struct {
	// ID is the client_id the provider issued.
	ID string
	// Secret is the client_secret. For Stripe it is the platform's secret
	// key.
	Secret string
	// RedirectURL overrides the default redirect URI
	// (PublicURL/oauth/<id>/callback); it must reach this broker's
	// callback.
	RedirectURL string
}

// String prints the client with its secret as [redacted].
func (c Client) String() string {
	return fmt.Sprintf("Client{ID: %q, Secret: [redacted], RedirectURL: %q}", c.ID, c.RedirectURL)
}

// GoString redacts the secret for %#v too.
func (c Client) GoString() string { return "broker." + c.String() }

// Override sends every call to a provider to one local HTTPS server: the
// provider fake of tests and trials (the pattern of host.Override). Only
// the address dialed and the extra trusted CA differ from production: TLS
// is still verified against the provider's host name.
type Override struct {
	// Addr is the "ip:port" every provider host is dialed at instead.
	Addr string
	// CAPEM holds PEM certificates trusted in addition to the system roots.
	CAPEM []byte
}

// Environment variable names of the OAuth clients.
const (
	envClientPrefix = "LCHAT_OAUTH_"
	envClientID     = "_CLIENT_ID"
	envClientSecret = "_CLIENT_SECRET"
	envRedirectURI  = "_REDIRECT_URI"
	// The legacy DNSimple names, still honoured.
	envDNSimpleID     = "LCHAT_DNSIMPLE_CLIENT_ID"
	envDNSimpleSecret = "LCHAT_DNSIMPLE_CLIENT_SECRET"
)

// EnvNames returns the environment variables that configure a service's
// client: LCHAT_OAUTH_<ID>_CLIENT_ID and _CLIENT_SECRET (ID upper-cased).
func EnvNames(service string) (id, secret string) {
	u := envClientPrefix + strings.ToUpper(service)
	return u + envClientID, u + envClientSecret
}

// ClientsFromEnv reads the OAuth clients of every service of reg that has
// auth.oauth from environ ("KEY=value" pairs, as os.Environ returns):
// LCHAT_OAUTH_<ID>_CLIENT_ID and LCHAT_OAUTH_<ID>_CLIENT_SECRET (ID
// upper-cased), optionally LCHAT_OAUTH_<ID>_REDIRECT_URI; DNSimple also on
// LCHAT_DNSIMPLE_CLIENT_ID / LCHAT_DNSIMPLE_CLIENT_SECRET when its
// LCHAT_OAUTH_ pair is unset. It fails closed: a half-set pair, or an
// LCHAT_OAUTH_<X>_… variable naming no OAuth service, is an error rather
// than a silently disabled provider. Errors name variables, never values.
func ClientsFromEnv(reg *registry.Registry, environ []string) (map[string]Client, error) {
	if reg == nil {
		reg = registry.Default()
	}
	env := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			env[k] = strings.TrimSpace(v)
		}
	}
	var errs []error
	known := map[string]bool{}
	out := map[string]Client{}
	for _, m := range reg.Services() {
		if m.Auth.OAuth == nil {
			continue
		}
		up := strings.ToUpper(m.ID)
		known[up] = true
		idName, secretName := EnvNames(m.ID)
		id, secret := env[idName], env[secretName]
		if id == "" && secret == "" && m.ID == "dnsimple" {
			idName, secretName = envDNSimpleID, envDNSimpleSecret
			id, secret = env[idName], env[secretName]
		}
		switch {
		case id == "" && secret == "":
			continue
		case id == "":
			errs = append(errs, fmt.Errorf("%s is set but %s is empty: set both or neither", secretName, idName))
			continue
		case secret == "":
			errs = append(errs, fmt.Errorf("%s is set but %s is empty: set both or neither", idName, secretName))
			continue
		}
		c := Client{ID: id, Secret: secret, RedirectURL: env[envClientPrefix+up+envRedirectURI]}
		out[m.ID] = c
	}
	for k, v := range env {
		rest, ok := strings.CutPrefix(k, envClientPrefix)
		if !ok || v == "" {
			continue
		}
		for _, suffix := range []string{envClientID, envClientSecret, envRedirectURI} {
			if svc, ok := strings.CutSuffix(rest, suffix); ok && !known[svc] {
				errs = append(errs, fmt.Errorf("%s: no service %q with auth.oauth in the registry", k, strings.ToLower(svc)))
			}
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// GenerateStateKey returns a fresh random state key, base64-encoded (the
// form ParseStateKey reads).
func GenerateStateKey() string {
	k := make([]byte, StateKeySize)
	if _, err := rand.Read(k); err != nil {
		panic("broker: crypto/rand: " + err.Error())
	}
	return base64.StdEncoding.EncodeToString(k)
}

// ParseStateKey decodes a base64 (standard or URL alphabet, padded or
// not) state key of exactly 32 bytes. Surrounding white space is ignored.
func ParseStateKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil {
			if len(k) != StateKeySize {
				return nil, fmt.Errorf("state key is %d bytes, want %d (generate one with `pinned broker --gen-state-key`)", len(k), StateKeySize)
			}
			return k, nil
		}
	}
	return nil, errors.New("state key is not base64 (generate one with `pinned broker --gen-state-key`)")
}

// canonicalOrigin returns "scheme://host:port" of an http(s) URL (host
// lower-cased, the default port filled in) or an error.
func canonicalOrigin(u *url.URL) (string, error) {
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	if u.User != nil {
		return "", errors.New("userinfo is not allowed")
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", errors.New("no host")
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + net.JoinHostPort(host, port), nil
}

// parseAllowedOrigin checks one allowlist entry: an origin with no path
// (a lone "/" is tolerated), query or fragment.
func parseAllowedOrigin(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return "", fmt.Errorf("allowed return origin %q: %v", s, err)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("allowed return origin %q: an origin is scheme://host[:port], without path, query or fragment", s)
	}
	o, err := canonicalOrigin(u)
	if err != nil {
		return "", fmt.Errorf("allowed return origin %q: %v", s, err)
	}
	return o, nil
}

// parsePublicURL checks Config.PublicURL and returns it without a trailing
// slash.
func parsePublicURL(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("public URL %q: %v", s, err)
	}
	if _, err := canonicalOrigin(u); err != nil {
		return nil, fmt.Errorf("public URL %q: %v", s, err)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return nil, fmt.Errorf("public URL %q: no query or fragment allowed", s)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// checkOverride validates an Override address: an IP literal with a port.
func checkOverride(ov *Override) error {
	ap, err := netip.ParseAddrPort(ov.Addr)
	if err != nil || !ap.IsValid() || ap.Port() == 0 {
		return fmt.Errorf("provider override address %q: want ip:port", ov.Addr)
	}
	return nil
}
