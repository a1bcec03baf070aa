package fakemodel

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestWireChecks: the fake refuses what the real Messages API refuses
// where research depends on it.
func TestWireChecks(t *testing.T) {
	s, err := New("", Forever())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const tools = `"tools":[{"name":"github__get_viewer","input_schema":{"type":"object"}}]`
	tests := []struct {
		name   string
		key    string
		body   string
		status int
		want   string
	}{
		{name: "ok", key: Key, body: `{"model":"m","max_tokens":10,` + tools + `,"messages":[{"role":"user","content":"q"}]}`, status: 200, want: `"stop_reason":"tool_use"`},
		{name: "wrong key", key: "nope", body: `{}`, status: 401, want: "authentication_error"},
		{name: "no max_tokens", key: Key, body: `{"model":"m","messages":[{"role":"user","content":"q"}]}`, status: 400, want: "max_tokens"},
		{name: "assistant first", key: Key, body: `{"model":"m","max_tokens":10,"messages":[{"role":"assistant","content":"q"}]}`, status: 400, want: "first message"},
		{name: "unanswered tool_use", key: Key, body: `{"model":"m","max_tokens":10,` + tools + `,"messages":[{"role":"user","content":"q"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"github__get_viewer","input":{}}]},{"role":"user","content":"next"}]}`, status: 400, want: "without tool_result"},
		{name: "tool_use without tools", key: Key, body: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"q"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"x","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r"}]}]}`, status: 400, want: "must define tools"},
		{name: "roles do not alternate", key: Key, body: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"q"},{"role":"user","content":"q"}]}`, status: 400, want: "alternate"},
		{name: "tool_choice none answers", key: Key, body: `{"model":"m","max_tokens":10,` + tools + `,"tool_choice":{"type":"none"},"messages":[{"role":"user","content":"q"}]}`, status: 200, want: `"stop_reason":"end_turn"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/messages", strings.NewReader(tt.body))
			req.Header.Set("X-Api-Key", tt.key)
			req.Header.Set("Anthropic-Version", "2023-06-01")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.want) {
				t.Fatalf("%d %s, want %d %s", resp.StatusCode, b, tt.status, tt.want)
			}
		})
	}
	s.SetScript(func(*Conversation) Reply { return Reply{Uses: []Use{{Name: "x"}}} })
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/messages", strings.NewReader(`{"model":"m","max_tokens":10,`+tools+`,"tool_choice":{"type":"none"},"messages":[{"role":"user","content":"q"}]}`))
	req.Header.Set("X-Api-Key", Key)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 500 {
		t.Errorf("a script using tools under tool_choice none: %d", resp.StatusCode)
	}
	if n := len(s.Requests()); n != len(tests)+1 {
		t.Errorf("%d requests recorded", n)
	}
}
