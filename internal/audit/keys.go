package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ReadKey reads a sealing key: an Ed25519 private key in a PEM "PRIVATE
// KEY" block (PKCS #8, as `openssl genpkey -algorithm ed25519` writes
// it). The file must not be readable by group or others.
func ReadKey(path string) (ed25519.PrivateKey, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable by group or others (mode %04o): chmod 600 it", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s holds no PEM PRIVATE KEY block (create one with pinned audit keygen)", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s holds a %T, not an Ed25519 key", path, k)
	}
	return ek, nil
}

// CreateKey writes a fresh sealing key to path (mode 0600; an existing
// file is an error matching fs.ErrExist) and its public key beside it
// (path + ".pub", PEM "PUBLIC KEY"). The key appears whole or not at all:
// it is written to a temporary file and linked into place.
func CreateKey(path string) (ed25519.PrivateKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(path); err == nil {
		return nil, &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".audit-key-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := pem.Encode(tmp, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path+".pub", EncodePublicKey(pub), 0o644); err != nil {
		return nil, err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
		}
		return nil, err
	}
	return priv, nil
}

// ReadOrCreateKey reads the key at path, or creates it there when no file
// exists (the default key in the state directory). Two processes
// starting at once agree on one key.
func ReadOrCreateKey(path string) (k ed25519.PrivateKey, created bool, err error) {
	k, err = ReadKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return k, false, err
	}
	k, err = CreateKey(path)
	if errors.Is(err, fs.ErrExist) {
		k, err = ReadKey(path) // another process made it first
		return k, false, err
	}
	return k, err == nil, err
}

// EncodePublicKey is pub as a PEM "PUBLIC KEY" block (PKIX).
func EncodePublicKey(pub ed25519.PublicKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// ParsePublicKey reads a public key given as a file holding a PEM
// "PUBLIC KEY" block, or as the standard base64 of its 32 bytes (what a
// seal's key member holds).
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	if b, err := os.ReadFile(s); err == nil {
		blk, _ := pem.Decode(b)
		if blk == nil || blk.Type != "PUBLIC KEY" {
			return nil, fmt.Errorf("%s holds no PEM PUBLIC KEY block", s)
		}
		k, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s, err)
		}
		ek, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("%s holds a %T, not an Ed25519 key", s, k)
		}
		return ek, nil
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("the public key %q is neither a PEM file nor the base64 of 32 bytes", clipArg(s))
	}
	return ed25519.PublicKey(b), nil
}

func clipArg(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
