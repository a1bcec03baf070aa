package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/elevenmessenger/pinned/guest"
)

// TestPlanCache: the instrumented guest is read back from the cache
// directory when its checksum holds, and recomputed (and rewritten) when
// the cached module is damaged or its record unreadable.
func TestPlanCache(t *testing.T) {
	if !cowSupported {
		t.Skip("the reset strategy is unavailable here, so not_resettable cannot mark a cached record")
	}
	w := guest.Wasm()
	sum := guest.SHA256()
	if sum != sha256.Sum256(w) {
		t.Fatal("guest.SHA256 is not the embedded module's digest")
	}
	want, err := planGuest(w)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	base := filepath.Join(dir, "pinned-plan-v"+planCacheVersion+"-"+hex.EncodeToString(sum[:]))
	if _, err := planGuestCached(w, sum, dir); err != nil {
		t.Fatal(err)
	}
	// Mark the record, so a plan read from the cache is recognisable.
	mark := func(t *testing.T) {
		t.Helper()
		b, err := os.ReadFile(base + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		m["not_resettable"] = "marker"
		if b, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(base+".json", b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		damage func(t *testing.T)
		cached bool // the plan must come from the cache
	}{
		{"intact", func(*testing.T) {}, true},
		{"module byte flipped", func(t *testing.T) {
			b, _ := os.ReadFile(base + ".wasm")
			b[len(b)/2] ^= 1
			os.WriteFile(base+".wasm", b, 0o600)
		}, false},
		{"module truncated", func(t *testing.T) {
			b, _ := os.ReadFile(base + ".wasm")
			os.WriteFile(base+".wasm", b[:len(b)-1], 0o600)
		}, false},
		{"module missing", func(t *testing.T) { os.Remove(base + ".wasm") }, false},
		{"record garbage", func(t *testing.T) { os.WriteFile(base+".json", []byte("{"), 0o600) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := planGuestCached(w, sum, dir); err != nil { // restore a good entry
				t.Fatal(err)
			}
			mark(t)
			tt.damage(t)
			got, err := planGuestCached(w, sum, dir)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.wasm, want.wasm) {
				t.Fatal("the plan's module differs from a fresh instrumentation")
			}
			fromCache := got.notResettable == "marker"
			if fromCache != tt.cached {
				t.Fatalf("read from the cache: %v, want %v", fromCache, tt.cached)
			}
			if !tt.cached {
				// Rewritten: the next read is a hit with the true record.
				again, err := planGuestCached(w, sum, dir)
				if err != nil {
					t.Fatal(err)
				}
				if again.notResettable != want.notResettable || !bytes.Equal(again.wasm, want.wasm) {
					t.Fatalf("after a rewrite: not_resettable %q, want %q", again.notResettable, want.notResettable)
				}
			}
		})
	}
}
