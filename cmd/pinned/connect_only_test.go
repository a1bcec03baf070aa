package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/internal/connstore"
)

// TestConnectOnly: pinned connect --only stores the resource limit in the
// sealed connection, says it, and pinned connections lists it; a kind the
// manifest does not declare or a name of the wrong shape is a usage error
// and nothing is stored.
func TestConnectOnly(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("PINNED_TEST_TOKEN", "ghp_fake_pinned_github_token_000000000000")
	connect := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := dispatch(append([]string{"connect", "github", "--fake", "--token-env", "PINNED_TEST_TOKEN"}, args...), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	for _, tt := range []struct {
		name, only, stderr string
	}{
		{"an unknown kind", "account=x", `pinned connect: --only: service github has no resource kind "account" (kinds: repository)` + "\n"},
		{"the wrong shape", "notes", `pinned connect: --only: "notes": a repository is owner, repo joined by "/"` + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := connect("--only", tt.only)
			if code != 2 || stderr != tt.stderr || stdout != "" {
				t.Fatalf("exit %d stdout %q stderr %q; want 2 and %q", code, stdout, stderr, tt.stderr)
			}
		})
	}
	code, stdout, stderr := connect("--cap", "write", "--only", "pinned-tester/notes", "--only", "repository=octo/hello")
	if code != 0 || !strings.Contains(stdout, "limited to repository pinned-tester/notes, octo/hello: a call naming anything else is refused before it is sent\n") {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	storeDir, err := connstore.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	store, err := connstore.Open(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := store.Get("github")
	if err != nil || c.Resources != `{"repository":["pinned-tester/notes","octo/hello"]}` {
		t.Fatalf("stored %q, %v", c.Resources, err)
	}
	var out, errOut bytes.Buffer
	if code := dispatch([]string{"connections"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "LIMITED TO") || !strings.Contains(out.String(), "repository pinned-tester/notes, octo/hello") {
		t.Fatalf("connections: exit %d %q %q", code, out.String(), errOut.String())
	}
}
