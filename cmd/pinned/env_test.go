package main

import (
	"testing"

	"github.com/elevenmessenger/pinned/internal/testing/testenv"
)

// useTestCache points the CLI's compilation cache ($XDG_CACHE_HOME) at
// one directory for every test, kept across runs, so the guest compiles
// once per machine (under -race that takes many seconds).
func useTestCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", testenv.CLICacheHome())
}
