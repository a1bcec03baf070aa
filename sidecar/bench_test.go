package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/elevenmessenger/pinned/internal/state"
	"github.com/elevenmessenger/pinned/internal/testing/redistest"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// The state store's benchmarks (make bench; docs/BENCHMARKS.md): what the
// Redis store adds to an op next to the in-memory store, measured in the
// same run, and the throughput of 3 replicas on one Redis next to one
// in-memory sidecar.

// BenchmarkStateRecord is the state work of a plain op alone: recording
// one fresh nonce (the in-memory cache, or SET NX PXAT on a loopback
// Redis), back to back and, on Redis, after 1 ms idle before each record.
func BenchmarkStateRecord(b *testing.B) {
	srv := redistest.Start(b)
	red := redisState(b, srv, 0)
	stores := []struct {
		name string
		s    api.Store
		idle time.Duration // before each record, untimed
	}{
		{"memory", state.NewMemory(state.MemoryOptions{ReplayCacheSize: 10_000_000}), 0},
		{"redis", red, 0},
		// An op records once in about a millisecond of other work, so
		// Redis and this process have slept in between: the same round
		// trip, paying the wake-ups an op's record pays.
		{"redis-after-idle", red, time.Millisecond},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			ctx := context.Background()
			nonces := make([]string, b.N)
			for i := range nonces {
				nonces[i], _ = grant.NewNonce()
			}
			lat := make([]time.Duration, 0, b.N)
			until := time.Now().Add(time.Minute)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if st.idle > 0 {
					b.StopTimer()
					time.Sleep(st.idle)
					b.StartTimer()
				}
				start := time.Now()
				if _, err := st.s.RecordNonce(ctx, nonces[i], until, time.Now()); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			reportP50(b, lat, "p50-ns/op")
		})
	}
}

// BenchmarkStateOverhead runs the same read op end to end (HTTP, grant,
// replay record, sandbox, loopback HTTPS fake) through a sidecar on the
// in-memory store and one on Redis, alternating, and reports each p50 and
// the p50 of the per-op difference: what Redis adds to an op.
func BenchmarkStateOverhead(b *testing.B) {
	srv := redistest.Start(b)
	mem := newTestEnv(b, nil)
	rec := &timedRecord{Redis: redisState(b, srv, 0)}
	red := newTestEnv(b, func(c *Config) { c.Store = rec })
	alternateP50(b, mem, red, "memory-p50-ns", "redis-p50-ns")
	// Where the added time sits: the one round trip, timed inside the op.
	reportP50(b, rec.took, "record-in-op-p50-ns")
}

// timedRecord is the Redis store with each op's round trip timed (its
// RecordNonceBackedOff: the replay record and the back-off read, one
// pipeline).
type timedRecord struct {
	*state.Redis
	mu   sync.Mutex
	took []time.Duration
}

func (t *timedRecord) RecordNonceBackedOff(ctx context.Context, nonce string, until, now time.Time, backoffKey string) (api.Nonce, time.Time, error) {
	start := time.Now()
	n, u, err := t.Redis.RecordNonceBackedOff(ctx, nonce, until, now, backoffKey)
	d := time.Since(start)
	t.mu.Lock()
	t.took = append(t.took, d)
	t.mu.Unlock()
	return n, u, err
}

// alternateP50 runs the same read op through base and with, alternating
// which goes first, and reports each p50 (as baseName and withName) and
// the p50 of the per-op difference (added-p50-ns): what with adds.
func alternateP50(b *testing.B, base, with *testEnv, baseName, withName string) {
	run := func(env *testEnv, sealed string) time.Duration {
		start := time.Now()
		if r := benchOp(b, env, sealed); r != http.StatusOK {
			b.Fatalf("op: %d", r)
		}
		return time.Since(start)
	}
	baseLat := make([]time.Duration, 0, b.N)
	withLat := make([]time.Duration, 0, b.N)
	diff := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		if i%1000 == 0 {
			base.fake.Reset()
		}
		g0 := base.seal(b, grant.Grant{Access: grant.AccessRead})
		g1 := with.seal(b, grant.Grant{Access: grant.AccessRead})
		var x, y time.Duration
		if i%2 == 0 {
			x, y = run(base, g0), run(with, g1)
		} else {
			y, x = run(with, g1), run(base, g0)
		}
		baseLat, withLat, diff = append(baseLat, x), append(withLat, y), append(diff, y-x)
	}
	reportP50(b, baseLat, baseName)
	reportP50(b, withLat, withName)
	reportP50(b, diff, "added-p50-ns")
}

// BenchmarkReplicas is the throughput of ops spread over sidecars from
// parallel clients: 1 sidecar on the in-memory store (the baseline) and 3
// replicas on one Redis, all in this process on the machine's cores.
func BenchmarkReplicas(b *testing.B) {
	srv := redistest.Start(b)
	for _, tc := range []struct {
		name  string
		n     int
		redis bool
	}{{"1-memory", 1, false}, {"3-redis", 3, true}} {
		b.Run(tc.name, func(b *testing.B) {
			key, _ := grant.GenerateKey(nil)
			reps := make([]*testEnv, tc.n)
			for i := range reps {
				reps[i] = newTestEnv(b, func(c *Config) {
					c.Key = key
					c.MaxConcurrency = 256
					if tc.redis {
						c.Store = redisState(b, srv, 0)
					}
				})
			}
			grants := make(chan string, 4096)
			done := make(chan struct{})
			defer close(done)
			go func() { // sealing is the member's work, not the sidecar's
				for {
					g := sealTo(b, grant.Grant{Access: grant.AccessRead}, key.Public())
					select {
					case grants <- g:
					case <-done:
						return
					}
				}
			}()
			var next atomic.Int64
			b.SetParallelism(8)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				rep := reps[int(next.Add(1))%len(reps)]
				for pb.Next() {
					if r := benchOp(b, rep, <-grants); r != http.StatusOK {
						b.Errorf("op: %d", r)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
			reps[0].fake.Reset()
		})
	}
}

// benchOp sends one get_viewer op and returns the status (no testing.TB
// helpers in the hot path).
func benchOp(b testing.TB, env *testEnv, sealed string) int {
	body, _ := json.Marshal(OpRequest{Service: "github", Op: "get_viewer", Grant: sealed})
	req, _ := http.NewRequest(http.MethodPost, env.base+"/v1/ops", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := env.client.Do(req)
	if err != nil {
		b.Error(err)
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func reportP50(b *testing.B, l []time.Duration, unit string) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Nanoseconds()), unit)
}
