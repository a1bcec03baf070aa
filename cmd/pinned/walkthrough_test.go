package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// docBlocks returns the ```sh and ```json blocks of the section of doc
// that starts at the heading line heading and runs to the next heading of
// the same level.
func docBlocks(t *testing.T, doc, heading string) (sh, jsonBlocks []string) {
	t.Helper()
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i := strings.Index(s, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no heading %q", doc, heading)
	}
	s = s[i+1+len(heading):]
	level := heading[:strings.IndexByte(heading, ' ')+1]
	if j := strings.Index(s, "\n"+level); j >= 0 {
		s = s[:j]
	}
	for _, m := range regexp.MustCompile("(?s)```(sh|json)\n(.*?)```\n").FindAllStringSubmatch(s, -1) {
		if m[1] == "sh" {
			sh = append(sh, m[2])
		} else {
			jsonBlocks = append(jsonBlocks, strings.TrimSpace(m[2]))
		}
	}
	if len(sh) == 0 {
		t.Fatalf("%s %q has no sh blocks", doc, heading)
	}
	return sh, jsonBlocks
}

// testBinaryVersion is the version pinnedBinary stamps into its build.
const testBinaryVersion = "v0.0.0-test"

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
	buildOut  []byte
)

// pinnedBinary builds bin/pinned once per test run, under a directory
// that also serves as the walkthroughs' working directory root.
func pinnedBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "pinned-walkthrough-bin-")
		if buildErr != nil {
			return
		}
		// Stamped as make build stamps it, so what reports the version
		// (pinned version, pinned mcp's serverInfo) is tested as shipped.
		cmd := exec.Command("go", "build", "-ldflags", "-X main.version="+testBinaryVersion, "-o", filepath.Join(binDir, "pinned"), ".")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, buildOut)
	}
	return filepath.Join(binDir, "pinned")
}

// needTools skips (or, under CI=true, fails) without bash and curl.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed (.ci/run installs it)", tool)
			}
			t.Skipf("%s is not installed; the walkthroughs need it", tool)
		}
	}
}

// holdPorts listens on the walkthroughs' old fixed ports, as another
// program would, for the length of the test. A port already taken by
// someone else is just as good.
func holdPorts(t *testing.T, ports ...string) {
	t.Helper()
	for _, p := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:"+p)
		if err != nil {
			continue
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				// Answer like a web server that is not the sidecar.
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"))
				c.Close()
			}
		}()
	}
}

// TestWalkthroughs runs the command blocks of README.md's "Running the
// sidecar" (with those of "Research sessions", which continue its shell,
// before its last block), docs/OAUTH.md's "Trying it locally" and
// docs/OPERATING.md's "Trying several replicas on one machine" as written (bin/pinned
// from a build of this package), twice in a row, with the ports the old
// walkthroughs hard-coded held by another listener. Each run must pass,
// show the answers the docs show, and leave nothing behind: its scratch
// directory is gone and so are its servers.
func TestWalkthroughs(t *testing.T) {
	needTools(t, "bash", "curl")
	bin := pinnedBinary(t)
	holdPorts(t, "8080", "8081", "8443")
	cache := filepath.Join(os.TempDir(), "pinned-test-cmd-xdg-cache")
	tests := []struct {
		name, doc, heading string
		// before, when set, is a heading of the same doc whose blocks run
		// before the last block of heading's.
		before string
		// want are fragments of the output, besides the doc's own JSON.
		want []string
		// count: fragment -> how many times it must appear.
		count map[string]int
		// tools the blocks need besides bash and curl.
		tools []string
	}{
		{name: "README sidecar", doc: "../../README.md", heading: "## Running the sidecar", before: "## Research sessions",
			want: []string{`"name":"service_op"`, `{"tools":[{"name":"service_op"`, `"confirm":"[GitHub: owner \"pinned-tester\", repo \"notes\"] Open an issue titled \"Hi\" in pinned-tester/notes?"`}},
		{name: "OAUTH trying it locally", doc: "../../docs/OAUTH.md", heading: "## Trying it locally",
			want:  []string{`"rotated":"`},
			count: map[string]int{`{"status":200,"data":{`: 2, `"rotated":"`: 1, "export PINNED_": 0}},
		{name: "OPERATING replicas", doc: "../../docs/OPERATING.md", heading: "## Trying several replicas on one machine",
			tools: []string{"redis-server"},
			count: map[string]int{`{"status":201,`: 1, `"code":"grant_replayed"`: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			needTools(t, tt.tools...)
			sh, jsonBlocks := docBlocks(t, tt.doc, tt.heading)
			if tt.before != "" {
				bsh, bjson := docBlocks(t, tt.doc, tt.before)
				sh = append(append(sh[:len(sh)-1:len(sh)-1], bsh...), sh[len(sh)-1])
				jsonBlocks = append(jsonBlocks, bjson...)
			}
			script := "set -eu\n" + strings.Join(sh, "\n")
			for run := 1; run <= 2; run++ {
				dir := t.TempDir()
				if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(bin, filepath.Join(dir, "bin", "pinned")); err != nil {
					t.Fatal(err)
				}
				tmp := filepath.Join(dir, "tmp")
				if err := os.Mkdir(tmp, 0o700); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
				cmd := exec.CommandContext(ctx, "bash", "-c", script)
				cmd.Dir = dir
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + tmp, "XDG_CACHE_HOME=" + cache, "LC_ALL=C"}
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				cancel()
				out := stdout.String()
				if err != nil {
					t.Fatalf("run %d: %v\nstdout:\n%s\nstderr:\n%s", run, err, out, &stderr)
				}
				for _, j := range jsonBlocks {
					// The doc's JSON up to its first "…" (a value that varies).
					want, _, _ := strings.Cut(j, "…")
					if !strings.Contains(out, want) {
						t.Errorf("run %d: the output lacks the doc's %s\noutput:\n%s", run, want, out)
					}
				}
				for _, w := range tt.want {
					if !strings.Contains(out, w) {
						t.Errorf("run %d: the output lacks %s\noutput:\n%s", run, w, out)
					}
				}
				for w, n := range tt.count {
					if got := strings.Count(out, w); got != n {
						t.Errorf("run %d: %q appears %d times, want %d\noutput:\n%s", run, w, got, n, out)
					}
				}
				// Self-cleaning: the scratch directory and every addr file are gone.
				left, _ := os.ReadDir(tmp)
				if len(left) != 0 {
					t.Errorf("run %d left %d entries in $TMPDIR (e.g. %s)", run, len(left), left[0].Name())
				}
				if t.Failed() {
					t.Logf("stderr:\n%s", &stderr)
					return
				}
			}
		})
	}
}
