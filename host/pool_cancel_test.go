package host

import (
	"context"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
)

// TestPoolWaitCancelIsCanceled (found by the red team; it guards the fix): an op whose caller cancels while it waits
// for a pool slot (every instance busy with a guest that spins until its
// deadline) fails with sandbox_error "the executor trapped": guestFailure
// maps only DeadlineExceeded, so a cancel in pool.get is blamed on the
// executor. It should be canceled (as for a cancel inside the guest).
func TestPoolWaitCancelIsCanceled(t *testing.T) {
	env := newEnv(t, func(c *Config) {
		c.Guest = hostileGuest(t, "resources")
		c.Timeout = 2 * time.Second
		c.PoolSize = 1
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		env.run("github", "list_issues", `{"attack":"loop"}`) // holds the only instance for 2s
	}()
	// The pool has one slot: once it is taken, the looping op holds it.
	testutil.WaitFor(t, 10*time.Second, "the looping op to take the pool's only slot", func() bool { return env.eng.sb.Stats().InUse == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err := env.runWith(ctx, "github", "list_issues", `{"attack":"after_result"}`, Credential{Secret: "x"})
	<-done
	if err == nil || err.Code != api.CodeCanceled {
		t.Errorf("a caller's cancel while waiting for an instance gave %v, want %s", err, api.CodeCanceled)
	}
}
