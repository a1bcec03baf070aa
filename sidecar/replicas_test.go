package sidecar

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"go.uber.org/goleak"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/state"
	"github.com/elevenmessenger/pinned/internal/testing/redistest"
	"github.com/elevenmessenger/pinned/internal/testing/testenv"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// The replica tests run several sidecar.Servers in this process, each
// with its own HTTP listener and its own Redis client, sharing one bot
// key and one real redis-server (internal/testing/redistest): what several
// `pinned sidecar --redis-url` processes behind a load balancer share.

var replicaStateKey = bytes.Repeat([]byte{5}, state.StateKeySize)

// redisState opens a client of srv as one replica would.
func redisState(t testing.TB, srv *redistest.Server, timeout time.Duration) *state.Redis {
	t.Helper()
	r, err := state.NewRedis(state.RedisOptions{URL: srv.URL(), StateKey: replicaStateKey, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// TestReplicasReplay: one write grant sent to 3 replicas at once, 20
// rounds: exactly one 200 per grant, grant_replayed from the other two,
// and the provider sees exactly one request per grant.
func TestReplicasReplay(t *testing.T) {
	const rounds, n = 20, 3
	srv := redistest.Start(t)
	key, err := grant.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	reps := make([]*testEnv, n)
	for i := range reps {
		reps[i] = newTestEnv(t, func(c *Config) { c.Key, c.Store = key, redisState(t, srv, 10*time.Second) })
	}
	fake := reps[0].fake
	for round := range rounds {
		title := fmt.Sprintf("replica round %d", round)
		args := `{"owner":"pinned-tester","repo":"notes","title":"` + title + `"}`
		sealed := reps[0].seal(t, grant.Grant{Access: grant.AccessWrite})
		answers := make([]response, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range reps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				answers[i] = reps[i].op(t, "github", "create_issue", args, sealed)
			}()
		}
		close(start)
		wg.Wait()
		ok := 0
		for i, a := range answers {
			switch {
			case a.status == http.StatusOK:
				ok++
			case a.status == http.StatusConflict && a.err.Error.Code == string(CodeGrantReplayed):
			default:
				t.Fatalf("round %d replica %d: %d %s", round, i, a.status, a.body)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d replicas ran the grant, want exactly 1", round, ok)
		}
		seen := 0
		for _, r := range fake.Requests() {
			if r.Method == http.MethodPost && bytes.Contains(r.Body, []byte(`"`+title+`"`)) {
				seen++
			}
		}
		if seen != 1 {
			t.Fatalf("round %d: the provider saw %d requests for one grant", round, seen)
		}
	}
	if got := len(fake.Requests()); got != rounds {
		t.Fatalf("the provider saw %d requests for %d grants", got, rounds)
	}
}

// TestReplicasRefresh: 50 parallel ops, each with its own grant carrying
// the SAME expired single-use GitHub pair, spread over 3 replicas on one
// Redis: the provider sees exactly ONE refresh, all 50 succeed, and every
// answer carries the same fresh pair, sealed to the member key.
func TestReplicasRefresh(t *testing.T) {
	const ops, n = 50, 3
	srv := redistest.Start(t)
	key, err := grant.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	var refresher api.Refresher
	re := newRotEnv(t, brokerOpts{}, func(c *Config) {
		c.Key, c.Store, refresher = key, redisState(t, srv, 10*time.Second), c.Refresher
	})
	_, _, hm, hostLogs := sharedEngine(t)
	reps := []*testEnv{re.testEnv}
	for len(reps) < n {
		reps = append(reps, startEnv(t, re.fake, re.eng, hm, hostLogs, false, func(c *Config) {
			c.Key, c.Store, c.Refresher = key, redisState(t, srv, 10*time.Second), refresher
		}))
	}
	old := mintPair(t, re.fake, fakeapi.GitHub, 9*time.Hour) // expired an hour ago
	grants := make([]string, ops)
	for i := range grants {
		grants[i] = re.oauthGrant(t, fakeapi.GitHub, old, true)
	}
	re.fake.Reset()
	before := refreshes(re.fake, fakeapi.GitHub)
	answers := make([]response, ops)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i] = reps[i%n].op(t, fakeapi.GitHub, "get_viewer", `{}`, grants[i])
		}()
	}
	close(start)
	wg.Wait()
	if got := refreshes(re.fake, fakeapi.GitHub) - before; got != 1 {
		t.Fatalf("the provider saw %d refresh requests from 3 replicas, want exactly 1", got)
	}
	var fresh api.Pair
	for i, a := range answers {
		if a.status != http.StatusOK {
			t.Fatalf("op %d (replica %d): %d %s", i, i%n, a.status, a.body)
		}
		p := re.openRotated(t, fakeapi.GitHub, rotatedOf(t, a.body))
		if i == 0 {
			fresh = p
		} else if p != fresh {
			t.Fatalf("op %d (replica %d) got another fresh pair than op 0", i, i%n)
		}
	}
	if string(fresh.Access) == string(old.Access) || string(fresh.Refresh) == string(old.Refresh) {
		t.Fatal("not rotated")
	}
	for _, h := range apiCalls(re.fake, fakeapi.GitHub) {
		if h != "Bearer "+string(fresh.Access) {
			t.Fatal("an op called the API with another token than the fresh one")
		}
	}
	for _, r := range reps {
		assertNoSecrets(t, r.logs.String(), string(old.Access), string(old.Refresh), string(fresh.Access), string(fresh.Refresh))
	}
}

