//go:build linux

package sandbox

import (
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestResetLeavesWriteClassPagesWritable (found by the red team): a
// write-class page can be present, anonymous and equal to the image, and
// still not writable without a fault: KSM merges it with an identical
// page (an operator turns KSM on for the process with systemd's
// MemoryKSM= or prctl(PR_SET_MEMORY_MERGE), which children inherit; the
// pool's instances hold identical pages), and a fork shares it
// copy-on-write. The pagemap shows neither. A reset that copies only the
// pages whose bytes differ leaves such a page shared, while it makes
// private every page the op changed: the next op's first write to each
// page then faults or not as the op before it wrote it (the page-fault
// timing channel, TestResetClosesPageFaultChannel in package host). The
// test shares every page with a child process that exits at once (fork
// stands in for KSM, which it cannot turn on), lets the "op" change one
// write-class page, resets, and counts the minor faults of writing every
// write-class page: a reset must leave none.
func TestResetLeavesWriteClassPagesWritable(t *testing.T) {
	eachReset(t, 1, func(t *testing.T, ms []*cowMemory, class []byte) {
		c := ms[0]
		var writes []int
		for i, k := range class {
			if k == pageWrite {
				writes = append(writes, i)
			}
		}
		if len(writes) < 16 {
			t.Fatalf("%d write-class pages, want at least 16", len(writes))
		}
		shareCopyOnWrite(t)
		c.buf[writes[3]*pageSize+5] ^= 0xff // the op's one write
		if _, err := c.reset(class); err != nil {
			t.Fatal(err)
		}
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		before := minorFaults(t)
		for _, i := range writes {
			p := &c.buf[i*pageSize+64]
			*p ^= 0x5a
			*p ^= 0x5a
		}
		// The race detector's shadow pages may fault too: the margin
		// is wide, an unfixed reset faults on nearly every page.
		n := minorFaults(t) - before
		t.Logf("%d minor faults writing %d write-class pages", n, len(writes))
		if n > int64(len(writes)/4) {
			t.Errorf("writing the %d write-class pages after reset took %d minor faults, want none: a page left shared tells the next op which pages the last one wrote", len(writes), n)
		}
	})
}

// minorFaults is the calling thread's minor page faults so far.
func minorFaults(t *testing.T) int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Minflt
}

// shareCopyOnWrite forks a child that exits at once: every private page
// of the process is then write-protected, and its next write faults, as a
// page KSM merged does.
func shareCopyOnWrite(t *testing.T) {
	pid, errno := forkExit()
	if errno != 0 {
		t.Fatalf("fork: %v", errno)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(int(pid), &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		t.Fatalf("child: %v", ws)
	}
}

// forkExit forks (clone without CLONE_VM); the child exits at once,
// touching nothing of the Go runtime, as syscall's forkAndExecInChild
// does.
//
//go:nosplit
//go:norace
func forkExit() (uintptr, syscall.Errno) {
	pid, _, errno := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if errno == 0 && pid == 0 {
		for {
			syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 0, 0, 0)
		}
	}
	return pid, errno
}
