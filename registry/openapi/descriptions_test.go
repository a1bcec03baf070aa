package openapi

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/registry"
)

// noDescription names the embedded services without a published OpenAPI
// description in descriptions/, and why.
var noDescription = map[string]string{
	"airtable": "Airtable publishes a hand-written reference (airtable.com/developers/web/api), no OpenAPI description",
	"calendly": "Calendly generates its reference (developer.calendly.com) from an OpenAPI description but publishes no copy in a repository",
	"dnsimple": "DNSimple publishes its reference as prose, not an OpenAPI description",
	"github":   "GitHub publishes one (github/rest-api-description, 10 MB); not trimmed into descriptions/ yet",
	"hubspot":  "HubSpot publishes one per API; not trimmed into descriptions/ yet",
	"linear":   "a GraphQL API: its schema, not an OpenAPI description, describes it",
	"shopify":  "a GraphQL API (the Admin GraphQL API): its schema, not an OpenAPI description, describes it; the legacy REST API has no published description",
	"stripe":   "Stripe publishes one (stripe/openapi); not trimmed into descriptions/ yet",
	"zendesk":  "Zendesk publishes one (developer.zendesk.com/zendesk/oas.yaml, 1.9 MB) on its site, not in a repository this project could read",
	"todoist":  "Doist generates its v1 reference from an OpenAPI description but publishes no copy in a repository",
}

// undescribed names ops whose provider's description lacks them, and why:
// the lint of such an op finds only that its path or method is missing.
var undescribed = map[string]string{
	"gitlab.get_viewer":     "the trimmed copy of GitLab's description (2025-03) has no GET /api/v4/user; the current upstream file is too large to trim here",
	"gitlab.list_issues":    "as get_viewer: no project issues in that copy",
	"gitlab.create_issue":   "as list_issues",
	"confluence.get_viewer": "the current user is in Confluence's v1 description (GET /wiki/rest/api/user/current); the v2 description this lint reads has none",
	"twilio.get_viewer":     "the trimmed copy keeps the fetch of one account (/Accounts/{Sid}.json, a placeholder with a suffix in one segment, which the format does not express); ListAccount (/2010-04-01/Accounts.json) is in twilio/twilio-oai but not in the copy",
}

