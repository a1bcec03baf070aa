//go:build !unix

package redistest

import (
	"os"
	"testing"
)

var sigStop, sigCont os.Signal

// signal fails the test: freezing a process with SIGSTOP exists only on
// unix systems, where redis-server runs.
func signal(t testing.TB, _ *os.Process, _ os.Signal) {
	t.Helper()
	t.Fatal("redistest: Pause and Resume need SIGSTOP/SIGCONT (unix only)")
}
