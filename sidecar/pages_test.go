package sidecar

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// TestOpsPages: POST /v1/ops returns next for an op that pages, follows
// it with pages under one read grant, and refuses pages over the op's
// bound with bad_args without spending the grant.
func TestOpsPages(t *testing.T) {
	env := newTestEnv(t, nil)
	read := func() string { return env.seal(t, grant.Grant{Service: "stripe", Access: grant.AccessRead}) }

	r := env.op(t, "stripe", "list_customers", `{"limit":50}`, read())
	var one OpResponse
	if err := json.Unmarshal(r.body, &one); err != nil || r.status != http.StatusOK {
		t.Fatalf("one page: %d %s", r.status, r.body)
	}
	var items []map[string]any
	_ = json.Unmarshal(one.Data, &items)
	if len(items) != 50 || len(one.Next) == 0 || one.Stopped != "" || one.Pages != 0 {
		t.Fatalf("one page: %d items, next %s, stopped %q, pages %d", len(items), one.Next, one.Stopped, one.Pages)
	}
	var next map[string]any
	if err := json.Unmarshal(one.Next, &next); err != nil || next["limit"] != 50.0 || next["starting_after"] != items[49]["id"] {
		t.Fatalf("next %s, want limit 50 and starting_after %v", one.Next, items[49]["id"])
	}

	r = env.do(t, http.MethodPost, "/v1/ops", OpRequest{Service: "stripe", Op: "list_customers", Args: json.RawMessage(`{"limit":50}`), Grant: read(), Pages: 10})
	var all OpResponse
	if err := json.Unmarshal(r.body, &all); err != nil || r.status != http.StatusOK {
		t.Fatalf("pages: %d %s", r.status, r.body)
	}
	items = nil
	_ = json.Unmarshal(all.Data, &items)
	seen := map[any]bool{}
	for _, it := range items {
		seen[it["id"]] = true
	}
	if len(items) != 120 || len(seen) != 120 || all.Pages != 3 || all.Stopped != "last_page" || all.Next != nil {
		t.Fatalf("pages: %d items (%d distinct), pages %d, stopped %q, next %s", len(items), len(seen), all.Pages, all.Stopped, all.Next)
	}

	g := read()
	r = env.do(t, http.MethodPost, "/v1/ops", OpRequest{Service: "stripe", Op: "list_customers", Grant: g, Pages: 11})
	if r.status != http.StatusUnprocessableEntity || r.err.Error.Code != "bad_args" {
		t.Fatalf("pages 11: %d %s", r.status, r.body)
	}
	// bad_args spent nothing: the same grant runs.
	r = env.do(t, http.MethodPost, "/v1/ops", OpRequest{Service: "stripe", Op: "list_customers", Grant: g, Pages: 2})
	if r.status != http.StatusOK {
		t.Fatalf("retry with the same grant: %d %s", r.status, r.body)
	}
}