// accepted are findings where the description, not the manifest, is
// wrong or out of date ("service: finding"), each with the reason.
var accepted = map[string]string{
	`intercom: op "list_contacts": query.per_page: "per_page" is not a query parameter of GET /contacts (it declares none)`:                                                                                                                                                                                                  "the 2.14 description omits the paging parameters of GET /contacts, which the reference documents (per_page, starting_after)",
	`intercom: op "list_contacts": query.starting_after: "starting_after" is not a query parameter of GET /contacts (it declares none)`:                                                                                                                                                                                      "as per_page",
	`cloudflare: op "create_dns_record": body_json: the description requires member "id", which the template does not send`:                                                                                                                                                                                                  "the 2024 description shares one record schema between request and answer; the record's id is the answer's (Cloudflare assigns it)",
	`cloudflare: op "get_zone": pick.fields.status: "status" is not in the 2xx answer's schema: no "status" (it declares: account, activated_on, created_on, development_mode, id, meta, modified_on, name, name_servers, original_dnshost, original_name_servers, original_registrar, owner, vanity_name_servers)`:          "the 2024 description's zone object lacks status and paused, which the API answers (developers.cloudflare.com, Zone details)",
	`cloudflare: op "get_zone": pick.fields.paused: "paused" is not in the 2xx answer's schema: no "paused" (it declares: account, activated_on, created_on, development_mode, id, meta, modified_on, name, name_servers, original_dnshost, original_name_servers, original_registrar, owner, vanity_name_servers)`:          "as status",
	`cloudflare: op "list_zones": pick.fields.status: "status" is not in the 2xx answer's schema: no "status" (it declares: account, activated_on, created_on, development_mode, id, meta, modified_on, name, name_servers, original_dnshost, original_name_servers, original_registrar, owner, vanity_name_servers)`:        "as get_zone",
	`cloudflare: op "list_zones": pick.fields.paused: "paused" is not in the 2xx answer's schema: no "paused" (it declares: account, activated_on, created_on, development_mode, id, meta, modified_on, name, name_servers, original_dnshost, original_name_servers, original_registrar, owner, vanity_name_servers)`:        "as get_zone",
	`cloudflare: op "list_accounts": paginate.total_pages: "result_info.total_pages" is not in the 2xx answer's schema: no "total_pages" (it declares: count, page, per_page, total_count)`:                                                                                                                                  "the 2024 description's result_info predates total_pages, which the API answers now",
	`cloudflare: op "list_dns_records": paginate.total_pages: "result_info.total_pages" is not in the 2xx answer's schema: no "total_pages" (it declares: count, page, per_page, total_count)`:                                                                                                                               "as list_accounts",
	`cloudflare: op "list_zones": paginate.total_pages: "result_info.total_pages" is not in the 2xx answer's schema: no "total_pages" (it declares: count, page, per_page, total_count)`:                                                                                                                                     "as list_accounts",
	`notion: op "add_comment": pick: POST /v1/comments describes no JSON answer, yet the op picks fields`:                                                                                                                                                                                                                    "Notion's description gives a 2xx schema for users/me only; developers.notion.com documents the comment object",
	`notion: op "list_comments": pick: GET /v1/comments describes no JSON answer, yet the op picks fields`:                                                                                                                                                                                                                   "as add_comment",
	`trello: op "get_viewer": query.fields: "id,username,fullName,url,memberType,confirmed,idOrganizations" for query parameter fields: the description allows only id`:                                                                                                                                                      "Trello's description lists only id for a member's fields; the reference and the member object (Member in the same description) have these fields",
	`trello: op "list_boards": query.fields: "id,name,closed,pinned,starred,url,shortUrl,idOrganization" for query parameter fields: the description allows only id, name, desc, descData, closed, idMemberCreator, idOrganization, pinned, url, shortUrl, prefs, labelNames, starred, limits, memberships, enterpriseOwned`: "Trello takes a comma list of BoardFields values (each one here is in the enum); its description types the parameter as a single value",
	`slack: op "list_messages": query.latest: type mismatch: query parameter latest is a number, arg "latest" is string`:                                                                                                                                                                                                     "Slack's 2021 description types timestamps as numbers; Slack writes and reads them as strings (1512085950.000216), which a number would round",
	`slack: op "list_messages": query.oldest: type mismatch: query parameter oldest is a number, arg "oldest" is string`:                                                                                                                                                                                                     "as latest",
	`slack: op "list_replies": query.ts: type mismatch: query parameter ts is a number, arg "ts" is string`:                                                                                                                                                                                                                  "as latest",
	`slack: op "list_messages": paginate.cursor: "response_metadata.next_cursor" is not in the 2xx answer's schema: no "response_metadata" (it declares: channel_actions_count, channel_actions_ts, has_more, messages, ok, pin_count)`:                                                                                      "the frozen 2021 description predates cursor paging on conversations.history (docs.slack.dev documents response_metadata.next_cursor)",
	`slack: op "list_replies": paginate.cursor: "response_metadata.next_cursor" is not in the 2xx answer's schema: no "response_metadata" (it declares: has_more, messages, ok)`:                                                                                                                                             "as list_messages",
}

// TestLintAgainstDescriptions lints every op of every embedded manifest
// against its provider's published description (descriptions/<id>.json,
// trimmed to what the lint reads, its source in x-source): the registry's
// CI holds each op to what its provider publishes.
func TestLintAgainstDescriptions(t *testing.T) {
	linted, seen := 0, map[string]bool{}
	for _, m := range registry.Default().Services() {
		data, err := os.ReadFile(filepath.Join("descriptions", m.ID+".json"))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if noDescription[m.ID] == "" {
				t.Errorf("%s: no descriptions/%s.json and no reason in noDescription", m.ID, m.ID)
			}
			continue
		case err != nil:
			t.Fatal(err)
		case noDescription[m.ID] != "":
			t.Errorf("%s: has descriptions/%s.json but is listed in noDescription", m.ID, m.ID)
		}
		d, err := Load(m.ID+".json", data)
		if err != nil {
			t.Fatal(err)
		}
		if d.Source == "" {
			t.Errorf("descriptions/%s.json has no x-source note (where it was trimmed from)", m.ID)
		}
		for _, name := range m.OpNames() {
			fs := LintOp(d, m, name)
			if why := undescribed[m.ID+"."+name]; why != "" {
				if len(fs) != 1 || fs[0].Field != "path" && fs[0].Field != "method" {
					t.Errorf("%s.%s is listed as undescribed (%s), yet the lint finds: %v", m.ID, name, why, fs)
				}
				continue
			}
			linted++
			for _, f := range fs {
				key := m.ID + ": " + f.String()
				if accepted[key] != "" {
					seen[key] = true
					continue
				}
				t.Errorf("%s", key)
			}
		}
	}
	for key := range undescribed {
		service, op, _ := strings.Cut(key, ".")
		if m, ok := registry.Default().Service(service); !ok || m.Ops[op] == nil {
			t.Errorf("undescribed names %s, which is no op of the registry", key)
		}
	}
	for key := range accepted {
		if !seen[key] {
			t.Errorf("accepted names a finding the lint no longer makes: %s", key)
		}
	}
	t.Logf("%d ops linted against their provider's description", linted)
}
