package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestDeployExamples: the examples under deploy/ (docs/OPERATING.md,
// "Several replicas") parse as YAML, set only flags and environment
// variables `pinned sidecar --help` lists, run the sidecars on Redis with
// readiness on /readyz, give Redis noeviction, and carry the ACL line of
// docs/OPERATING.md.
func TestDeployExamples(t *testing.T) {
	clearSidecarEnv(t)
	var help, stderr bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if code := runSidecarContext(ctx, []string{"--help"}, &help, &stderr); code != 0 {
		t.Fatalf("--help: %d %s", code, stderr.String())
	}
	helpText := help.String()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "OPERATING.md"))
	if err != nil {
		t.Fatal(err)
	}
	acl := regexp.MustCompile(`ACL SETUSER pinned on >PASSWORD (~pinned:\*[^\n]*)`).FindSubmatch(doc)
	if acl == nil {
		t.Fatal("docs/OPERATING.md has no ACL SETUSER line")
	}
	envRe := regexp.MustCompile(`^PINNED_[A-Z_]+$`)

	for _, file := range []string{"compose.yaml", "kubernetes.yaml"} {
		t.Run(file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", file))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(raw, append([]byte("user pinned on >PASSWORD "), acl[1]...)) {
				t.Errorf("the ACL line differs from docs/OPERATING.md's %q", acl[1])
			}
			var docs []any
			dec := yaml.NewDecoder(bytes.NewReader(raw))
			for {
				var v any
				if err := dec.Decode(&v); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Fatalf("not YAML: %v", err)
				}
				docs = append(docs, v)
			}
			// The sidecar containers: every map whose image is pinned's
			// (compose services, Kubernetes containers).
			var flags, envs, strs []string
			for _, d := range docs {
				walk(d, func(m map[string]any) {
					for _, v := range m {
						if s, ok := v.(string); ok {
							strs = append(strs, s)
						}
					}
					if img, _ := m["image"].(string); !strings.HasPrefix(img, "pinned:") {
						return
					}
					for _, k := range []string{"command", "args"} {
						l, _ := m[k].([]any)
						for _, a := range l {
							if s, _ := a.(string); strings.HasPrefix(s, "--") {
								flags = append(flags, s)
							}
						}
					}
					switch env := m["environment"].(type) {
					case map[string]any: // compose
						for k := range env {
							envs = append(envs, k)
						}
					}
					if env, ok := m["env"].([]any); ok { // Kubernetes
						for _, e := range env {
							if em, ok := e.(map[string]any); ok {
								n, _ := em["name"].(string)
								envs = append(envs, n)
							}
						}
					}
				})
			}
			if len(envs) == 0 || len(flags) == 0 {
				t.Fatalf("found no sidecar settings (%d env, %d flags)", len(envs), len(flags))
			}
			for _, e := range envs {
				if !envRe.MatchString(e) || !strings.Contains(helpText, e) {
					t.Errorf("%s is not a variable pinned sidecar --help lists", e)
				}
			}
			for _, f := range flags {
				if !strings.Contains(helpText, "\n  -"+strings.TrimPrefix(f, "--")+" ") {
					t.Errorf("%s is not a pinned sidecar flag", f)
				}
			}
			all := strings.Join(strs, "\n")
			for _, want := range []string{"PINNED_REDIS_URL", "noeviction", "redis://pinned@"} {
				if !strings.Contains(all+"\n"+strings.Join(envs, "\n")+"\n"+string(raw), want) {
					t.Errorf("lacks %s", want)
				}
			}
			if file == "kubernetes.yaml" && !strings.Contains(all, "/readyz") {
				t.Error("no readiness probe on /readyz")
			}
		})
	}
}

// walk calls fn for every map at or below v (YAML anchors and merge keys
// are resolved by the decoder).
func walk(v any, fn func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		fn(x)
		for _, c := range x {
			walk(c, fn)
		}
	case []any:
		for _, c := range x {
			walk(c, fn)
		}
	}
}
