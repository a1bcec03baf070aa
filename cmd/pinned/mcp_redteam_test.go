package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestRedteamMCPListenNeedsToken: `pinned mcp --listen` without a bearer
// token is a usage error on loopback too. Loopback is reachable by every
// local user and process, and an MCP client of theirs could declare
// elicitation, answer its own confirmations and run your write ops; the
// 0600 store would be bypassed through the port.
func TestRedteamMCPListenNeedsToken(t *testing.T) {
	t.Setenv("PINNED_MCP_TOKEN", "x")
	os.Unsetenv("PINNED_MCP_TOKEN")
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", "localhost:0", "0.0.0.0:0", ":0"} {
		t.Run(addr, func(t *testing.T) {
			var out, errs bytes.Buffer
			code := runMCP([]string{"--listen", addr}, &out, &errs)
			if code != 2 || !strings.Contains(errs.String(), "--listen needs a bearer token") || strings.Count(strings.TrimSpace(errs.String()), "\n") != 0 {
				t.Errorf("exit %d, stderr %q", code, errs.String())
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q", out.String())
			}
		})
	}
}
