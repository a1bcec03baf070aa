package sidecar

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain closes the shared engine and fake after the tests, then fails
// the package when any goroutine outlives them.
func TestMain(m *testing.M) {
	code := m.Run()
	closeShared()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// verifyNoLeak fails t when goroutines other than those opts ignore are
// still running 5 s from now, checking as they end. goleak's own retries
// stop within half a second, but a go-redis pool that lost its server
// keeps one goroutine probing it (ConnPool.tryDial), which sleeps 1 s
// between probes and sees a Close only when it wakes: it would be
// reported on a machine fast enough to finish the test inside that
// second.
func verifyNoLeak(t *testing.T, opts ...goleak.Option) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if goleak.Find(opts...) == nil {
			return
		}
	}
	goleak.VerifyNone(t, opts...)
}
