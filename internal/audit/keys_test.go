package audit

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.key")
	k, created, err := ReadOrCreateKey(path)
	if err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	k2, created, err := ReadOrCreateKey(path)
	if err != nil || created || !bytes.Equal(k, k2) {
		t.Fatalf("read back: %v %v", created, err)
	}
	pub, err := ParsePublicKey(path + ".pub")
	if err != nil || !bytes.Equal(pub, []byte(k.Public().(ed25519.PublicKey))) {
		t.Fatalf("public key file: %v", err)
	}
	pub2, err := ParsePublicKey(base64.StdEncoding.EncodeToString(pub))
	if err != nil || !bytes.Equal(pub2, pub) {
		t.Fatalf("base64 public key: %v", err)
	}
	os.Chmod(path, 0o644)
	if _, err := ReadKey(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a world-readable key: %v", err)
	}
	tests := []struct{ name, in string }{
		{name: "short base64", in: "AAAA"},
		{name: "private key file as public", in: path},
		{name: "garbage", in: "not a key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParsePublicKey(tt.in); err == nil {
				t.Fatalf("ParsePublicKey(%q) succeeded", tt.in)
			}
		})
	}
}
