package layering

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var (
	// docTestName is a test, fuzz target, benchmark or example named in
	// prose; a trailing "*" makes it a prefix ("TestPaginate*").
	docTestName = regexp.MustCompile(`\b((?:Test|Fuzz|Benchmark|Example)[A-Z][A-Za-z0-9_]*)(\*?)`)
	testFunc    = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark|Example)[A-Za-z0-9_]*)\(`)
)

// TestDocsNameRealTests fails when a document names a test that does not
// exist. docs/SECURITY.md names the test proving each MUST, the closing
// notes and RATIONALE.md cite tests as evidence: a renamed or deleted test
// must take its citations with it.
func TestDocsNameRealTests(t *testing.T) {
	root, err := filepath.Abs("../../..") // this package is internal/testing/layering
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string]bool{}
	var docs []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(p, "_test.go"):
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range testFunc.FindAllSubmatch(b, -1) {
				funcs[string(m[1])] = true
			}
		case strings.HasSuffix(p, ".md"):
			docs = append(docs, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(funcs) < 100 || len(docs) < 5 {
		t.Fatalf("found %d test functions and %d documents under %s: wrong root?", len(funcs), len(docs), root)
	}
	sort.Strings(docs)
	named := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range docTestName.FindAllStringSubmatch(line, -1) {
				named++
				if name, prefix := m[1], m[2] == "*"; !exists(funcs, name, prefix) {
					t.Errorf("%s:%d names %s%s, which is no test function in the repository", rel, i+1, name, m[2])
				}
			}
		}
	}
	if named < 100 {
		t.Fatalf("only %d test names found in %d documents: the pattern is broken", named, len(docs))
	}
}

func exists(funcs map[string]bool, name string, prefix bool) bool {
	if !prefix {
		return funcs[name]
	}
	for f := range funcs {
		if strings.HasPrefix(f, name) {
			return true
		}
	}
	return false
}
