// Package testenv is the test environment that the sidecar, mcpserver and
// cmd/pinned tests share: a provider fake (internal/demo/fakeapi) with an
// engine wired to it, a real broker at the fake's OAuth endpoints, and a
// sealed connections store.
//
// Only tests import it. It never imports package sidecar, so the
// sidecar's own tests can use it.
package testenv

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/broker"
	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/connstore"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/rotate"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/secret"
)

// CacheDir is the wazero cache every test engine shares, across packages,
// so the guest compiles once per machine.
func CacheDir() string {
	return filepath.Join(os.TempDir(), "pinned-test-wazero-cache")
}

// CLICacheHome is the $XDG_CACHE_HOME the cmd/pinned tests give the
// commands they run in process, kept across runs like CacheDir.
func CLICacheHome() string {
	return filepath.Join(os.TempDir(), "pinned-test-cmd-xdg-cache")
}

// Engine starts a provider fake and an engine wired to it. The engine logs
// at debug level to logs and counts into its own metrics; mods edit its
// host.Config. The caller closes both.
func Engine(logs io.Writer, mods ...func(*host.Config)) (*fakeapi.Server, *host.Engine, *host.Metrics, error) {
	fake, err := fakeapi.New()
	if err != nil {
		return nil, nil, nil, err
	}
	log := zerolog.New(logs).Level(zerolog.DebugLevel)
	hm := host.NewMetrics(nil)
	cfg := host.Config{
		Override: &host.Override{Addr: fake.Addr(), CAPEM: fake.CACertPEM()},
		Logger:   &log,
		Metrics:  hm,
		CacheDir: CacheDir(),
	}
	for _, mod := range mods {
		mod(&cfg)
	}
	eng, err := host.New(context.Background(), cfg)
	if err != nil {
		fake.Close()
		return nil, nil, nil, err
	}
	return fake, eng, hm, nil
}

// OwnEngine is Engine for one test: the fake and the engine close when the
// test ends.
func OwnEngine(t testing.TB, logs io.Writer, mods ...func(*host.Config)) (*fakeapi.Server, *host.Engine, *host.Metrics) {
	t.Helper()
	fake, eng, hm, err := Engine(logs, mods...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		eng.Close(context.Background())
		fake.Close()
	})
	return fake, eng, hm
}

// Shared is one fake and one engine for a package's tests: building an
// engine takes seconds under the race detector. The first Get builds them;
// the package's TestMain calls Close.
type Shared struct {
	once    sync.Once
	fake    *fakeapi.Server
	eng     *host.Engine
	metrics *host.Metrics
	logs    *testutil.SyncBuffer
	err     error
}

// Get returns the shared fake, engine, engine metrics and engine log,
// building them on first use.
func (s *Shared) Get(t testing.TB) (*fakeapi.Server, *host.Engine, *host.Metrics, *testutil.SyncBuffer) {
	t.Helper()
	s.once.Do(func() {
		s.logs = &testutil.SyncBuffer{}
		s.fake, s.eng, s.metrics, s.err = Engine(s.logs)
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.fake, s.eng, s.metrics, s.logs
}

// Close closes the engine and the fake, if Get built them.
func (s *Shared) Close() {
	if s.eng != nil {
		s.eng.Close(context.Background())
	}
	if s.fake != nil {
		s.fake.Close()
	}
}

// BrokerOptions tune Broker. The zero value serves GitHub with a 15s
// provider timeout and discards the broker's log.
type BrokerOptions struct {
	Services        []string      // OAuth clients, the fake's default ones; default GitHub
	ProviderTimeout time.Duration // the broker's bound on a token request; default 15s
	Logs            io.Writer     // the broker's log; default discarded
}

// Broker serves a real broker on loopback that accepts instanceToken, with
// its provider calls sent to fake. It returns the broker's base URL
// (http://127.0.0.1:port); the broker stops when the test ends.
func Broker(t testing.TB, fake *fakeapi.Server, instanceToken string, o BrokerOptions) string {
	t.Helper()
	if len(o.Services) == 0 {
		o.Services = []string{fakeapi.GitHub}
	}
	if o.ProviderTimeout == 0 {
		o.ProviderTimeout = 15 * time.Second
	}
	if o.Logs == nil {
		o.Logs = io.Discard
	}
	srv := httptest.NewUnstartedServer(nil)
	u := "http://" + srv.Listener.Addr().String()
	clients := map[string]broker.Client{}
	for _, svc := range o.Services {
		clients[svc] = broker.Client{ID: fakeapi.OAuthClientID(svc), Secret: fakeapi.OAuthClientSecret(svc)}
	}
	log := zerolog.New(o.Logs)
	b, err := broker.New(broker.Config{
		PublicURL:       u,
		StateKey:        bytes.Repeat([]byte{9}, broker.StateKeySize),
		InstanceTokens:  []string{instanceToken},
		Clients:         clients,
		ProviderTimeout: o.ProviderTimeout,
		Override:        &broker.Override{Addr: fake.Addr(), CAPEM: fake.CACertPEM()},
		Logger:          &log,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = b.Handler()
	srv.Start()
	t.Cleanup(b.Close)
	t.Cleanup(srv.Close)
	return u
}

// BrokerClient is a sidecar's token refresher through the broker at url,
// presenting instanceToken. Its idle connections close when the test ends,
// so no keep-alive goroutine outlives it.
func BrokerClient(t testing.TB, url, instanceToken string) *rotate.BrokerClient {
	t.Helper()
	tr := &http.Transport{Proxy: nil}
	t.Cleanup(tr.CloseIdleConnections)
	bc, err := rotate.NewBrokerClient(url, secret.Secret(instanceToken), rotate.BrokerOptions{
		HTTPClient: &http.Client{Transport: tr, Timeout: 30 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	return bc
}

// Store opens a connections store in dir ("": a directory of the test's
// own) and puts conns in it.
func Store(t testing.TB, dir string, conns ...connstore.Connection) *connstore.Store {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	store, err := connstore.Open(filepath.Join(dir, "pinned"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range conns {
		if err := store.Put(c); err != nil {
			t.Fatal(err)
		}
	}
	return store
}

// StoreSecrets lists what must never cross an MCP message or a log: every
// token and refresh token in store, its key, and every 24-byte window of
// its sealed file (base64, base64url and hex, each cut to 32 characters).
// On a read error it returns what it gathered so far, with the error.
func StoreSecrets(store *connstore.Store) ([]string, error) {
	out := []string{store.Key().Encode()}
	conns, err := store.List()
	if err != nil {
		return out, err
	}
	for _, c := range conns {
		out = append(out, string(c.Token))
		if c.Refresh != "" {
			out = append(out, string(c.Refresh))
		}
	}
	raw, err := os.ReadFile(store.Path())
	if err != nil {
		return out, err
	}
	for i := 0; i+24 <= len(raw); i += 24 {
		w := raw[i : i+24]
		out = append(out, base64.StdEncoding.EncodeToString(w)[:32], base64.RawURLEncoding.EncodeToString(w)[:32], hex.EncodeToString(w))
	}
	return out, nil
}
