package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/registry"
)

// TestRegistrySnapshotCommands walks a registry folder through keygen,
// snapshot, sign and verify, then changes one byte of a manifest and
// expects verify --dir and snapshot --check to name it.
func TestRegistrySnapshotCommands(t *testing.T) {
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	if err := os.Mkdir(manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	reg := registry.Default()
	for _, id := range reg.IDs()[:3] {
		if err := os.WriteFile(filepath.Join(manifests, id+".json"), reg.Raw(id), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	first := reg.IDs()[0]
	archive := filepath.Join(dir, "snapshot.json")
	key := filepath.Join(dir, "reg")
	run := func(t *testing.T, want int, args ...string) (string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := runRegistry(args, &stdout, &stderr); code != want {
			t.Fatalf("pinned registry %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, stdout.String(), stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	out, _ := run(t, 0, "keygen", "--out", key)
	if !strings.HasPrefix(out, "untrusted comment: minisign public key: ") {
		t.Fatalf("keygen printed %q", out)
	}
	if st, err := os.Stat(key + ".key"); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the secret key: %v, mode %v; want 0600", err, st.Mode())
	}
	_, errOut := run(t, 1, "keygen", "--out", key)
	if !strings.Contains(errOut, "exists") {
		t.Errorf("keygen over an existing key: %q", errOut)
	}
	_, errOut = run(t, 0, "snapshot", manifests, "-o", archive)
	if !strings.Contains(errOut, "version 1, 3 manifests") {
		t.Errorf("snapshot: %q", errOut)
	}
	run(t, 0, "snapshot", manifests, "-o", archive, "--check")
	run(t, 0, "sign", "--key", key+".key", archive)
	out, _ = run(t, 0, "verify", "--pubkey", key+".pub", archive, "--dir", manifests)
	if !strings.HasPrefix(out, "ok: snapshot version 1 sha256:") || !strings.Contains(out, "(3 manifests)") {
		t.Errorf("verify: %q", out)
	}

	// One byte of one manifest changes in the folder.
	p := filepath.Join(manifests, first+".json")
	b, _ := os.ReadFile(p)
	changed := bytes.Replace(b, []byte(`"name": "`), []byte(`"name": "X`), 1) // still a valid manifest
	if err := os.WriteFile(p, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut = run(t, 1, "verify", "--pubkey", key+".pub", archive, "--dir", manifests)
	if !strings.Contains(errOut, "mismatch") || !strings.Contains(errOut, first+".json: sha256 ") {
		t.Errorf("verify --dir after a change: %q", errOut)
	}
	_, errOut = run(t, 1, "snapshot", manifests, "-o", archive, "--check")
	if !strings.Contains(errOut, "is stale") || !strings.Contains(errOut, first+".json: sha256 ") {
		t.Errorf("snapshot --check after a change: %q", errOut)
	}
	_ = os.WriteFile(p, b, 0o644) // back; a valid change instead: a new manifest file
	if err := os.WriteFile(filepath.Join(manifests, reg.IDs()[3]+".json"), reg.Raw(reg.IDs()[3]), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut = run(t, 0, "snapshot", manifests, "-o", archive)
	if !strings.Contains(errOut, "version 2, 4 manifests") {
		t.Errorf("snapshot after a change: %q (want the version bumped)", errOut)
	}
	// The old signature no longer covers the archive.
	_, errOut = run(t, 1, "verify", "--pubkey", key+".pub", archive)
	if !strings.Contains(errOut, "bad_signature") {
		t.Errorf("verify with a stale signature: %q", errOut)
	}
	// A key given as its base64 line; another key is refused.
	pubText, _ := os.ReadFile(key + ".pub")
	lines := strings.Split(strings.TrimSpace(string(pubText)), "\n")
	run(t, 0, "sign", "--key", key+".key", archive)
	run(t, 0, "verify", "--pubkey", lines[len(lines)-1], archive)
	_, errOut = run(t, 1, "verify", "--pubkey", filepath.Join("..", "..", "registry", "snapshot.pub"), archive)
	if !strings.Contains(errOut, "bad_signature") {
		t.Errorf("verify with another key: %q", errOut)
	}
	run(t, 2, "verify", archive)
	run(t, 2, "sign", archive)
}

// TestEmbeddedSnapshotUpToDate is make check's guard, in make test too:
// registry/snapshot.json is exactly the snapshot of registry/manifests and
// its signature verifies with registry/snapshot.pub.
func TestEmbeddedSnapshotUpToDate(t *testing.T) {
	root := filepath.Join("..", "..", "registry")
	var stdout, stderr bytes.Buffer
	if code := runRegistry([]string{"snapshot", filepath.Join(root, "manifests"), "-o", filepath.Join(root, "snapshot.json"), "--check"}, &stdout, &stderr); code != 0 {
		t.Fatalf("registry/snapshot.json is stale (run make snapshot):\n%s", stderr.String())
	}
	stdout.Reset()
	if code := runRegistry([]string{"verify", "--pubkey", filepath.Join(root, "snapshot.pub"), filepath.Join(root, "snapshot.json"), "--dir", filepath.Join(root, "manifests")}, &stdout, &stderr); code != 0 {
		t.Fatalf("registry/snapshot.json does not verify:\n%s", stderr.String())
	}
	if want := registry.Default().Digest(); !strings.Contains(stdout.String(), want) {
		t.Errorf("verify printed %q, want the registry digest %s", stdout.String(), want)
	}
}
