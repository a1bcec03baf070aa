package sidecar

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// TestManifestDrift: a grant or request built against other bytes of a
// manifest than the sidecar's own (a member's catalog synced from a newer
// registry) answers manifest_drift naming both digests, before anything
// reaches the provider, and does not spend the grant.
func TestManifestDrift(t *testing.T) {
	env := newTestEnv(t, nil)
	own := registry.Default().ManifestSHA256("github")
	if len(own) != 64 {
		t.Fatalf("ManifestSHA256(github) = %q", own)
	}
	newer := strings.Repeat("ab", 32) // the digest of a manifest this sidecar never shipped
	opWith := func(sealed, digest string) response {
		return env.do(t, http.MethodPost, "/v1/ops", OpRequest{Service: "github", Op: "get_viewer", Args: json.RawMessage(`{}`), Grant: sealed, ManifestSHA256: digest})
	}
	tests := []struct {
		name          string
		grantDigest   string
		requestDigest string
		status        int
	}{
		{name: "a grant for a newer manifest", grantDigest: newer, status: http.StatusConflict},
		{name: "a request for a newer manifest", requestDigest: newer, status: http.StatusConflict},
		{name: "a request for a newer manifest under a matching grant", grantDigest: own, requestDigest: newer, status: http.StatusConflict},
		{name: "a request in upper case", requestDigest: strings.ToUpper(own), status: http.StatusConflict},
		{name: "a grant for this manifest", grantDigest: own, status: http.StatusOK},
		{name: "a request for this manifest", requestDigest: own, status: http.StatusOK},
		{name: "neither names one", status: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.Reset()
			sealed := env.seal(t, grant.Grant{ManifestSHA256: tt.grantDigest})
			r := opWith(sealed, tt.requestDigest)
			if r.status != tt.status {
				t.Fatalf("status %d %s, want %d", r.status, r.body, tt.status)
			}
			if tt.status == http.StatusOK {
				if len(env.fake.Requests()) != 1 {
					t.Fatalf("the fake received %d requests, want 1", len(env.fake.Requests()))
				}
				return
			}
			bad := tt.requestDigest
			if bad == "" || bad == own {
				bad = tt.grantDigest
			}
			if r.err.Error.Code != "manifest_drift" || !strings.Contains(r.err.Error.Message, "sha256:"+own) || !strings.Contains(r.err.Error.Message, "sha256:"+bad) {
				t.Fatalf("answer %s, want manifest_drift naming sha256:%s and sha256:%s", r.body, own, bad)
			}
			if n := len(env.fake.Requests()); n != 0 {
				t.Fatalf("the fake received %d requests; nothing may run on drift", n)
			}
			// The grant is not spent: without the drifting request digest
			// it runs (or, sealed with drift, drifts again, never replayed).
			again := opWith(sealed, "")
			if tt.grantDigest == newer {
				if again.err.Error.Code != "manifest_drift" {
					t.Fatalf("the drifting grant again: %s, want manifest_drift (not spent, not replayed)", again.body)
				}
			} else if again.status != http.StatusOK {
				t.Fatalf("the grant after a drifting request: %d %s, want it unspent", again.status, again.body)
			}
		})
	}
	// A grant's manifest_sha256 must be a digest.
	if _, err := grant.Seal(&grant.Grant{Service: "github", Secret: "s", ExpiresAt: time.Now().Add(time.Minute), ManifestSHA256: "sha256:" + own}, env.key.Public(), nil); err == nil {
		t.Error("Seal took a manifest_sha256 with a prefix")
	}
	// Consent and the registry document name this sidecar's digests.
	c := env.do(t, http.MethodPost, "/v1/consent", ConsentRequest{Service: "github", Op: "get_viewer"})
	var cr ConsentResponse
	if err := json.Unmarshal(c.body, &cr); err != nil || cr.ManifestSHA256 != own {
		t.Fatalf("consent %s, want manifest_sha256 %s", c.body, own)
	}
	d := env.do(t, http.MethodGet, "/v1/registry", nil)
	var doc struct {
		Digest         string            `json:"digest"`
		ManifestSHA256 map[string]string `json:"manifest_sha256"`
	}
	if err := json.Unmarshal(d.body, &doc); err != nil || doc.ManifestSHA256["github"] != own || doc.Digest != registry.Default().Digest() {
		t.Fatalf("GET /v1/registry: %v %.200s", err, d.body)
	}
}
