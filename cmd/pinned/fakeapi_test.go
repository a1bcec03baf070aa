package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/internal/testing/testutil"
)

func TestFakeListenAddr(t *testing.T) {
	tests := []struct{ in, want string }{
		{"localhost:8443", "127.0.0.1:8443"},
		{"LocalHost:0", "127.0.0.1:0"},
		{"127.0.0.1:8443", "127.0.0.1:8443"},
		{"[::1]:8443", "[::1]:8443"},
		{"10.0.0.1:8443", "10.0.0.1:8443"},
		{"localhost", "localhost"},
		{"localhost.example.com:80", "localhost.example.com:80"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := fakeListenAddr(tt.in); got != tt.want {
				t.Errorf("fakeListenAddr(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestRunFakeAPIListen: the fake listens on loopback only, localhost
// included (as 127.0.0.1).
func TestRunFakeAPIListen(t *testing.T) {
	const refused = ": the fake serves fixed credentials and listens on loopback only (e.g. 127.0.0.1:8443 or localhost:8443)\n"
	tests := []struct {
		name   string
		listen string
		code   int
		stdout string // regexp
		stderr string // whole stderr
	}{
		{name: "localhost", listen: "localhost:0", code: 0, stdout: `serving the provider fake on 127\.0\.0\.1:\d+ `},
		{name: "127.0.0.1", listen: "127.0.0.1:0", code: 0, stdout: `serving the provider fake on 127\.0\.0\.1:\d+ `},
		{name: "private address", listen: "10.0.0.1:8443", code: 2, stderr: "pinned fakeapi: refusing --listen 10.0.0.1:8443" + refused},
		{name: "every interface", listen: "0.0.0.0:8443", code: 2, stderr: "pinned fakeapi: refusing --listen 0.0.0.0:8443" + refused},
		{name: "empty host", listen: ":8443", code: 2, stderr: "pinned fakeapi: refusing --listen :8443" + refused},
		{name: "host name", listen: "example.com:8443", code: 2, stderr: "pinned fakeapi: refusing --listen example.com:8443" + refused},
		{name: "localhost without a port", listen: "localhost", code: 2, stderr: "pinned fakeapi: --listen localhost: want host:port on loopback, e.g. 127.0.0.1:8443 (port 0 picks a free one)\n"},
		{name: "a port alone", listen: "30444", code: 2, stderr: "pinned fakeapi: --listen 30444: a port alone is not an address: use 127.0.0.1:30444\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // stop as soon as it serves
			var stdout, stderr testutil.SyncBuffer
			code := runFakeAPIContext(ctx, []string{"--listen", tt.listen}, &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tt.code, stderr.String())
			}
			if tt.code != 0 {
				if stderr.String() != tt.stderr || stdout.String() != "" {
					t.Errorf("stderr %q, stdout %q; want stderr %q", stderr.String(), stdout.String(), tt.stderr)
				}
				return
			}
			if !regexp.MustCompile(tt.stdout).MatchString(stdout.String()) || !strings.HasSuffix(stdout.String(), "pinned fakeapi: stopping\n") {
				t.Errorf("stdout %q does not match %q", stdout.String(), tt.stdout)
			}
		})
	}
}
