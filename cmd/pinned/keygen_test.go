package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/sidecar/grant"
)

func TestRunKeygen(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "bot.key")
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := runKeygen(args, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}

	code, stdout, stderr := run("--out", key)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	pub, err := grant.ParsePublicKey(stdout)
	if err != nil || !strings.HasSuffix(stdout, "\n") || strings.Count(stdout, "\n") != 1 {
		t.Fatalf("stdout %q is not one public key line: %v", stdout, err)
	}
	st, err := os.Stat(key)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v, %v; want mode 0600", st, err)
	}
	k, err := grant.LoadKeyFile(key)
	if err != nil || k.Public() != pub {
		t.Fatalf("the key file does not hold the printed key's private half: %v", err)
	}
	if strings.Contains(stdout+stderr, k.Encode()) {
		t.Fatal("the private key was printed")
	}

	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
		stdout string
	}{
		{name: "refuses to overwrite", args: []string{"--out", key}, code: 1,
			stderr: "pinned keygen: " + key + " already exists; refusing to overwrite a private key (grants sealed to it could no longer be opened)\n" +
				"pinned keygen: choose another --out, or add --force to replace it\n"},
		{name: "missing --out", args: nil, code: 2, stderr: "--out FILE is required"},
		{name: "stray argument", args: []string{"--out", key, "extra"}, code: 2, stderr: `unexpected argument "extra"`},
		{name: "unknown flag", args: []string{"--bits", "4096"}, code: 2, stderr: "pinned keygen: flag provided but not defined: -bits\nrun 'pinned keygen --help' for usage\n"},
		{name: "directory missing", args: []string{"--out", filepath.Join(dir, "no", "such", "bot.key")}, code: 1, stderr: "does not exist: create it first (mkdir -p " + filepath.Join(dir, "no", "such")},
		{name: "help", args: []string{"--help"}, code: 0, stdout: "Usage: pinned keygen --out FILE"},
		{name: "help lists the flags", args: []string{"-h"}, code: 0, stdout: "  -out file\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.stderr)
			}
			if tt.code != 0 && stdout != "" {
				t.Fatalf("stdout %q on failure", stdout)
			}
			if !strings.Contains(stdout, tt.stdout) {
				t.Fatalf("stdout %q lacks %q", stdout, tt.stdout)
			}
		})
	}
	if again, _ := grant.LoadKeyFile(key); again.Public() != pub {
		t.Fatal("a refused overwrite changed the key")
	}

	code, stdout, _ = run("--out", key, "--force")
	if code != 0 {
		t.Fatalf("--force: exit %d", code)
	}
	if k2, _ := grant.LoadKeyFile(key); k2.Public() == pub || k2.Public().String()+"\n" != stdout {
		t.Fatal("--force did not replace the key with the printed one")
	}
}
