package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// TestGrantSealOnly: --only seals a resource limit into the grant, with
// the kind given or implied; a kind or service without resources, or a
// name of the wrong shape, is a usage error.
func TestGrantSealOnly(t *testing.T) {
	t.Setenv("PINNED_TOKEN", "ghp_fake_pinned_github_token_000000000000")
	bot, err := grant.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pub := bot.Public().String()
	tests := []struct {
		name      string
		service   string
		only      []string
		code      int
		resources string
		stderr    string
	}{
		{name: "kind implied", service: "github", only: []string{"pinned-tester/notes"}, resources: `{"repository":["pinned-tester/notes"]}`},
		{name: "kind named, twice the same", service: "github", only: []string{"repository=pinned-tester/notes", "pinned-tester/notes", "octo/hello"},
			resources: `{"repository":["pinned-tester/notes","octo/hello"]}`},
		{name: "an unknown kind", service: "github", only: []string{"account=x"}, code: 2, stderr: `service github has no resource kind "account" (kinds: repository)`},
		{name: "the wrong shape", service: "github", only: []string{"notes"}, code: 2, stderr: `"notes": a repository is owner, repo joined by "/"`},
		{name: "a DNSimple account", service: "dnsimple", only: []string{"1385"}, resources: `{"account":["1385"]}`},
		{name: "a DNSimple account by name", service: "dnsimple", only: []string{"account=acme"}, code: 2, stderr: `"acme": accounts are named by their DNSimple id in decimal digits (e.g. 1385)`},
		{name: "a service without resources", service: "stripe", only: []string{"cus_1"}, code: 2, stderr: "service stripe declares no resources"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"seal", "--bot-key", pub, "--service", tt.service, "--access", "read"}
			for _, o := range tt.only {
				args = append(args, "--only", o)
			}
			var stdout, stderr bytes.Buffer
			code := runGrant(args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr.String(), tt.code, tt.stderr)
			}
			if tt.code != 0 {
				return
			}
			g, err := grant.Open(strings.TrimSpace(stdout.String()), bot)
			if err != nil {
				t.Fatal(err)
			}
			if g.Resources != tt.resources {
				t.Errorf("resources %s, want %s", g.Resources, tt.resources)
			}
		})
	}
}
