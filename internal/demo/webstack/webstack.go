// Package webstack starts, in one process and on loopback only, everything
// the member's web catalog needs to run against the local provider fake:
// the fake (internal/demo/fakeapi), the sandbox engine, a bot sidecar with a
// fresh key, the OAuth broker with the fake's OAuth apps, `pinned web`, and
// a small HTTP CONNECT proxy that tunnels a browser's requests for the
// providers' OAuth pages to the fake. `pinned demo --web` and the browser
// tests (web/browser_test.go) use it; nothing in production does.
//
// Imports: fakeapi, host, sidecar, sidecar/grant, internal/rotate, broker,
// web. It sits at the top beside cmd/pinned.
package webstack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/broker"
	"github.com/elevenmessenger/pinned/broker/regsync"
	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/rotate"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/secret"
	"github.com/elevenmessenger/pinned/sidecar"
	"github.com/elevenmessenger/pinned/sidecar/grant"
	"github.com/elevenmessenger/pinned/web"
)

// Options configure Start. The zero value is a working demo.
type Options struct {
	// WebListen is pinned web's address; default "127.0.0.1:0".
	WebListen string
	// CacheDir is wazero's compilation cache; "" compiles in memory.
	CacheDir string
	// SidecarNow is the sidecar's clock (grant and token expiry, the
	// grace window); default time.Now.
	SidecarNow func() time.Time
	// RefreshGrace is the sidecar's grace window; default 2 min.
	RefreshGrace time.Duration
	// WebLog, SidecarLog and BrokerLog receive each server's JSON log;
	// nil discards it.
	WebLog, SidecarLog, BrokerLog io.Writer
	// OAuthServices get an OAuth app at the broker; default every
	// service with auth.oauth that the fake serves.
	OAuthServices []string
	// RegistrySync, when set, is the broker's registry sync job: its
	// GET /registry then serves the synced snapshot.
	RegistrySync *regsync.Syncer
}

// Stack is a running set of servers. Close stops them all.
type Stack struct {
	Fake       *fakeapi.Server
	Engine     *host.Engine
	BotKey     *grant.PrivateKey
	SidecarURL string
	BrokerURL  string
	WebURL     string
	// ProxyAddr is the CONNECT proxy ("127.0.0.1:port"): a browser
	// started with --proxy-server=http://<ProxyAddr> reaches the fake's
	// provider pages (trusting the fake's CA or ignoring certificate
	// errors).
	ProxyAddr string
	// CallerToken is the sidecar's caller token (pinned web sends it).
	CallerToken string

	cancel  context.CancelFunc
	wg      sync.WaitGroup
	errs    chan error
	lns     []net.Listener
	stopFns []func()
}

func listen(addr string) (net.Listener, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	return net.Listen("tcp", addr)
}

