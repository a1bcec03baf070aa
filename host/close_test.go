package host

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/secret"
)

// TestCloseWhileRunning closes an engine while ops run in it (a shutdown
// past its grace): the ops fail or finish, and the process does not crash
// (no instance memory is unmapped under a running guest).
func TestCloseWhileRunning(t *testing.T) {
	for round := 0; round < 3; round++ {
		env := newEnv(t, nil)
		var wg sync.WaitGroup
		var finished atomic.Int64
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < 20; j++ {
					env.eng.Run(context.Background(), Call{Service: "github", Op: "get_viewer",
						Credential: Credential{Secret: secret.Secret(fakeapi.Token("github"))}})
					finished.Add(1)
				}
			}()
		}
		// Close at a different point of the run each round: after 1, 9
		// and 17 of the 320 ops have finished (the rest are running or
		// waiting to).
		n := int64(1 + round*8)
		testutil.WaitFor(t, 30*time.Second, fmt.Sprintf("%d ops to finish", n), func() bool { return finished.Load() >= n })
		env.eng.Close(context.Background())
		wg.Wait()
	}
}
