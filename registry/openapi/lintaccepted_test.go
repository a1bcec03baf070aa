package openapi

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/registry"
)

var updateAccepted = flag.Bool("update-accepted", false, "rewrite lint-accepted/*.txt from the lint's findings")

// TestLintAcceptedFiles holds lint-accepted/<id>.txt, which the registry
// repository's CI (registry/ci/check.sh) compares `pinned registry lint`
// with, to the findings TestLintAgainstDescriptions accepts (accepted and
// undescribed, each with its reason there): one line per finding, as the
// CLI prints it from the registry folder, sorted. After a change, run
// go test ./registry/openapi -run TestLintAcceptedFiles -update-accepted.
func TestLintAcceptedFiles(t *testing.T) {
	want := map[string]string{}
	for _, m := range registry.Default().Services() {
		data, err := os.ReadFile(filepath.Join("descriptions", m.ID+".json"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		d, err := Load(m.ID+".json", data)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, name := range m.OpNames() {
			for _, f := range LintOp(d, m, name) {
				lines = append(lines, "manifests/"+m.ID+".json: "+f.String())
			}
		}
		if len(lines) > 0 {
			slices.Sort(lines)
			want[m.ID+".txt"] = strings.Join(lines, "\n") + "\n"
		}
	}
	dir := "lint-accepted"
	if *updateAccepted {
		old, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
		for _, p := range old {
			_ = os.Remove(p)
		}
		for name, text := range want {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	have, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	for _, p := range have {
		if _, ok := want[filepath.Base(p)]; !ok {
			t.Errorf("%s: the lint finds nothing for it now; delete it (-update-accepted)", p)
		}
	}
	for name, text := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != text {
			t.Errorf("%s/%s is not the accepted findings (run with -update-accepted):\nwant\n%s\ngot\n%s", dir, name, text, got)
		}
	}
}
