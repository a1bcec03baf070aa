package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/elevenmessenger/pinned/internal/connstore"
)

// TestConnectionLimitedToResources: a connection limited to
// pinned-tester/notes (pinned connect --only) seals the limit into every
// call's grant: a read and a confirmed write there run; the same calls
// naming another repository are refused resource_denied with nothing
// sent; list_repos shows the chosen repository only.
func TestConnectionLimitedToResources(t *testing.T) {
	limited := ghWrite
	limited.Resources = `{"repository":["pinned-tester/notes"]}`
	e := newEnv(t, envOpts{conns: []connstore.Connection{limited}})
	cs := e.connect(t, clientOpts{answer: "accept"})

	if res := call(t, cs, "github_get_repo", map[string]any{"owner": "pinned-tester", "repo": "notes"}); res.IsError {
		t.Fatalf("inside the limit: %s", toolText(t, res))
	}
	if res := call(t, cs, "github_create_issue", issueArgs); res.IsError {
		t.Fatalf("a confirmed write inside the limit: %s", toolText(t, res))
	}
	tests := []struct {
		name, tool string
		args       map[string]any
	}{
		{"a read of another repository", "github_get_repo", map[string]any{"owner": "pinned-tester", "repo": "other"}},
		{"a write to another repository", "github_create_issue", map[string]any{"owner": "octo", "repo": "notes", "title": "elsewhere"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.fake.Reset()
			res := call(t, cs, tt.tool, tt.args)
			if got := errorCode(t, res); got != "resource_denied" {
				t.Fatalf("got %q: %s", got, toolText(t, res))
			}
			if n := len(e.fake.Requests()); n != 0 {
				t.Fatalf("%d requests reached the fake", n)
			}
		})
	}

	// Every page, filtered: the fake has the chosen repository on page 3.
	var names []string
	args := map[string]any{"per_page": 100}
	for pages := 0; args != nil && pages < 5; pages++ {
		res := call(t, cs, "github_list_repos", args)
		if res.IsError {
			t.Fatalf("list_repos: %s", toolText(t, res))
		}
		var page struct {
			Data []struct {
				FullName string `json:"full_name"`
			} `json:"data"`
			Next map[string]any `json:"next"`
		}
		if err := json.Unmarshal([]byte(toolText(t, res)), &page); err != nil {
			t.Fatal(err)
		}
		for _, d := range page.Data {
			names = append(names, d.FullName)
		}
		args = page.Next
	}
	if len(names) != 1 || names[0] != "pinned-tester/notes" {
		t.Fatalf("list_repos under the limit, every page: %q", names)
	}
}
