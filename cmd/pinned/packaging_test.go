package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSystemdUnit: the shipped unit passes systemd-analyze verify with no
// complaint at all (an unknown key is only a warning there), carries the
// hardening docs/OPERATING.md promises, and the doc shows it verbatim.
func TestSystemdUnit(t *testing.T) {
	unit, err := os.ReadFile("../../deploy/pinned-sidecar.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"DynamicUser=yes", "ProtectSystem=strict", "NoNewPrivileges=yes", "CacheDirectory=pinned-sidecar",
		"Environment=PINNED_SIDECAR_CACHE_DIR=/var/cache/pinned-sidecar", "StateDirectory=pinned-sidecar", "Environment=PINNED_SIDECAR_STATE_DIR=/var/lib/pinned-sidecar", "LoadCredential=bot.key:", "CapabilityBoundingSet=\n", "TimeoutStopSec=30"} {
		if !bytes.Contains(unit, []byte(want)) {
			t.Errorf("the unit lacks %q", want)
		}
	}
	if bytes.Contains(unit, []byte("MemoryDenyWriteExecute=yes")) {
		t.Error("MemoryDenyWriteExecute=yes: wazero needs executable memory")
	}
	doc, err := os.ReadFile("../../docs/OPERATING.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, append(append([]byte("```ini\n"), unit...), "```\n"...)) {
		t.Error("docs/OPERATING.md does not show deploy/pinned-sidecar.service verbatim")
	}
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed: the unit is checked for its hardening only")
	}
	// verify checks that ExecStart exists: point it at a built binary.
	bin := pinnedBinary(t)
	f := filepath.Join(t.TempDir(), "pinned-sidecar.service")
	if err := os.WriteFile(f, bytes.ReplaceAll(unit, []byte("/usr/local/bin/pinned"), []byte(bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", f).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestDockerfile: no Docker engine runs here, so the Dockerfile is checked
// as text: every line an instruction (or a continuation or comment), a
// static build, a non-root user, the cache directory set and owned by that
// user, and a HEALTHCHECK that runs a command of this binary.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	instr := regexp.MustCompile(`^(FROM|RUN|CMD|LABEL|EXPOSE|ENV|ADD|COPY|ENTRYPOINT|VOLUME|USER|WORKDIR|ARG|ONBUILD|STOPSIGNAL|HEALTHCHECK|SHELL) `)
	var lines []string // logical lines: continuations joined
	cont := false
	for i, l := range strings.Split(string(data), "\n") {
		switch {
		case cont:
			lines[len(lines)-1] += " " + strings.TrimSpace(strings.TrimSuffix(l, "\\"))
		case l == "" || strings.HasPrefix(l, "#"):
			continue
		case !instr.MatchString(l):
			t.Fatalf("Dockerfile:%d: %q is not an instruction", i+1, l)
		default:
			lines = append(lines, strings.TrimSuffix(l, "\\"))
		}
		cont = strings.HasSuffix(l, "\\")
	}
	has := func(re string) string {
		t.Helper()
		r := regexp.MustCompile(re)
		for _, l := range lines {
			if r.MatchString(l) {
				return l
			}
		}
		t.Errorf("no Dockerfile instruction matches %s", re)
		return ""
	}
	// Every base fully qualified: podman and buildah refuse a short name
	// (golang:1.26) unless a short-name alias is configured.
	for _, l := range lines {
		f := strings.Fields(l)
		if f[0] != "FROM" {
			continue
		}
		img := f[1]
		for _, x := range f[1:] {
			if !strings.HasPrefix(x, "--") {
				img = x
				break
			}
		}
		if first, _, ok := strings.Cut(img, "/"); !ok || !strings.ContainsAny(first, ".:") && first != "localhost" {
			t.Errorf("base image %q is not fully qualified (registry host first, e.g. docker.io/library/golang:1.26)", img)
		}
	}
	has(`^RUN CGO_ENABLED=0 go build .*\./cmd/pinned`)
	has(`^FROM gcr\.io/distroless/static`)
	user := has(`^USER `)
	if strings.Contains(user, "root") && !strings.Contains(user, "nonroot") || strings.HasPrefix(user, "USER 0") {
		t.Errorf("runs as root: %s", user)
	}
	has(`PINNED_SIDECAR_CACHE_DIR=/var/cache/pinned`)
	has(`^COPY --from=build --chown=65532:65532 --chmod=0700 \S+ /var/cache/pinned$`)
	hc := has(`^HEALTHCHECK .*CMD \["/usr/local/bin/pinned", "healthcheck"\]`)
	if hc != "" {
		found := false
		for _, c := range commands() {
			found = found || c.name == "healthcheck"
		}
		if !found {
			t.Error("the HEALTHCHECK runs pinned healthcheck, which is not a command")
		}
	}
	has(`^ENTRYPOINT \["/usr/local/bin/pinned"\]`)
	has(`^CMD \["sidecar"\]`)

	// The build context leaves out .git and build outputs (bin/ holds tens
	// of MB), and keeps what the build copies.
	ignore, err := os.ReadFile("../../.dockerignore")
	if err != nil {
		t.Fatalf(".dockerignore: %v", err)
	}
	rules := map[string]bool{}
	for _, l := range strings.Split(string(ignore), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			rules[l] = true
		}
	}
	for _, want := range []string{".git", "bin", "**/*.test", "**/node_modules"} {
		if !rules[want] {
			t.Errorf(".dockerignore does not leave out %s", want)
		}
	}
	for _, keep := range []string{"go.mod", "go.sum", "cmd", "registry", "wasm", "*.go", "**/*.go", "**"} {
		if rules[keep] {
			t.Errorf(".dockerignore leaves out %s, which the build needs", keep)
		}
	}
}

func TestHealthcheck(t *testing.T) {
	tests := []struct{ listen, want string }{
		{"", "127.0.0.1:8080"}, {"0.0.0.0:9000", "127.0.0.1:9000"}, {":9000", "127.0.0.1:9000"},
		{"[::]:9000", "127.0.0.1:9000"}, {"127.0.0.2:80", "127.0.0.2:80"},
	}
	for _, tt := range tests {
		if got := probeAddr(tt.listen); got != tt.want {
			t.Errorf("probeAddr(%q) = %q, want %q", tt.listen, got, tt.want)
		}
	}
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	t.Setenv("PINNED_SIDECAR_LISTEN", strings.TrimPrefix(srv.URL, "http://"))
	var stderr bytes.Buffer
	if code := runHealthcheck(nil, &bytes.Buffer{}, &stderr); code != 0 {
		t.Fatalf("ready: exit %d %s", code, &stderr)
	}
	status = http.StatusServiceUnavailable
	if code := runHealthcheck(nil, &bytes.Buffer{}, &stderr); code != 1 || !strings.Contains(stderr.String(), "/readyz answered 503") {
		t.Fatalf("not ready: exit %d %s", code, &stderr)
	}
}
