package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/secret"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// testCacheDir is shared by every test engine (and across packages, as in
// package host) so the guest is compiled once per machine.
var testCacheDir = filepath.Join(os.TempDir(), "pinned-test-wazero-cache")

// shared is the engine and fake most tests share: building an engine
// takes seconds under the race detector. Tests run one at a time and
// reset the fake; TestMain closes both.
var shared struct {
	once sync.Once
	fake *fakeapi.Server
	eng  *host.Engine
	hm   *host.Metrics
	logs *testutil.SyncBuffer
	err  error
}

func sharedEngine(t testing.TB) (*fakeapi.Server, *host.Engine, *host.Metrics, *testutil.SyncBuffer) {
	t.Helper()
	shared.once.Do(func() {
		shared.logs = &testutil.SyncBuffer{}
		shared.fake, shared.eng, shared.hm, shared.err = newEngine(shared.logs)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.fake, shared.eng, shared.hm, shared.logs
}

func closeShared() {
	if shared.eng != nil {
		shared.eng.Close(context.Background())
	}
	if shared.fake != nil {
		shared.fake.Close()
	}
}

// newEngine starts a fake and an engine wired to it, logging to logs.
// newEngine starts a provider fake and an engine wired to it; mods edit
// the engine's Config.
func newEngine(logs *testutil.SyncBuffer, mods ...func(*host.Config)) (*fakeapi.Server, *host.Engine, *host.Metrics, error) {
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
		CacheDir: testCacheDir,
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

// testEnv is a running sidecar on a loopback port, wired to a provider
// fake, with its logs (sidecar and host) captured.
type testEnv struct {
	fake     *fakeapi.Server
	eng      *host.Engine
	srv      *Server
	key      *grant.PrivateKey
	base     string               // http://127.0.0.1:port
	logs     *testutil.SyncBuffer // the sidecar's
	hostLogs *testutil.SyncBuffer // the engine's
	prom     *prometheus.Registry
	client   *http.Client
	stop     func() error // shuts the server down (idempotent) and returns Serve's error
}

// allLogs is everything logged: the sidecar's and the engine's events.
func (env *testEnv) allLogs() string { return env.logs.String() + env.hostLogs.String() }

// newTestEnv serves a sidecar on the shared engine and fake.
func newTestEnv(t testing.TB, mod func(*Config)) *testEnv {
	t.Helper()
	fake, eng, hm, hostLogs := sharedEngine(t)
	fake.Reset()
	fake.SetHandler(nil)
	t.Cleanup(func() { fake.SetHandler(nil) })
	return startEnv(t, fake, eng, hm, hostLogs, false, mod)
}

// newOwnTestEnv serves a sidecar on an engine and fake of its own, closed
// by env.stop.
func newOwnTestEnv(t testing.TB, mod func(*Config)) *testEnv {
	t.Helper()
	logs := &testutil.SyncBuffer{}
	fake, eng, hm, err := newEngine(logs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	return startEnv(t, fake, eng, hm, logs, true, mod)
}

func startEnv(t testing.TB, fake *fakeapi.Server, eng *host.Engine, hm *host.Metrics, hostLogs *testutil.SyncBuffer, own bool, mod func(*Config)) *testEnv {
	t.Helper()
	env := &testEnv{fake: fake, eng: eng, logs: &testutil.SyncBuffer{}, hostLogs: hostLogs, prom: prometheus.NewRegistry()}
	env.prom.MustRegister(hm)
	key, err := grant.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(env.logs).Level(zerolog.DebugLevel)
	cfg := Config{Engine: eng, Key: key, Logger: &log, Prometheus: env.prom}
	if mod != nil {
		mod(&cfg)
	}
	env.key = cfg.Key
	env.srv, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env.base = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- env.srv.Serve(ctx, ln) }()
	var once sync.Once
	var serveErr error
	tr := &http.Transport{MaxIdleConnsPerHost: 200}
	env.client = &http.Client{Transport: tr, Timeout: 60 * time.Second}
	env.stop = func() error {
		once.Do(func() {
			cancel()
			serveErr = <-done
			tr.CloseIdleConnections()
			if own {
				env.eng.Close(context.Background())
			}
		})
		return serveErr
	}
	t.Cleanup(func() { _ = env.stop() })
	return env
}

// seal seals a grant to the env's bot, filling service, secret, kind and
// a 2-minute expiry when unset.
func (env *testEnv) seal(t testing.TB, g grant.Grant) string {
	t.Helper()
	return sealTo(t, g, env.key.Public())
}

func sealTo(t testing.TB, g grant.Grant, to grant.PublicKey) string {
	t.Helper()
	if g.Service == "" {
		g.Service = "github"
	}
	if g.Secret == "" {
		g.Secret = secret.Secret(fakeapi.Token(g.Service))
	}
	if g.Kind == "" {
		g.Kind = grant.KindPAT
	}
	if g.ExpiresAt.IsZero() {
		g.ExpiresAt = time.Now().Add(2 * time.Minute)
	}
	s, err := grant.Seal(&g, to, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// apiError is an error answer's body.
type apiError struct {
	Error struct {
		Code           string `json:"code"`
		Message        string `json:"message"`
		RetryAfter     int    `json:"retry_after"`
		UpstreamStatus int    `json:"upstream_status"`
		Arg            string `json:"arg"`
		Applied        string `json:"applied"`
	} `json:"error"`
}

// response is one answer, with its body decoded as far as possible.
type response struct {
	status int
	header http.Header
	body   []byte
	err    apiError
}

func (env *testEnv) do(t testing.TB, method, path string, body any, header ...string) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, env.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := env.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := response{status: resp.StatusCode, header: resp.Header, body: data}
	if resp.StatusCode != http.StatusOK {
		if err := json.Unmarshal(data, &r.err); err != nil {
			t.Fatalf("%s %s: %d with a body that is not an error object: %q", method, path, resp.StatusCode, data)
		}
	}
	return r
}

func (env *testEnv) op(t testing.TB, service, op, args, sealed string) response {
	t.Helper()
	return env.do(t, http.MethodPost, "/v1/ops", OpRequest{Service: service, Op: op, Args: json.RawMessage(args), Grant: sealed})
}

// asError is err's *Error (nil for nil); it fails the test on any other
// error: RunOp and CheckOp answer with an *Error.
func asError(t testing.TB, err error) *Error {
	t.Helper()
	if err == nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("not a *sidecar.Error: %v", err)
	}
	return e
}
