package main

import (
	"os"
	"testing"
)

// TestMain points the sidecar's default state directory ($XDG_STATE_HOME)
// at a directory of this run, so sidecars run in process write no state
// file into the home directory of whoever runs the tests.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pinned-test-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
