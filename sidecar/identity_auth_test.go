package sidecar

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/secret"
)

// TestIdentityNeedsCallerToken: GET /v1/identity (the key pinned
// web seals to) is behind the caller token like every /v1 endpoint; its
// answer is exactly the public key and the registry digest.
func TestIdentityNeedsCallerToken(t *testing.T) {
	const tok = "identity-caller-token-0123456789"
	env := newTestEnv(t, func(c *Config) { c.CallerToken = secret.Secret(tok) })
	for _, auth := range []string{"", "Bearer wrong-token-0123456789abcdef", "Bearer " + tok + "x"} {
		req, _ := http.NewRequest("GET", env.base+"/v1/identity", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := env.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%q: status %d", auth, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest("GET", env.base+"/v1/identity", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := env.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m["public_key"] != env.key.Public().String() || !strings.HasPrefix(m["registry"].(string), "sha256:") {
		t.Errorf("identity %v", m)
	}
}
