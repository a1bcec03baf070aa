package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/secret"
)

// testCacheDir is shared by every test engine (and across packages) so the
// guest modules are compiled once per machine, not once per test.
var testCacheDir = filepath.Join(os.TempDir(), "pinned-test-wazero-cache")

// testEnv is one engine wired to a fresh provider fake, with its logs and
// metrics captured so tests can scan them for leaks.
type testEnv struct {
	fake *fakeapi.Server
	eng  *Engine
	logs *testutil.SyncBuffer
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
	env := &testEnv{fake: fake, logs: &testutil.SyncBuffer{}, reg: prometheus.NewRegistry()}
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
	if interpreted(t) {
		cfg.interpreter = true
	}
	env.eng, err = New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.eng.Close(context.Background()) })
	return env
}

// harnessKey carries a hostile test guest's instruction line in the op's
// context; the test-only inputHook appends it to the guest's op input
// after the args (hpin.Input). The args themselves are bound by the host,
// so a hostile guest's instructions cannot ride in them.
type harnessKey struct{}

func init() {
	inputHook = func(ctx context.Context, in []byte) []byte {
		if h, ok := ctx.Value(harnessKey{}).(string); ok {
			return append(append(in, '\n'), h...)
		}
		return in
	}
}

// honestArgs are valid args for the ops the hostile guests attack: a
// hostile test passes its instructions as {"attack":...} to run, which
// moves them to the harness line and runs the op with these args.
var honestArgs = map[string]string{
	"github.list_issues":  `{"owner":"octo","repo":"hello"}`,
	"github.create_issue": `{"owner":"octo","repo":"hello","title":"t"}`,
	"jira.get_issue":      `{"issue":"CAT-3"}`,
}

// fakeCred is the fake's valid pasted connection of a service: its
// token, with the user part and the tenant label where the service's
// manifest has them.
func fakeCred(service string) Credential {
	return Credential{Secret: secret.Secret(fakeapi.Token(service)), User: secret.Secret(fakeapi.User(service)), Tenant: fakeapi.Tenant(service)}
}

// run runs an op with the fake's valid connection for the service.
func (env *testEnv) run(service, op, args string) (*Result, *Error) {
	return env.runWith(context.Background(), service, op, args, fakeCred(service))
}

// runHarness runs an op with the given (bound) args and harness line.
func (env *testEnv) runHarness(service, op, args, harness string) (*Result, *Error) {
	ctx := context.WithValue(context.Background(), harnessKey{}, harness)
	return env.runWith(ctx, service, op, args, fakeCred(service))
}

// runWith runs an op. Args with a top-level "attack" member are a hostile
// guest's instructions: they go to the harness line (harnessKey) and the
// op runs with honestArgs.
func (env *testEnv) runWith(ctx context.Context, service, op, args string, cred Credential) (*Result, *Error) {
	var probe map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &probe) == nil && probe["attack"] != nil && ctx.Value(harnessKey{}) == nil {
		ctx = context.WithValue(ctx, harnessKey{}, args)
		args = honestArgs[service+"."+op]
		if args == "" {
			args = "{}"
		}
	}
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

// asError is err's *Error (nil for nil); it fails the test on any other
// error: every error of the host's API is an *Error.
func asError(t testing.TB, err error) *Error {
	t.Helper()
	if err == nil {
		return nil
	}
	var he *Error
	if !errors.As(err, &he) {
		t.Fatalf("not a *host.Error: %v", err)
	}
	return he
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
