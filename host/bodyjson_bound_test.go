package host

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
)

// TestBodyJSONBoundToTemplate (found by the red team): a hostile
// guest running linear.get_viewer, a read op, sent a GraphQL mutation with
// the member's credential, and aliased an issue's description into a field
// the pick keeps — the policy checked only that the body was a JSON
// object. The host now holds the body to exactly the op's body_json
// template rendered from the caller's args (bind.go): both attempts are
// refused before anything is sent.
func TestBodyJSONBoundToTemplate(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.Guest = hostileGuest(t, "redteam_bodyjson") })
	token := fakeapi.Token("linear")

	// A team id, looked up directly at the fake (the attacker would pass it
	// in the args).
	req, _ := http.NewRequest("POST", "https://api.linear.app/graphql", strings.NewReader(`{"query":"query Teams($first: Int!) { teams(first: $first) { nodes { id key name description } } }","variables":{"first":1}}`))
	req.Header.Set("Authorization", token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := env.fake.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var teams struct {
		Data struct {
			Teams struct{ Nodes []struct{ ID string } }
		}
	}
	json.NewDecoder(resp.Body).Decode(&teams)
	resp.Body.Close()
	if len(teams.Data.Teams.Nodes) == 0 {
		t.Fatal("no team")
	}
	team := teams.Data.Teams.Nodes[0].ID

	for _, tt := range []struct{ name, args string }{
		{"a read op sends a mutation", `{"attack":"mutation","team":"` + team + `"}`},
		{"an alias smuggles an unnamed field through the pick", `{"attack":"alias"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.Reset()
			res, herr := env.run("linear", "get_viewer", tt.args)
			if herr == nil || herr.Code != api.CodeEgressDenied || herr.Deny != api.DenyNotBound {
				t.Fatalf("got %v %v, want egress_denied/%s", res, herr, api.DenyNotBound)
			}
			if n := len(env.fake.Requests()); n != 0 {
				t.Fatalf("the fake received %d requests", n)
			}
			env.assertNoLeak(t, res, herr, token)
		})
	}
}
