package openapi

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/testing/testenv"
	"github.com/elevenmessenger/pinned/registry"
)

// review does what a reviewer does to a draft: deletes the mark, turns
// on the free text the draft left out (every field of draft.text_off,
// as text) and names the token page.
func review(t *testing.T, draft []byte) []byte {
	t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(draft, &doc); err != nil {
		t.Fatal(err)
	}
	var mark registry.Draft
	if err := json.Unmarshal(doc["draft"], &mark); err != nil {
		t.Fatal(err)
	}
	delete(doc, "draft")
	var ops map[string]map[string]json.RawMessage
	if err := json.Unmarshal(doc["ops"], &ops); err != nil {
		t.Fatal(err)
	}
	for name, fields := range mark.TextOff {
		var pk registry.Pick
		if err := json.Unmarshal(ops[name]["pick"], &pk); err != nil {
			t.Fatal(err)
		}
		for _, f := range fields {
			pk.Fields = append(pk.Fields, f)
			pk.Classes[f] = registry.ClassText
		}
		ops[name]["pick"], _ = json.Marshal(pk)
	}
	doc["ops"], _ = json.Marshal(ops)
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAfternoon walks docs/MANIFEST.md's "Adding a service in an
// afternoon" on a description the project has never seen: import →
// review → check → fixtures → lint → run ops against the data fake
// through the host, which trusts only the registry it is given.
func TestAfternoon(t *testing.T) {
	d := load(t, "acmenotes.yaml")
	draft, err := Import(d, ImportOptions{Ops: acmeOps, ID: "acmenotes"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := registry.Parse("acmenotes.json", draft); err == nil || !strings.Contains(err.Error(), "draft:") {
		t.Fatalf("the draft passes the loader: %v", err)
	}
	reviewed := review(t, draft)
	m, err := registry.Parse("acmenotes.json", reviewed)
	if err != nil {
		t.Fatalf("the reviewed draft is refused: %v", err)
	}
	if fs := Lint(d, m); len(fs) != 0 {
		t.Fatalf("lint: %v", fs)
	}
	reg, err := registry.Load(fstest.MapFS{"acmenotes.json": {Data: reviewed}})
	if err != nil {
		t.Fatal(err)
	}
	fake, err := fakeapi.New(fakeapi.WithService(m, os.DirFS("testdata/acmenotes")))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	eng, err := host.New(context.Background(), host.Config{Registry: reg, CacheDir: testenv.CacheDir(), Override: &host.Override{Addr: fake.Addr(), CAPEM: fake.CACertPEM()}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	cred := host.Credential{Kind: "pat", Secret: "acme_fake_pinned_notes_token_0000000000"}
	run := func(op, args string, pages int) *host.Result {
		t.Helper()
		res, err := eng.Run(context.Background(), host.Call{Service: "acmenotes", Op: op, Args: json.RawMessage(args), Credential: cred, Pages: pages})
		if err != nil {
			t.Fatalf("%s %s: %v", op, args, err)
		}
		return res
	}
	if res := run("get_current_user", `{}`, 0); !strings.Contains(string(res.Data), `"email":"pinned-tester@example.org"`) || !strings.Contains(string(res.Data), `"display_name":"Pinned Tester"`) {
		t.Errorf("viewer: %s", res.Data)
	}
	res := run("list_notebooks", `{"limit":1}`, 3)
	if res.Pages != 3 || res.Stopped != api.StopLastPage || !strings.Contains(string(res.Data), `"title":"Old stuff"`) {
		t.Errorf("notebooks over pages: %d pages, stopped %s: %s", res.Pages, res.Stopped, res.Data)
	}
	res = run("list_notes", `{"notebook_id":"nb_Q3planning01","per_page":1}`, 0)
	var next map[string]any
	if err := json.Unmarshal(res.Next, &next); err != nil || next["page"] != 2.0 || next["notebook_id"] != "nb_Q3planning01" || !strings.Contains(string(res.Data), `"title":"Goals"`) {
		t.Errorf("notes: next %s, data %s", res.Next, res.Data)
	}
	res = run("create_note", `{"notebook_id":"nb_Recipes00002","title":"Pancakes"}`, 0)
	if res.Status != 201 || !strings.Contains(string(res.Data), `"title":"Pancakes"`) || !strings.Contains(string(res.Data), `"priority":"normal"`) {
		t.Errorf("create: %d %s", res.Status, res.Data)
	}
	if res := run("list_notes", `{"notebook_id":"nb_Recipes00002","state":"all"}`, 0); !strings.Contains(string(res.Data), "Pancakes") {
		t.Errorf("the new note is not listed: %s", res.Data)
	}
	// An op the embedded registry does not have is not run by a host that
	// trusts only it.
	def, err := host.New(context.Background(), host.Config{CacheDir: testenv.CacheDir(), Override: &host.Override{Addr: fake.Addr(), CAPEM: fake.CACertPEM()}})
	if err != nil {
		t.Fatal(err)
	}
	defer def.Close(context.Background())
	if _, err := def.Run(context.Background(), host.Call{Service: "acmenotes", Op: "list_notebooks", Credential: cred}); err == nil || !strings.Contains(err.Error(), "unknown service") {
		t.Errorf("the embedded registry ran an unreviewed service: %v", err)
	}
}
