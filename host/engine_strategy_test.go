package host

import (
	"runtime"
	"testing"
)

// TestStrategyNamesFallback: the engine says which isolation it runs ops
// with. The default, IsolationReset, is the reset pool on Linux; off
// Linux (no memfd, madvise or /proc/self/pagemap) the engine falls back
// to a fresh instance per op and Strategy says so and why, rather than
// claiming reset. IsolationFresh is always "fresh".
func TestStrategyNamesFallback(t *testing.T) {
	want := IsolationReset
	if runtime.GOOS != "linux" {
		want = IsolationFresh + " (copy-on-write memory needs Linux)"
	}
	if got := newEnv(t, nil).eng.Strategy(); got != want {
		t.Errorf("default isolation: strategy %q, want %q", got, want)
	}
	if got := newEnv(t, func(c *Config) { c.Isolation = IsolationFresh }).eng.Strategy(); got != IsolationFresh {
		t.Errorf("IsolationFresh: strategy %q, want %q", got, IsolationFresh)
	}
}
