package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestConnectMCPUsage: bad usage of connect, connections and mcp exits 2
// with one line saying what to do, before anything is read or served.
func TestConnectMCPUsage(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, v := range []string{"PINNED_MCP_TOKEN", "PINNED_MCP_BROKER_TOKEN"} {
		t.Setenv(v, "") // restored after the test
		os.Unsetenv(v)
	}
	cases := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"no service", []string{"connect"}, "pinned connect: which service? e.g. pinned connect github (services: " + allServices + ")\n"},
		{"unknown service", []string{"connect", "githb"}, "pinned connect: unknown service \"githb\" (did you mean \"github\"?) (services: " + allServices + ")\n"},
		{"unknown service far from any", []string{"connect", "zzfake"}, "pinned connect: unknown service \"zzfake\" (services: " + allServices + ")\n"},
		{"service after the flags", []string{"connect", "--cap", "admin", "github"}, "pinned connect: --cap must be read or write, not \"admin\"\n"},
		{"service between the flags", []string{"connect", "--fake", "githb", "--cap", "write"}, "pinned connect: unknown service \"githb\" (did you mean \"github\"?) (services: " + allServices + ")\n"},
		{"two services", []string{"connect", "github", "stripe"}, "pinned connect: unexpected argument \"stripe\" (see --help)\n"},
		{"two services around a flag", []string{"connect", "github", "--fake", "stripe"}, "pinned connect: unexpected argument \"stripe\" (see --help)\n"},
		{"bad cap", []string{"connect", "github", "--cap", "admin"}, "pinned connect: --cap must be read or write, not \"admin\"\n"},
		{"refresh without oauth", []string{"connect", "github", "--refresh-env", "R", "--token-expires-in", "1h"}, "pinned connect: --refresh-env needs --kind oauth (a refresh token belongs to an OAuth pair)\n"},
		{"fake and connect-to", []string{"connect", "github", "--fake", "--connect-to", "127.0.0.1:1", "--cacert", "x"}, "pinned connect: --fake and --connect-to exclude each other\n"},
		{"remove without service", []string{"connections", "remove"}, "pinned connections remove: which service? e.g. pinned connections remove github\n"},
		{"remove two services", []string{"connections", "remove", "github", "stripe"}, "pinned connections remove: unexpected argument \"stripe\" (see --help)\n"},
		{"stray argument", []string{"connections", "github"}, "pinned connections: unexpected argument \"github\" (flags only; see --help)\n"},
		{"bad tools", []string{"mcp", "--tools", "some"}, "pinned mcp: --tools must be full or compact, not \"some\"\n"},
		{"listen beyond loopback without a token", []string{"mcp", "--listen", "0.0.0.0:8765"}, "pinned mcp: --listen 0.0.0.0:8765 is not a loopback address: set a bearer token (--token-file or PINNED_MCP_TOKEN) so only your agent can use your connections\n"},
		{"broker without token", []string{"mcp", "--broker-url", "http://127.0.0.1:1"}, "pinned mcp: --broker-url needs the broker instance token: --broker-token-file or PINNED_MCP_BROKER_TOKEN\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := dispatch(tc.args, &stdout, &stderr)
			if code != 2 || stderr.String() != tc.stderr || stdout.Len() != 0 {
				t.Errorf("exit %d\nstderr %q\nwant   %q\nstdout %q", code, stderr.String(), tc.stderr, stdout.String())
			}
		})
	}
}

// TestConnectionsEmpty: with no store, connections says how to start.
func TestConnectionsEmpty(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"connections"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "no connections (connect one: pinned connect github)") {
		t.Errorf("exit %d stdout %q stderr %q", code, stdout.String(), stderr.String())
	}
}
