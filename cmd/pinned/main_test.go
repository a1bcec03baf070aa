package main

import (
	"os"
	"testing"

	"github.com/elevenmessenger/pinned/internal/testing/testenv"
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

// useTestCache points the CLI's compilation cache ($XDG_CACHE_HOME) at
// one directory for every test, kept across runs, so the guest compiles
// once per machine (under -race that takes many seconds).
func useTestCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", testenv.CLICacheHome())
}
