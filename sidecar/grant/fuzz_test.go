package grant

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzOpen feeds Open arbitrary text with a fixed key (testdata/fuzz
// holds sealed grants for it). Open must never panic, must fail only with
// ErrInvalid, and whatever it accepts must survive Seal and Open again
// unchanged.
func FuzzOpen(f *testing.F) {
	k := fixedKey(f)
	f.Add("")
	f.Add("AAAA")
	f.Add(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 100)))
	f.Add(sealRaw(f, `{"v":1,"service":"github","secret":"s","expires_at":"2026-11-30T10:02:00Z","nonce":"0123456789abcdef"}`, k.Public()))
	f.Add(sealRaw(f, `{"v":1,"service":"github","access":"write","kind":"oauth","secret":"s","refresh":"r","token_expires_at":"2026-11-30T11:00:00Z","expires_at":"2026-11-30T10:02:00+01:00","nonce":"0123456789abcdef","op":"create_issue","args_sha256":"`+
		"0000000000000000000000000000000000000000000000000000000000000000"+`"}`, k.Public()))
	f.Add(sealRaw(f, `{"v":1,"service":"github","secret":"s","expires_at":"2026-11-30T10:02:00Z","nonce":"0123456789abcdef","extra":1}`, k.Public()))
	f.Fuzz(func(t *testing.T, sealed string) {
		g, err := Open(sealed, k)
		if err != nil {
			if g != nil || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Open = %v, %v; want nil and ErrInvalid", g, err)
			}
			return
		}
		again, err := Seal(g, k.Public(), nil)
		if err != nil {
			t.Fatalf("Seal of an opened grant: %v", err)
		}
		g2, err := Open(again, k)
		if err != nil {
			t.Fatalf("Open of a resealed grant: %v", err)
		}
		if !g2.ExpiresAt.Equal(g.ExpiresAt) {
			t.Fatalf("expiry changed: %v -> %v", g.ExpiresAt, g2.ExpiresAt)
		}
		g2.ExpiresAt = g.ExpiresAt
		if *g2 != *g {
			t.Fatalf("round trip changed the grant: %+v -> %+v", *g, *g2)
		}
	})
}

// FuzzOpenPlaintext seals arbitrary plaintext to the fixed key, so the
// fuzzer reaches the JSON checks behind the box (FuzzOpen's mutations
// rarely survive the box's authentication).
func FuzzOpenPlaintext(f *testing.F) {
	k := fixedKey(f)
	for _, s := range []string{
		`{"v":1,"service":"github","secret":"s","expires_at":"2026-11-30T10:02:00Z","nonce":"0123456789abcdef"}`,
		`{"v":1,"service":"github","access":"write","kind":"oauth","secret":"s","expires_at":"2026-11-30T10:02:00Z","nonce":"0123456789abcdef","op":"a","args_sha256":"` + strings.Repeat("0", 64) + `"}`,
		`{"v":1,"service":"github","secret":"s","expires_at":"2026-11-30T10:02:00Z","nonce":"0123456789abcdef","v":1}`,
		`[]`, `null`, `{"v":1e0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, plain []byte) {
		g, err := Open(sealRaw(t, string(plain), k.Public()), k)
		if err != nil {
			if g != nil || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Open = %v, %v; want nil and ErrInvalid", g, err)
			}
			return
		}
		if err := g.Validate(); err != nil {
			t.Fatalf("Open accepted a grant Validate refuses: %v", err)
		}
		if _, err := Seal(g, k.Public(), nil); err != nil {
			t.Fatalf("Seal refuses what Open accepted: %v", err)
		}
	})
}

// TestFuzzSeedsOpen keeps the committed corpus meaningful: the valid_*
// seeds open with the fixed key, the others do not.
func TestFuzzSeedsOpen(t *testing.T) {
	k := fixedKey(t)
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzOpen", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no seed corpus: %v", err)
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			if len(lines) != 2 || lines[0] != "go test fuzz v1" {
				t.Fatalf("not a fuzz corpus file: %q", data)
			}
			sealed, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "string("), ")"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Open(sealed, k)
			if want := strings.HasPrefix(name, "valid_"); (err == nil) != want {
				t.Fatalf("Open = %v; want success %v", err, want)
			}
		})
	}
}
