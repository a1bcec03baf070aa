package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/internal/testing/redistest"
	"github.com/elevenmessenger/pinned/internal/testing/testenv"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
)

// TestRunSidecarRedis: with --redis-url the sidecar checks Redis at
// start: a Redis that may evict keys (replay records) is refused; one
// with noeviction is used (the log says so); one that does not answer yet
// is only logged (the sidecar serves not-ready until it answers). The
// password comes from a file and reaches no log.
func TestRunSidecarRedis(t *testing.T) {
	clearSidecarEnv(t)
	t.Setenv("PINNED_SIDECAR_CACHE_DIR", testenv.CacheDir())
	dir := t.TempDir()
	key, _ := writeKey(t, dir)
	stateKey := filepath.Join(dir, "state.key")
	_ = os.WriteFile(stateKey, []byte(strings.Repeat("0f", 32)+"\n"), 0o600)
	pwFile := filepath.Join(dir, "redis.pw")
	_ = os.WriteFile(pwFile, []byte("cli-test-redis-password\n"), 0o600)
	srv := redistest.StartArgs(t, "--requirepass", "cli-test-redis-password")
	run := func(args ...string) (int, string) {
		var stdout, stderr testutil.SyncBuffer
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // stop as soon as it serves
		code := runSidecarContext(ctx, append([]string{"--key-file", key, "--listen", "127.0.0.1:0", "--state-key-file", stateKey, "--redis-password-file", pwFile}, args...), &stdout, &stderr)
		return code, stderr.String()
	}
	tests := []struct {
		name   string
		policy string
		url    string
		code   int
		want   string
	}{
		{name: "evicting redis refused", policy: "allkeys-lru", url: srv.URL(), code: 1, want: `maxmemory-policy is "allkeys-lru"`},
		{name: "volatile eviction refused", policy: "volatile-ttl", url: srv.URL(), code: 1, want: "set maxmemory-policy noeviction"},
		{name: "noeviction", policy: "noeviction", url: srv.URL(), code: 0, want: `"store":"redis","addr":"tcp:` + srv.Addr()},
		{name: "redis away", policy: "noeviction", url: "redis://127.0.0.1:1", code: 0, want: "Redis does not answer yet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := srv.Do("CONFIG", "SET", "maxmemory-policy", tt.policy)
			if err != nil || r != "+OK" {
				t.Fatalf("CONFIG SET: %q %v", r, err)
			}
			code, logs := run("--redis-url", tt.url)
			if code != tt.code || !strings.Contains(logs, tt.want) {
				t.Fatalf("exit %d, stderr %s; want %d and %q", code, logs, tt.code, tt.want)
			}
			if strings.Contains(logs, "cli-test-redis-password") || strings.Contains(logs, strings.Repeat("0f", 32)) {
				t.Fatal("a secret reached the log")
			}
		})
	}
}