// recordingStore remembers the nonces its store recorded, to prove no op
// ran without its replay record.
type recordingStore struct {
	api.Store
	mu       sync.Mutex
	recorded map[string]bool
}

func (s *recordingStore) RecordNonce(ctx context.Context, nonce string, until, now time.Time) (api.Nonce, error) {
	n, err := s.Store.RecordNonce(ctx, nonce, until, now)
	if err == nil {
		s.mu.Lock()
		s.recorded[nonce] = true
		s.mu.Unlock()
	}
	return n, err
}

// TestReplicasRedisFaults: a bounded load (1,000 ops from 50 clients over
// 3 replicas) while Redis first freezes (SIGSTOP: every command times
// out) and then dies (SIGKILL), and later comes back empty. Every answer
// is a result, busy or unavailable (503 with Retry-After); no op ran
// without its replay record; /readyz is not ready while Redis is away and
// ready again after, without restarting a replica; no goroutine outlives
// shutdown.
func TestReplicasRedisFaults(t *testing.T) {
	const (
		total   = 1000
		clients = 50
		n       = 3
		limit   = 20 // per replica: some answers are busy
	)
	ignore := goleak.IgnoreCurrent()
	srv := redistest.Start(t)
	logs := &testutil.SyncBuffer{}
	fake, eng, hm, err := testenv.Engine(logs)
	if err != nil {
		t.Fatal(err)
	}
	key, err := grant.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingStore{recorded: map[string]bool{}}
	reps := make([]*testEnv, n)
	stores := make([]*state.Redis, n)
	for i := range reps {
		rs, err := state.NewRedis(state.RedisOptions{URL: srv.URL(), StateKey: replicaStateKey, Timeout: 150 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = rs
		var st api.Store = rs
		if i == 0 {
			rec.Store = rs
			st = rec
		}
		reps[i] = startEnv(t, fake, eng, hm, logs, false, func(c *Config) {
			c.Key, c.Store, c.MaxConcurrency = key, st, limit
		})
	}
	recordedBy0 := func(nonce string) bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return rec.recorded[nonce]
	}

	var ok, busy, unavailable, replayedAfter atomic.Int64
	var mu sync.Mutex
	var unexpected, unrecorded []string
	jobs := make(chan int)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep := reps[c%n]
			var g grant.Grant
			sealed, wasUnavailable := "", false
			for range jobs {
				if sealed == "" { // busy and unavailable do not spend a grant: reuse it
					wasUnavailable = false
					nonce, err := grant.NewNonce()
					if err != nil {
						panic(err)
					}
					g = grant.Grant{Service: "github", Access: grant.AccessRead, Nonce: nonce}
					sealed = rep.seal(t, g)
				}
				r := rep.op(t, "github", "get_viewer", `{}`, sealed)
				switch {
				case r.status == 200:
					ok.Add(1)
					if c%n == 0 && !recordedBy0(g.Nonce) {
						mu.Lock()
						unrecorded = append(unrecorded, g.Nonce)
						mu.Unlock()
					}
					sealed = ""
				case r.status == 503 && r.err.Error.Code == "busy" && r.header.Get("Retry-After") == "1":
					busy.Add(1)
				case r.status == 503 && r.err.Error.Code == "unavailable" && r.header.Get("Retry-After") == "2":
					unavailable.Add(1)
					wasUnavailable = true
				case r.status == 409 && r.err.Error.Code == "grant_replayed" && wasUnavailable:
					// Redis recorded the nonce but answered past the bound,
					// and neither the take-over nor the clean-up caught it:
					// fail closed, the grant is spent (docs/OPERATING.md).
					// Rare (bounded below); counted.
					replayedAfter.Add(1)
					sealed = ""
				default:
					mu.Lock()
					unexpected = append(unexpected, fmt.Sprintf("%d %s", r.status, r.body))
					mu.Unlock()
				}
			}
		}()
	}
	readyAll := func(want int) error {
		for i, r := range reps {
			if got := r.do(t, http.MethodGet, "/readyz", nil).status; got != want {
				return fmt.Errorf("replica %d: /readyz %d, want %d", i, got, want)
			}
		}
		return nil
	}
	var outageReady error
	for i := range total {
		switch i {
		case total * 3 / 10:
			srv.Pause() // every command now waits past the bound
		case total * 4 / 10:
			srv.Stop() // killed while frozen: what it was sent never runs
			outageReady = readyAll(http.StatusServiceUnavailable)
		case total * 6 / 10:
			srv.Restart() // empty: nothing was persisted
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	t.Logf("%d ops: %d ok, %d busy, %d unavailable, %d replayed after unavailable", total, ok.Load(), busy.Load(), unavailable.Load(), replayedAfter.Load())
	if len(unexpected) > 0 {
		t.Fatalf("%d answers neither a result, busy nor unavailable, e.g. %s", len(unexpected), unexpected[0])
	}
	if replayedAfter.Load() > total/100 {
		t.Fatalf("%d retries after unavailable answered grant_replayed: the clean-up of timed-out records does not work", replayedAfter.Load())
	}
	if ok.Load()+busy.Load()+unavailable.Load()+replayedAfter.Load() != total || ok.Load() == 0 || unavailable.Load() == 0 {
		t.Fatalf("ok %d + busy %d + unavailable %d != %d (or none of ok/unavailable)", ok.Load(), busy.Load(), unavailable.Load(), total)
	}
	if len(unrecorded) > 0 {
		t.Fatalf("%d ops ran without their replay record", len(unrecorded))
	}
	if got := len(fake.Requests()); int64(got) != ok.Load() {
		t.Fatalf("the provider received %d requests for %d successful ops", got, ok.Load())
	}
	if outageReady != nil {
		t.Fatal(outageReady)
	}
	// Back without restarting a replica: ready, and each runs a new grant.
	if err := readyAll(http.StatusOK); err != nil {
		t.Fatal(err)
	}
	for i, r := range reps {
		if a := r.op(t, "github", "get_viewer", `{}`, r.seal(t, grant.Grant{Access: grant.AccessRead})); a.status != 200 {
			t.Fatalf("replica %d after Redis came back: %d %s", i, a.status, a.body)
		}
	}
	m := string(reps[1].do(t, http.MethodGet, "/metrics", nil).body)
	for _, want := range []string{`pinned_sidecar_state_errors_total{op="record"}`, `pinned_sidecar_state_duration_seconds_count{op="record"}`, `pinned_sidecar_ops_total{op="get_viewer",outcome="unavailable",service="github"}`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(m, "state_"))
		}
	}
	if strings.Contains(logs.String(), fakeapi.Token("github")) {
		t.Fatal("the token reached the logs")
	}

	for _, r := range reps {
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range stores {
		_ = s.Close()
	}
	eng.Close(context.Background())
	fake.Close()
	srv.Stop()
	verifyNoLeak(t, ignore)
}

