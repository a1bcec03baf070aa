package sidecar

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/testing/testenv"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// TestLoad runs 2,000 ops from 100 concurrent clients against a sidecar
// limited to 50: every request gets a result or busy (never anything
// else, never a queue), the fake never sees more than 50 at once, no
// goroutine outlives shutdown, and no secret reaches the logs.
func TestLoad(t *testing.T) {
	const (
		total   = 2000
		clients = 100
		limit   = 50
	)
	ignore := goleak.IgnoreCurrent()
	// A minute per op: on a busy machine 100 clients under -race can keep
	// an op past the default deadline, and a timeout is not what this
	// test is about.
	hostLogs := &testutil.SyncBuffer{}
	fake, eng, hm, err := testenv.Engine(hostLogs, func(c *host.Config) { c.Timeout = time.Minute })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	env := startEnv(t, fake, eng, hm, hostLogs, true, func(c *Config) { c.MaxConcurrency = limit })
	var now, peak atomic.Int64
	env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
		n := now.Add(1)
		defer now.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(2 * time.Millisecond) // a little upstream latency, so slots fill up
		return false
	})

	// Several services, so several manifests and credentials are in play.
	services := []string{"github", "stripe", "linear"}
	var ok, busy atomic.Int64
	var mu sync.Mutex
	var unexpected []string
	jobs := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	var sealed []string // some grants, to look for in the logs
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := services[c%len(services)]
			g := ""
			for range jobs {
				if g == "" { // a busy answer does not spend a grant: reuse it
					g = env.seal(t, grant.Grant{Service: svc, Access: grant.AccessRead})
					if c%10 == 0 {
						mu.Lock()
						sealed = append(sealed, g)
						mu.Unlock()
					}
				}
				r := env.op(t, svc, "get_viewer", `{}`, g)
				switch {
				case r.status == 200:
					ok.Add(1)
					g = ""
				case r.status == 503 && r.err.Error.Code == "busy" && r.header.Get("Retry-After") == "1":
					busy.Add(1)
				default:
					mu.Lock()
					unexpected = append(unexpected, fmt.Sprintf("%d %s", r.status, r.body))
					mu.Unlock()
				}
			}
		}()
	}
	for i := range total {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	t.Logf("%d ops in %s: %d ok, %d busy; peak upstream concurrency %d", total, elapsed.Round(time.Millisecond), ok.Load(), busy.Load(), peak.Load())
	if len(unexpected) > 0 {
		t.Fatalf("%d answers neither a result nor busy, e.g. %s", len(unexpected), unexpected[0])
	}
	if ok.Load()+busy.Load() != total || ok.Load() == 0 {
		t.Fatalf("ok %d + busy %d != %d", ok.Load(), busy.Load(), total)
	}
	if peak.Load() > limit {
		t.Fatalf("the fake saw %d requests at once; the limit is %d", peak.Load(), limit)
	}
	if got := len(env.fake.Requests()); int64(got) != ok.Load() {
		t.Fatalf("the fake received %d requests for %d successful ops", got, ok.Load())
	}

	if err := env.stop(); err != nil {
		t.Fatal(err)
	}
	env.fake.Close()
	verifyNoLeak(t, ignore)

	logs := env.allLogs()
	if n := strings.Count(logs, `"event":"access"`); n != total {
		t.Fatalf("%d access events for %d requests", n, total)
	}
	secrets := append([]string{fakeapi.Token("github"), fakeapi.Token("stripe"), fakeapi.Token("linear"), env.key.Encode()}, sealed...)
	assertNoSecrets(t, logs, secrets...)
}
