package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// processFaults returns the page faults (minor and major) that process
// pid has taken so far, from /proc/PID/stat (proc(5): fields 10 minflt
// and 12 majflt). ok is false when the file cannot be read or parsed.
func processFaults(pid int) (faults int64, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	return statFaults(b)
}

// exitedFaults returns the page faults of an exited command, from its
// rusage (getrusage(2): ru_minflt and ru_majflt); -1 when unknown.
func exitedFaults(cmd *exec.Cmd) int64 {
	if cmd.ProcessState == nil {
		return -1
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return -1
	}
	return ru.Minflt + ru.Majflt
}
