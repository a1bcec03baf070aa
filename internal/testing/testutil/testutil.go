// Package testutil holds small helpers the tests of several packages
// share: a goroutine-safe log sink, a settable clock, the provider fake's
// set-up, a token pair minted at its OAuth provider (MintPair), and the
// consent checks every surface that asks a person runs (ConsentArgs,
// MissingFromConsent). Only _test.go files import it; the larger shared
// environment (an engine, a broker, a store) is internal/testing/testenv.
//
// It imports internal/demo/fakeapi, internal/display and registry, and nothing
// else of the project's.
package testutil

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/registry"
)

// SyncBuffer is a goroutine-safe io.Writer that keeps what was written: a
// log sink tests read while servers write to it. The zero value is ready.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

// Reset empties the buffer.
func (s *SyncBuffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Reset()
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// Fake starts the provider fake (fakeapi.New with opts) on loopback and
// closes it when the test ends.
func Fake(t testing.TB, opts ...fakeapi.Option) *fakeapi.Server {
	t.Helper()
	fake, err := fakeapi.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	return fake
}

// CAFile writes the fake's CA certificate (PEM) into the test's temporary
// directory and returns its path, for --cacert / --provider-ca flags.
func CAFile(t testing.TB, fake *fakeapi.Server) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, fake.CACertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// WaitFor polls cond every millisecond until it holds, and fails the test
// (naming what, e.g. "the pool's only instance in use") when it still does
// not after timeout. Tests use it to order goroutines on an observable
// condition instead of sleeping for a guessed time.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s: it never happened", timeout, what)
		}
		<-tick.C
	}
}

// Clock is a settable clock for expiry and rate-limit tests. The zero
// value reads the wall clock moved by every Advance so far; FrozenClock
// makes one that moves only by Advance. Its methods are safe for
// concurrent use.
type Clock struct {
	mu     sync.Mutex
	frozen bool
	at     time.Time
	d      time.Duration
}

// FrozenClock returns a clock stopped at t, moved only by Advance.
func FrozenClock(t time.Time) *Clock { return &Clock{frozen: true, at: t} }

// Now is the clock's reading.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen {
		return c.at.Add(c.d)
	}
	return time.Now().Add(c.d)
}

// Advance moves the clock d ahead.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.d += d
}

// ViewerStatus is the HTTP status of the service's viewer call at the fake
// with the bearer token: 200 while the token works, 401 once it is revoked
// or has expired. service is fakeapi.GitHub, fakeapi.HubSpot,
// fakeapi.DNSimple, fakeapi.Stripe or fakeapi.Linear (its manifest's own
// viewer query: the fake answers an op's text).
func ViewerStatus(t testing.TB, fake *fakeapi.Server, service, token string) int {
	t.Helper()
	var req *http.Request
	switch service {
	case fakeapi.GitHub:
		req, _ = http.NewRequest(http.MethodGet, "https://api.github.com/user", nil)
	case fakeapi.HubSpot:
		req, _ = http.NewRequest(http.MethodGet, "https://api.hubapi.com/account-info/v3/details", nil)
	case fakeapi.DNSimple:
		req, _ = http.NewRequest(http.MethodGet, "https://api.dnsimple.com/v2/whoami", nil)
	case fakeapi.Stripe:
		req, _ = http.NewRequest(http.MethodGet, "https://api.stripe.com/v1/account", nil)
	case fakeapi.Linear:
		m, _ := registry.Default().Service(fakeapi.Linear)
		req, _ = http.NewRequest(http.MethodPost, "https://api.linear.app/graphql", bytes.NewReader(m.Ops["get_viewer"].BodyJSON))
		req.Header.Set("Content-Type", "application/json")
	default:
		t.Fatalf("ViewerStatus: no viewer call for %q", service)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := fake.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
