//go:build !linux

package main

import "os/exec"

// processFaults is not measured off Linux.
func processFaults(int) (int64, bool) { return 0, false }

// exitedFaults is not measured off Linux: -1, unknown.
func exitedFaults(*exec.Cmd) int64 { return -1 }
