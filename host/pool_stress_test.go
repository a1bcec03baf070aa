package host

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/host/api"
)

// TestPoolStressIsolation (found by the red team; it guards the fix): concurrent ops on a small pool mixing markers,
// reads, whole-memory scribbles, memory growth and callers that cancel at
// random moments (discards mid-op): no read ever sees a marker, and the
// engine keeps serving. (Held.)
func TestPoolStressIsolation(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.Guest = hostileGuest(t, "isolation"); c.PoolSize = 2 })
	attacks := []string{"write", "read", "scribble", "grow", "read", "pages"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				a := attacks[rand.IntN(len(attacks))]
				ctx := context.Background()
				var cancel context.CancelFunc = func() {}
				if rand.IntN(4) == 0 {
					ctx, cancel = context.WithTimeout(ctx, time.Duration(rand.IntN(3000))*time.Microsecond)
				}
				_, err := env.runWith(ctx, "github", "list_issues", `{"attack":"`+a+`"}`, Credential{Secret: "x"})
				cancel()
				if err != nil && err.Code != api.CodeUpstreamError && err.Code != api.CodeTimeout && err.Code != api.CodeCanceled && !(a == "scribble" && err.Code == api.CodeSandboxError) && err.Code != api.CodeSandboxError {
					mu.Lock()
					bad = append(bad, a+": "+err.Error())
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if strings.Contains(env.guestOutput(), "marker=found") {
		t.Fatal("an op observed another's marker")
	}
	if len(bad) > 0 {
		t.Fatalf("unexpected errors: %v", bad)
	}
	if _, err := env.run("github", "list_issues", `{"attack":"write_then_read"}`); err != nil && err.Code != api.CodeUpstreamError {
		t.Fatal(err)
	}
	t.Logf("resets %d discards %d", env.eng.sb.Stats().Resets, env.eng.sb.Stats().Discards)
}
