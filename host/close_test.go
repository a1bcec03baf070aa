package host

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/fakeapi"
)

// TestCloseWhileRunning closes an engine while ops run in it (a shutdown
// past its grace): the ops fail or finish, and the process does not crash
// (no instance memory is unmapped under a running guest).
func TestCloseWhileRunning(t *testing.T) {
	for round := 0; round < 3; round++ {
		env := newEnv(t, nil)
		var wg sync.WaitGroup
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < 20; j++ {
					env.eng.Run(context.Background(), Call{Service: "github", Op: "get_viewer",
						Credential: Credential{Secret: Secret(fakeapi.Token("github"))}})
				}
			}()
		}
		time.Sleep(time.Duration(20+round*30) * time.Millisecond)
		env.eng.Close(context.Background())
		wg.Wait()
	}
}
