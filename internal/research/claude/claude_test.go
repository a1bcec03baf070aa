package claude

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/elevenmessenger/pinned/internal/demo/fakemodel"
)

func TestKeyFromFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, path, env, want, err string
	}{
		{name: "file", path: write("k", "  sk-ant-abc\n"), want: "sk-ant-abc"},
		{name: "two lines", path: write("k2", "a\nb\n"), err: "must hold one line"},
		{name: "empty file", path: write("k3", "\n"), err: "must hold one line"},
		{name: "missing file", path: filepath.Join(dir, "nope"), err: "key file"},
		{name: "env", env: " sk-ant-env ", want: "sk-ant-env"},
		{name: "nothing", err: "no API key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvKey, tt.env)
			got, err := KeyFromFile(tt.path)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("%q %v", got, err)
			}
		})
	}
}

// TestTurnAgainstFake: the SDK's own code path against the fake Messages
// API: a tool call comes back mapped; a wrong key is an error that names
// the status, never the key.
func TestTurnAgainstFake(t *testing.T) {
	fm, err := fakemodel.New("", fakemodel.Forever())
	if err != nil {
		t.Fatal(err)
	}
	defer fm.Close()
	req := &api.TurnRequest{System: "s", MaxTokens: 64,
		Messages: []api.Message{{Role: api.RoleUser, Content: []api.Block{{Type: api.BlockText, Text: "q"}}}},
		Tools:    []api.Tool{{Name: "github__get_viewer", Description: "d", InputSchema: []byte(`{"type":"object","properties":{},"additionalProperties":false}`)}}}
	c, err := New(Config{APIKey: fakemodel.Key, BaseURL: fm.URL(), MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Turn(context.Background(), req)
	if err != nil || resp.StopReason != "tool_use" || len(resp.Content) != 2 || resp.Content[1].Name != "github__get_viewer" || resp.Content[1].ID == "" {
		t.Fatalf("%+v %v", resp, err)
	}
	sent := string(fm.Requests()[0].Body)
	if !strings.Contains(sent, `"additionalProperties":false`) || !strings.Contains(sent, `"name":"github__get_viewer"`) {
		t.Errorf("the tool was not sent whole: %s", sent)
	}
	const wrong = "sk-ant-wrong-key-0123456789"
	bad, _ := New(Config{APIKey: wrong, BaseURL: fm.URL(), MaxRetries: -1})
	if _, err := bad.Turn(context.Background(), req); err == nil || err.Error() != "the Messages API answered HTTP 401" {
		t.Fatalf("wrong key: %v", err)
	}
	req.NoTools = true
	resp, err = c.Turn(context.Background(), req)
	if err != nil || resp.StopReason != "end_turn" || !strings.Contains(resp.Content[0].Text, "[scripted model]") {
		t.Fatalf("no tools: %+v %v", resp, err)
	}
	if !strings.Contains(string(fm.Requests()[2].Body), `"tool_choice":{"type":"none"}`) {
		t.Errorf("tool_choice none not sent: %s", fm.Requests()[2].Body)
	}
}
