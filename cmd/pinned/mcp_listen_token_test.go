package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestMCPListenNeedsToken: `pinned mcp --listen` without a bearer
// token is a usage error on loopback too. Loopback is reachable by every
// local user and process, and an MCP client of theirs could declare
// elicitation, answer its own confirmations and run your write ops; the
// 0600 store would be bypassed through the port.
func TestMCPListenNeedsToken(t *testing.T) {
	t.Setenv("PINNED_MCP_TOKEN", "x")
	os.Unsetenv("PINNED_MCP_TOKEN")
	for _, tc := range []struct{ addr, want string }{
		{"127.0.0.1:0", "--listen 127.0.0.1:0 needs a bearer token too: every user and process on this machine can reach a loopback port"},
		{"[::1]:0", "--listen [::1]:0 needs a bearer token too"},
		{"localhost:0", "--listen localhost:0 needs a bearer token too"},
		{"0.0.0.0:0", "--listen 0.0.0.0:0 is not a loopback address: set a bearer token"},
		{":0", "--listen :0 is not a loopback address: set a bearer token"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			var out, errs bytes.Buffer
			code := runMCP([]string{"--listen", tc.addr}, &out, &errs)
			if code != 2 || !strings.Contains(errs.String(), tc.want) || strings.Count(strings.TrimSpace(errs.String()), "\n") != 0 {
				t.Errorf("exit %d, stderr %q", code, errs.String())
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q", out.String())
			}
		})
	}
}
