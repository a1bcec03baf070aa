package sidecar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/internal/testing/schematest"

	"github.com/elevenmessenger/pinned/registry"
)

// TestToolsEndpoint validates GET /v1/tools in both shapes: every op of
// every manifest appears, write ops carry their confirm template, the
// input schema and every op's args schema compile as JSON Schema, and on
// sample calls the schema agrees with the sandbox (POST /v1/consent).
func TestToolsEndpoint(t *testing.T) {
	env := newTestEnv(t, nil)
	var anth struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	if err := json.Unmarshal(env.do(t, "GET", "/v1/tools?format=anthropic", nil).body, &anth); err != nil {
		t.Fatal(err)
	}
	var mcp struct {
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(env.do(t, "GET", "/v1/tools?format=mcp", nil).body, &mcp); err != nil {
		t.Fatal(err)
	}
	if anth.Name != "service_op" || len(mcp.Tools) != 1 || mcp.Tools[0].Name != anth.Name ||
		mcp.Tools[0].Description != anth.Description || !bytes.Equal(mcp.Tools[0].InputSchema, anth.InputSchema) {
		t.Fatal("the Anthropic and MCP shapes differ in content")
	}
	schema := schematest.Compile(t, "https://pinned.example/tools.json", anth.InputSchema)
	raw := string(anth.InputSchema)
	for _, o := range registry.ToolOps(registry.Default()) {
		t.Run(o.Service+"."+o.Op, func(t *testing.T) {
			if !strings.Contains(anth.Description, "- "+o.Service+"."+o.Op+" ["+o.Access+"]") {
				t.Error("op missing from the description")
			}
			if !strings.Contains(raw, `"title":"`+o.Service+"."+o.Op+`"`) {
				t.Error("op missing from the input schema")
			}
			if o.Access == "write" {
				confirm, _ := json.Marshal(fmt.Sprintf("Confirm: %q", o.Confirm))
				inner := strings.Trim(string(confirm), `"`)
				if o.Confirm == "" || !strings.Contains(raw, inner) || !strings.Contains(anth.Description, fmt.Sprintf("Confirm: %q", o.Confirm)) {
					t.Errorf("write op without its confirm template %q", o.Confirm)
				}
			}
			schematest.Compile(t, "https://pinned.example/"+o.Service+"."+o.Op+".json", o.ArgsSchema)
		})
	}

	samples := []struct {
		name, service, op, args string
	}{
		{"create_issue ok", "github", "create_issue", `{"owner":"pinned-tester","repo":"notes","title":"Hi"}`},
		{"create_issue no title", "github", "create_issue", `{"owner":"pinned-tester","repo":"notes"}`},
		{"create_issue title too long", "github", "create_issue", `{"owner":"a","repo":"b","title":"` + strings.Repeat("é", 257) + `"}`},
		{"create_issue title at the limit", "github", "create_issue", `{"owner":"a","repo":"b","title":"` + strings.Repeat("é", 256) + `"}`},
		{"create_issue undeclared", "github", "create_issue", `{"owner":"a","repo":"b","title":"c","labels":"bug"}`},
		{"get_repo bad owner", "github", "get_repo", `{"owner":"-bad-","repo":"notes"}`},
		{"get_repo owner ok", "github", "get_repo", `{"owner":"octo-cat","repo":"notes"}`},
		{"list_repos enum", "github", "list_repos", `{"sort":"stars"}`},
		{"list_repos ok", "github", "list_repos", `{"sort":"pushed","per_page":100}`},
		{"list_repos too many", "github", "list_repos", `{"per_page":101}`},
		{"list_repos integral float", "github", "list_repos", `{"per_page":10.0}`},
		{"list_repos fraction", "github", "list_repos", `{"per_page":10.5}`},
		{"list_repos string number", "github", "list_repos", `{"per_page":"10"}`},
		{"register ok", "dnsimple", "register_domain", `{"account":1,"domain":"example.com","registrant_id":2}`},
		{"register bad bool", "dnsimple", "register_domain", `{"account":1,"domain":"example.com","registrant_id":2,"auto_renew":"yes"}`},
		{"register account zero", "dnsimple", "register_domain", `{"account":0,"domain":"example.com","registrant_id":2}`},
		{"linear bad team", "linear", "create_issue", `{"team_id":"ENG","title":"x"}`},
		{"stripe ok", "stripe", "list_charges", `{"customer":"cus_123","limit":5}`},
		{"hubspot bad id", "hubspot", "get_contact", `{"contact_id":"12a"}`},
	}
	for _, s := range samples {
		t.Run("agrees/"+s.name, func(t *testing.T) {
			call := fmt.Sprintf(`{"service":%q,"op":%q,"args":%s}`, s.service, s.op, s.args)
			bySchema := schematest.Accepts(t, schema, call)
			r := env.do(t, "POST", "/v1/consent", call)
			bySandbox := r.status == 200
			if !bySandbox && r.err.Error.Code != "bad_args" {
				t.Fatalf("consent: %d %s", r.status, r.body)
			}
			if bySchema != bySandbox {
				t.Fatalf("the schema says %v, the sandbox says %v (%s)", bySchema, bySandbox, r.body)
			}
		})
	}
}
