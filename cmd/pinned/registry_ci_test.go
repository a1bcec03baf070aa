package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/registry"
)

// copyRegistry copies registry/ as a split registry repository would hold
// it: every file but the Go package's sources, with the provider fake's
// fixtures as fixtures/ (they live in internal/demo/fakeapi/testdata/
// in this repository; registry/README.md, "Layout").
func copyRegistry(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "registry")
	copyTree := func(from, to string, skip func(string) bool) {
		err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(from, p)
			if skip(rel) {
				return nil
			}
			if d.IsDir() {
				return os.MkdirAll(filepath.Join(to, rel), 0o755)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			info, _ := d.Info()
			return os.WriteFile(filepath.Join(to, rel), b, info.Mode().Perm())
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	copyTree(filepath.Join("..", "..", "registry"), dst, func(rel string) bool {
		return strings.HasSuffix(rel, ".go") || strings.HasPrefix(rel, "testdata") || strings.Contains(rel, "/testdata")
	})
	copyTree(filepath.Join("..", "..", "internal", "demo", "fakeapi", "testdata"), filepath.Join(dst, "fixtures"), func(string) bool { return false })
	return dst
}

// TestRegistryCI runs the example CI of a split registry repository
// (registry/ci/check.sh, which registry/.github/workflows/registry.yml
// runs) against a copy of registry/: check, lint against the providers'
// descriptions, fixture replay on the data fake and the snapshot check
// pass; then one changed byte of a manifest fails it.
func TestRegistryCI(t *testing.T) {
	needTools(t, "bash", "diff")
	bin := pinnedBinary(t)
	dir := copyRegistry(t)
	run := func() (string, error) {
		cmd := exec.Command("bash", filepath.Join(dir, "ci", "check.sh"))
		cmd.Env = append(os.Environ(), "PINNED="+bin)
		cmd.Dir = t.TempDir() // the script finds its folder itself
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run()
	if err != nil {
		t.Fatalf("the registry CI failed on an unchanged copy: %v\n%s", err, out)
	}
	n := len(registry.Default().IDs())
	for _, want := range []string{
		"ok: " + strconv.Itoa(n) + " manifests",
		"ok: asana (0 accepted findings)",
		"ops of " + strconv.Itoa(n) + " services ran against their fixtures",
		"ok: snapshot.json is the snapshot of manifests",
		"registry CI: all checks passed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the CI output lacks %q:\n%s", want, out)
		}
	}
	// A reviewed manifest changes by one byte after the snapshot.
	first := registry.Default().IDs()[0]
	p := filepath.Join(dir, "manifests", first+".json")
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, bytes.Replace(b, []byte(`"name": "`), []byte(`"name": "X`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = run()
	if err == nil || !strings.Contains(out, "snapshot.json is stale") || !strings.Contains(out, first+".json: sha256 ") {
		t.Fatalf("the CI passed a changed manifest (err %v):\n%s", err, out)
	}
}
