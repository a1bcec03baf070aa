//go:build unix

package redistest

import (
	"os"
	"syscall"
	"testing"
)

var sigStop, sigCont os.Signal = syscall.SIGSTOP, syscall.SIGCONT

// signal sends sig to the server process.
func signal(_ testing.TB, p *os.Process, sig os.Signal) { _ = p.Signal(sig) }
