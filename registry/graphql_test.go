package registry

import (
	"strings"
	"testing"
)

func TestGraphQLQueryIsLiteral(t *testing.T) {
	manifest := func(body string) string {
		return `{"manifest":1,"id":"gq","name":"GQ","host":"api.gq.example","graphql":true,
 "auth":{"scheme":"bearer"},
 "ops":{"issue":{"access":"read","summary":"One issue","method":"POST","path":"/graphql",
   "args":{"id":{"type":"string","required":true}},
   "body_json":` + body + `,
   "pick":{"root":"data.issue","fields":{"id":"identifier"}}}}}`
	}
	if _, err := Parse("gq.json", []byte(manifest(`{"query":"query Q($id: String!) { issue(id: $id) { id } }","variables":{"id":"{id}"}}`))); err != nil {
		t.Fatalf("a literal query with variables is refused: %v", err)
	}
	tests := []struct{ name, body, want string }{
		{"placeholder in the query", `{"query":"query { issue(id: \"{id}\") { id } }"}`, `op "issue": body_json.query: names {id} inside the GraphQL text`},
		{"no query member", `{"variables":{"id":"{id}"}}`, `op "issue": body_json.query: a GraphQL op needs body_json.query`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("gq.json", []byte(manifest(tt.body)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
