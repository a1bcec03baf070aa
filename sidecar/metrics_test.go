package sidecar

import (
	"net/http"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"

	hostapi "github.com/elevenmessenger/pinned/host/api"
)

// TestMetricsBeforeTheFirstEvent: before any op, every denial series and
// every state error series is exported at 0, pinned_build_info carries
// the binary's version, and the listening event names it too.
func TestMetricsBeforeTheFirstEvent(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.Version = "v9.8.7-test" })
	body := string(env.do(t, http.MethodGet, "/metrics", nil).body)
	want := []string{
		`pinned_sidecar_denials_total{reason="grant_replayed",source="grant"} 0`,
		`pinned_sidecar_denials_total{reason="resource_denied",source="grant"} 0`,
		`pinned_sidecar_denials_total{reason="bot_rate",source="limit"} 0`,
		`pinned_sidecar_denials_total{reason="grant_budget",source="limit"} 0`,
		`pinned_sidecar_denials_total{reason="unauthorized",source="auth"} 0`,
		`pinned_build_info{goversion="` + runtime.Version() + `",version="v9.8.7-test"} 1`,
	}
	for _, d := range hostapi.DenyReasons() {
		want = append(want, `pinned_sidecar_denials_total{reason="`+string(d)+`",source="egress"} 0`)
	}
	for _, op := range stateOps {
		want = append(want, `pinned_sidecar_state_errors_total{op="`+op+`"} 0`)
	}
	for _, w := range want {
		if !strings.Contains(body, "\n"+w+"\n") {
			t.Errorf("/metrics lacks %s", w)
		}
	}
	if !strings.Contains(env.logs.String(), `"event":"listening"`) || !strings.Contains(env.logs.String(), `"version":"v9.8.7-test"`) {
		t.Errorf("the listening event has no version: %s", grepLines(env.logs.String(), "listening"))
	}
}

// TestDenyReasonsAreAll: DenyReasons lists each reason once, so the
// zeroed series cover every reason the host can give.
func TestDenyReasonsAreAll(t *testing.T) {
	seen := map[hostapi.DenyReason]bool{}
	for _, d := range hostapi.DenyReasons() {
		if seen[d] || d == "" {
			t.Errorf("deny reason %q twice or empty", d)
		}
		seen[d] = true
	}
	src, err := os.ReadFile("../host/api/api.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`DenyReason = "([a-z_]+)"`).FindAllStringSubmatch(string(src), -1) {
		if !seen[hostapi.DenyReason(m[1])] {
			t.Errorf("deny reason %q is declared but not in DenyReasons", m[1])
		}
	}
}