func randomText(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Start starts the stack; it is ready when Start returns.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	s := &Stack{errs: make(chan error, 8)}
	ctx, s.cancel = context.WithCancel(ctx)
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	logger := func(w io.Writer) *zerolog.Logger {
		if w == nil {
			l := zerolog.Nop()
			return &l
		}
		l := zerolog.New(w).With().Timestamp().Logger()
		return &l
	}
	if s.Fake, err = fakeapi.New(); err != nil {
		return nil, fmt.Errorf("provider fake: %w", err)
	}
	if s.Engine, err = host.New(ctx, host.Config{
		Override: &host.Override{Addr: s.Fake.Addr(), CAPEM: s.Fake.CACertPEM()},
		CacheDir: o.CacheDir,
	}); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if s.BotKey, err = grant.GenerateKey(nil); err != nil {
		return nil, err
	}
	s.CallerToken = randomText(32)
	instanceToken := randomText(32)

	// Listeners first: the broker's public URL and the web's origin are
	// needed to configure each other.
	bln, err := listen("")
	if err != nil {
		return nil, err
	}
	s.lns = append(s.lns, bln)
	sln, err := listen("")
	if err != nil {
		return nil, err
	}
	s.lns = append(s.lns, sln)
	wln, err := listen(o.WebListen)
	if err != nil {
		return nil, fmt.Errorf("pinned web: %w", err)
	}
	s.lns = append(s.lns, wln)
	pln, err := listen("")
	if err != nil {
		return nil, err
	}
	s.lns = append(s.lns, pln)
	s.BrokerURL = "http://" + bln.Addr().String()
	s.SidecarURL = "http://" + sln.Addr().String()
	s.WebURL = "http://" + wln.Addr().String()
	s.ProxyAddr = pln.Addr().String()

	services := o.OAuthServices
	if services == nil { // every service whose manifest has OAuth
		for _, id := range fakeapi.Services() {
			if m, ok := registry.Default().Service(id); ok && m.Auth.OAuth != nil {
				services = append(services, id)
			}
		}
	}
	clients := map[string]broker.Client{}
	for _, id := range services {
		clients[id] = broker.Client{ID: fakeapi.OAuthClientID(id), Secret: fakeapi.OAuthClientSecret(id)}
	}
	stateKey := make([]byte, broker.StateKeySize)
	_, _ = rand.Read(stateKey)
	b, err := broker.New(broker.Config{
		PublicURL: s.BrokerURL,
		// The printed URL and its localhost spelling may both start a flow.
		AllowedReturnOrigins: []string{s.WebURL, strings.Replace(s.WebURL, "127.0.0.1", "localhost", 1)},
		StateKey:             stateKey,
		InstanceTokens:       []string{instanceToken},
		Clients:              clients,
		Override:             &broker.Override{Addr: s.Fake.Addr(), CAPEM: s.Fake.CACertPEM()},
		Logger:               logger(o.BrokerLog),
		RegistrySync:         o.RegistrySync,
	})
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	bsrv := &http.Server{Handler: b.Handler(), ReadHeaderTimeout: 5 * time.Second}
	s.serve(func() error { return bsrv.Serve(bln) }, func() { _ = bsrv.Close(); b.Close() })

	bc, err := rotate.NewBrokerClient(s.BrokerURL, secret.Secret(instanceToken), rotate.BrokerOptions{})
	if err != nil {
		return nil, err
	}
	sc, err := sidecar.New(sidecar.Config{
		Engine: s.Engine, Key: s.BotKey, Logger: logger(o.SidecarLog),
		CallerToken: secret.Secret(s.CallerToken), Refresher: bc,
		Now: o.SidecarNow, RefreshGrace: o.RefreshGrace,
	})
	if err != nil {
		return nil, fmt.Errorf("sidecar: %w", err)
	}
	s.serve(func() error { return sc.Serve(ctx, sln) }, nil)

	w, err := web.New(web.Config{
		Bots:      []web.Bot{{Name: "demo-bot", URL: s.SidecarURL, Token: secret.Secret(s.CallerToken)}},
		BrokerURL: s.BrokerURL,
		Logger:    logger(o.WebLog),
	})
	if err != nil {
		return nil, fmt.Errorf("pinned web: %w", err)
	}
	s.serve(func() error { return w.Serve(ctx, wln) }, nil)

	proxy := &http.Server{Handler: http.HandlerFunc(s.connect), ReadHeaderTimeout: 5 * time.Second}
	s.serve(func() error { return proxy.Serve(pln) }, func() { _ = proxy.Close() })
	return s, nil
}

// serve runs fn in a goroutine until the stack closes; stop (if any) is
// called on Close.
func (s *Stack) serve(fn func() error, stop func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := fn(); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			s.errs <- err
		}
	}()
	if stop != nil {
		s.wg.Add(1)
		ctx := s.ctxDone()
		go func() {
			defer s.wg.Done()
			<-ctx
			stop()
		}()
	}
}

func (s *Stack) ctxDone() <-chan struct{} {
	ch := make(chan struct{})
	s.stopFns = append(s.stopFns, func() { close(ch) })
	return ch
}

// providerHosts are the hosts the CONNECT proxy tunnels to the fake.
func providerHost(h string) bool {
	for _, p := range []string{"github.com", "dnsimple.com", "connect.stripe.com", "app.hubspot.com", "linear.app",
		"api.github.com", "api.dnsimple.com", "api.stripe.com", "api.hubapi.com", "api.linear.app"} {
		if strings.EqualFold(h, p) {
			return true
		}
	}
	return false
}

// connect is the CONNECT proxy: a tunnel to the fake for a provider host
// on port 443, 403 for anything else (the browser reaches nothing else
// through it).
func (s *Stack) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := net.SplitHostPort(r.Host)
	if r.Method != http.MethodConnect || err != nil || port != "443" || !providerHost(host) {
		http.Error(w, "this proxy tunnels the providers' hosts to the local fake only", http.StatusForbidden)
		return
	}
	up, err := net.DialTimeout("tcp", s.Fake.Addr(), 5*time.Second)
	if err != nil {
		http.Error(w, "the fake cannot be reached", http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "no tunnel", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	_, _ = down.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	if n := buf.Reader.Buffered(); n > 0 {
		pending, _ := buf.Reader.Peek(n)
		_, _ = up.Write(bytes.Clone(pending))
	}
	go func() { _, _ = io.Copy(up, down); up.Close() }()
	go func() { _, _ = io.Copy(down, up); down.Close() }()
}

// Err returns the first error a server stopped with, if any (non-blocking).
func (s *Stack) Err() error {
	select {
	case err := <-s.errs:
		return err
	default:
		return nil
	}
}

// Close stops every server and waits for them.
func (s *Stack) Close() {
	if s.cancel != nil {
		s.cancel()
	}
	for _, f := range s.stopFns {
		f()
	}
	s.stopFns = nil
	for _, ln := range s.lns {
		_ = ln.Close()
	}
	s.wg.Wait()
	if s.Engine != nil {
		_ = s.Engine.Close(context.Background())
	}
	if s.Fake != nil {
		s.Fake.Close()
	}
}