// flakyGrace is an in-memory store whose grace cache and locks fail while
// down is set (the replay records keep working): a store fault in the
// middle of a refresh.
type flakyGrace struct {
	*state.Memory
	down atomic.Bool
}

func (f *flakyGrace) err() error {
	if f.down.Load() {
		return &state.Error{Op: "grace", Err: context.DeadlineExceeded}
	}
	return nil
}

func (f *flakyGrace) Grace(ctx context.Context, key string) ([]byte, bool, error) {
	if err := f.err(); err != nil {
		return nil, false, err
	}
	return f.Memory.Grace(ctx, key)
}

func (f *flakyGrace) TryLock(ctx context.Context, key string, ttl time.Duration) (api.Lock, bool, error) {
	if err := f.err(); err != nil {
		return api.Lock{}, false, err
	}
	return f.Memory.TryLock(ctx, key, ttl)
}

// TestRefreshStoreFault: when the state store fails while an expired pair
// is being rotated, the op is refused with unavailable (503, Retry-After)
// — never reconnect_required, nothing refreshed — and the grant is not
// spent: once the store is back, the same grant runs and rotates.
func TestRefreshStoreFault(t *testing.T) {
	st := &flakyGrace{Memory: state.NewMemory(state.MemoryOptions{})}
	re := newRotEnv(t, brokerOpts{}, func(c *Config) { c.Store = st })
	old := mintPair(t, re.fake, fakeapi.GitHub, 9*time.Hour)
	sealed := re.oauthGrant(t, fakeapi.GitHub, old, true)
	before := refreshes(re.fake, fakeapi.GitHub)
	st.down.Store(true)
	r := re.op(t, fakeapi.GitHub, "get_viewer", `{}`, sealed)
	if r.status != http.StatusServiceUnavailable || r.err.Error.Code != string(CodeUnavailable) || r.header.Get("Retry-After") != "2" {
		t.Fatalf("store down mid-refresh: %d %s (Retry-After %q)", r.status, r.body, r.header.Get("Retry-After"))
	}
	if got := refreshes(re.fake, fakeapi.GitHub) - before; got != 0 {
		t.Fatalf("%d refreshes without the store", got)
	}
	st.down.Store(false)
	r = re.op(t, fakeapi.GitHub, "get_viewer", `{}`, sealed)
	if r.status != http.StatusOK {
		t.Fatalf("the same grant once the store is back: %d %s", r.status, r.body)
	}
	re.openRotated(t, fakeapi.GitHub, rotatedOf(t, r.body))
	if got := refreshes(re.fake, fakeapi.GitHub) - before; got != 1 {
		t.Fatalf("%d refreshes, want 1", got)
	}
}
