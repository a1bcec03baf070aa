package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/internal/fakeapi"
)

// testCacheDir is shared by every test engine (and across packages) so the
// guest modules are compiled once per machine, not once per test.
var testCacheDir = filepath.Join(os.TempDir(), "pinned-test-wazero-cache")

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testEnv is one engine wired to a fresh provider fake, with its logs and
// metrics captured so tests can scan them for leaks.
type testEnv struct {
	fake *fakeapi.Server
	eng  *Engine
	logs *syncBuffer
	reg  *prometheus.Registry
}

// hostileGuest loads a committed hostile module from testdata.
func hostileGuest(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "hostile", name+".wasm"))
	if err != nil {
		t.Fatalf("hostile guest %s: %v (run `make hostile`)", name, err)
	}
	return b
}

func newEnv(t testing.TB, mod func(*Config)) *testEnv {
	t.Helper()
	fake, err := fakeapi.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	env := &testEnv{fake: fake, logs: &syncBuffer{}, reg: prometheus.NewRegistry()}
	log := zerolog.New(env.logs).Level(zerolog.DebugLevel)
	cfg := Config{
		Override: &Override{Addr: fake.Addr(), CAPEM: fake.CACertPEM()},
		Logger:   &log,
		Metrics:  NewMetrics(env.reg),
		CacheDir: testCacheDir,
	}
	if mod != nil {
		mod(&cfg)
	}
	env.eng, err = New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.eng.Close(context.Background()) })
	return env
}

// run runs an op with the fake's valid token for the service.
func (env *testEnv) run(service, op, args string) (*Result, *Error) {
	return env.runWith(context.Background(), service, op, args, Credential{Secret: Secret(fakeapi.Token(service))})
}

func (env *testEnv) runWith(ctx context.Context, service, op, args string, cred Credential) (*Result, *Error) {
	res, err := env.eng.Run(ctx, Call{Service: service, Op: op, Args: json.RawMessage(args), Credential: cred})
	if err != nil {
		var he *Error
		if !errors.As(err, &he) {
			panic("Run returned a non-*Error error: " + err.Error())
		}
		return nil, he
	}
	return res, nil
}

// metricsText renders every collected metric in the Prometheus text format.
func (env *testEnv) metricsText(t testing.TB) string {
	t.Helper()
	mfs, err := env.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// assertNoLeak fails when a credential shows up in the result, the error,
// the logs (guest output included) or the metrics.
func (env *testEnv) assertNoLeak(t testing.TB, res *Result, herr *Error, secrets ...string) {
	t.Helper()
	var where []string
	if res != nil {
		where = append(where, string(res.Data))
	}
	if herr != nil {
		where = append(where, herr.Error(), herr.Message)
	}
	where = append(where, env.logs.String(), env.metricsText(t))
	for _, s := range secrets {
		for i, w := range where {
			if strings.Contains(w, s) {
				t.Fatalf("credential leaked into output %d: %.200q", i, w)
			}
		}
	}
}

// guestOutput returns what the guest wrote to stdout/stderr, from the
// engine's debug log.
func (env *testEnv) guestOutput() string {
	var out strings.Builder
	for _, line := range strings.Split(env.logs.String(), "\n") {
		var ev struct {
			Output string `json:"guest_output"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil {
			out.WriteString(ev.Output)
		}
	}
	return out.String()
}
