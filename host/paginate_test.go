package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/secret"
)

// Pagination against the provider fake: every item of a list exactly
// once through next (one page per call, and pages per call), and every
// guard of docs/API.md "Pages" with the fake made to misbehave.

// pagedList is one list op of each service and how to name its items.
type pagedList struct {
	service, op, args string
	id                string // the item field that identifies it
}

var pagedLists = []pagedList{
	{fakeapi.GitHub, "list_repos", `{"per_page":100}`, "full_name"},
	{fakeapi.DNSimple, "list_domains", fmt.Sprintf(`{"account":%d,"per_page":10}`, fakeapi.DNSimpleAccountID), "id"},
	{fakeapi.Stripe, "list_customers", `{"limit":40}`, "id"},
	{fakeapi.HubSpot, "list_contacts", `{"limit":50}`, "id"},
	{fakeapi.Linear, "list_issues", `{"first":40}`, "id"},
}

// itemIDs returns the id field of every item of a projected list.
func itemIDs(t *testing.T, data json.RawMessage, field string) []string {
	t.Helper()
	var items []map[string]any
	if err := json.Unmarshal(data, &items); err != nil {
		t.Fatalf("result is not a list of objects: %v: %.200s", err, data)
	}
	out := make([]string, len(items))
	for i, it := range items {
		v, ok := it[field]
		if !ok {
			t.Fatalf("item %d has no %s: %v", i, field, it)
		}
		out[i] = fmt.Sprint(v)
	}
	return out
}

// fakeTotal asks the fake itself, outside the sandbox, how many items a
// list holds, so the test does not hard-code the fake's data.
func fakeTotal(t *testing.T, env *testEnv, l pagedList) int {
	t.Helper()
	get := func(url string) map[string]any {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+fakeapi.Token(l.service))
		resp, err := env.fake.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	switch l.service {
	case fakeapi.GitHub:
		return fakeapi.GitHubRepoCount
	case fakeapi.DNSimple:
		v := get(fmt.Sprintf("https://api.dnsimple.com/v2/%d/domains?per_page=1", fakeapi.DNSimpleAccountID))
		return int(v["pagination"].(map[string]any)["total_entries"].(float64))
	case fakeapi.Stripe:
		n, after := 0, ""
		for {
			v := get("https://api.stripe.com/v1/customers?limit=100" + after)
			data := v["data"].([]any)
			n += len(data)
			if !v["has_more"].(bool) {
				return n
			}
			after = "&starting_after=" + data[len(data)-1].(map[string]any)["id"].(string)
		}
	case fakeapi.HubSpot:
		n, after := 0, ""
		for {
			v := get("https://api.hubapi.com/crm/v3/objects/contacts?limit=100" + after)
			n += len(v["results"].([]any))
			paging, ok := v["paging"].(map[string]any)
			if !ok {
				return n
			}
			after = "&after=" + paging["next"].(map[string]any)["after"].(string)
		}
	}
	// Linear: count through GraphQL with the fake's own paging, sending
	// the manifest's own query text (the fake answers only an op's).
	m, _ := registry.Default().Service(fakeapi.Linear)
	var q struct{ Query string }
	if err := json.Unmarshal(m.Ops["list_issues"].BodyJSON, &q); err != nil {
		t.Fatal(err)
	}
	query, _ := json.Marshal(q.Query)
	n, after := 0, "null"
	for {
		body := `{"query":` + string(query) + `,"variables":{"first":100,"after":` + after + `}}`
		req, _ := http.NewRequest(http.MethodPost, "https://api.linear.app/graphql", strings.NewReader(body))
		req.Header.Set("Authorization", fakeapi.Token(l.service))
		req.Header.Set("Content-Type", "application/json")
		resp, err := env.fake.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Data struct {
				Issues struct {
					Nodes    []any
					PageInfo struct {
						HasNextPage bool
						EndCursor   string
					}
				}
			}
		}
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		n += len(v.Data.Issues.Nodes)
		if !v.Data.Issues.PageInfo.HasNextPage {
			return n
		}
		after = `"` + v.Data.Issues.PageInfo.EndCursor + `"`
	}
}

// TestPaginateEveryItemOnce lists everything of each service through
// next, one page per call and then many pages per call: every item comes
// back exactly once, over at least 3 pages, and no result is over the cap.
func TestPaginateEveryItemOnce(t *testing.T) {
	env := newEnv(t, nil)
	for _, l := range pagedLists {
		t.Run(l.service, func(t *testing.T) {
			total := fakeTotal(t, env, l)
			for _, pages := range []int{0, 10} {
				seen := map[string]int{}
				args, calls, pagesRead := l.args, 0, 0
				for {
					calls++
					if calls > 50 {
						t.Fatalf("pages=%d: still paging after 50 calls", pages)
					}
					res, err := env.eng.Run(context.Background(), Call{Service: l.service, Op: l.op, Args: json.RawMessage(args),
						Credential: Credential{Secret: secret.Secret(fakeapi.Token(l.service))}, Pages: pages})
					if err != nil {
						t.Fatalf("pages=%d, args %s: %v", pages, args, err)
					}
					if len(res.Data) > DefaultMaxResultBytes {
						t.Fatalf("result is %d bytes, over the cap", len(res.Data))
					}
					for _, id := range itemIDs(t, res.Data, l.id) {
						seen[id]++
					}
					if pages == 0 {
						pagesRead++
						if res.Stopped != "" {
							t.Fatalf("single page stopped %s: %s", res.Stopped, res.StopMessage)
						}
					} else {
						pagesRead += res.Pages
						if res.Next == nil && res.Stopped != api.StopLastPage || res.Next != nil && res.Stopped != api.StopResultCap && res.Stopped != api.StopPages {
							t.Fatalf("pages=%d: stopped %q (%s) with next %s", pages, res.Stopped, res.StopMessage, res.Next)
						}
					}
					if res.Next == nil {
						break
					}
					args = string(res.Next)
				}
				if len(seen) != total {
					t.Errorf("pages=%d: %d distinct items, want %d", pages, len(seen), total)
				}
				for id, n := range seen {
					if n != 1 {
						t.Errorf("pages=%d: item %s came back %d times", pages, id, n)
					}
				}
				if pagesRead < 3 {
					t.Errorf("pages=%d: the list took %d pages; the test wants at least 3", pages, pagesRead)
				}
				t.Logf("pages=%d: %d items over %d pages in %d calls", pages, len(seen), pagesRead, calls)
			}
		})
	}
}

// hubspotPage answers a HubSpot list with ids and a next cursor ("" is
// sent as the empty string; "-" leaves paging out).
func hubspotPage(w http.ResponseWriter, ids []int, next string) {
	var results []string
	for _, id := range ids {
		results = append(results, fmt.Sprintf(`{"id":"%d","properties":{"email":"c%d@example.com"},"updatedAt":"2024-01-01T00:00:00Z"}`, id, id))
	}
	body := `{"results":[` + strings.Join(results, ",") + `]`
	if next != "-" {
		body += fmt.Sprintf(`,"paging":{"next":{"after":%q}}`, next)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, body+"}")
}

// linearPage answers a Linear issues query with ids and pageInfo.
func linearPage(w http.ResponseWriter, ids []string, hasNext bool, end string) {
	var nodes []string
	for _, id := range ids {
		nodes = append(nodes, fmt.Sprintf(`{"id":%q,"identifier":"ENG-1","title":"t"}`, id))
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"data":{"issues":{"nodes":[%s],"pageInfo":{"hasNextPage":%t,"endCursor":%q}}}}`, strings.Join(nodes, ","), hasNext, end)
}

// linearAfter reads variables.after from a Linear request.
func linearAfter(r *http.Request) string {
	var body struct {
		Variables struct {
			After string `json:"after"`
		} `json:"variables"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	return body.Variables.After
}

// stripePage answers a Stripe list.
func stripePage(w http.ResponseWriter, ids []string, hasMore bool) {
	var data []string
	for _, id := range ids {
		data = append(data, fmt.Sprintf(`{"id":%q,"object":"customer","email":"x@example.com"}`, id))
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"object":"list","data":[%s],"has_more":%t,"url":"/v1/customers"}`, strings.Join(data, ","), hasMore)
}

// githubPage answers a GitHub list with repos and a Link header.
func githubPage(w http.ResponseWriter, names []string, link string) {
	var repos []string
	for _, n := range names {
		repos = append(repos, fmt.Sprintf(`{"full_name":%q,"private":false}`, n))
	}
	if link != "" {
		w.Header().Set("Link", link)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, "["+strings.Join(repos, ",")+"]")
}

// dnsimplePage answers a DNSimple list with a page count.
func dnsimplePage(w http.ResponseWriter, ids []int, page, total int) {
	var data []string
	for _, id := range ids {
		data = append(data, fmt.Sprintf(`{"id":%d,"name":"d%d.example"}`, id, id))
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"data":[%s],"pagination":{"current_page":%d,"per_page":2,"total_entries":99,"total_pages":%d}}`, strings.Join(data, ","), page, total)
}

// TestPaginateGuards makes the fake misbehave and checks that paging
// stops with the items read so far, a stable reason, and no next where
// following it would loop — never silently, never endlessly.
func TestPaginateGuards(t *testing.T) {
	env := newEnv(t, nil)
	account := fmt.Sprintf(`{"account":%d}`, fakeapi.DNSimpleAccountID)
	tests := []struct {
		name              string
		service, op, args string
		pages             int
		hook              func(w http.ResponseWriter, r *http.Request) bool
		wantIDs           string // the item ids, comma-separated
		idField           string
		wantStopped       api.StopReason
		wantMsg           string // part of StopMessage
		wantNext          string // "" for none
		wantPages         int
		wantRequests      int
	}{
		{name: "repeated cursor", service: fakeapi.HubSpot, op: "list_contacts", pages: 5,
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				switch r.URL.Query().Get("after") {
				case "":
					hubspotPage(w, []int{1, 2}, "A")
				default:
					hubspotPage(w, []int{3, 4}, "A")
				}
				return true
			}, wantIDs: "1,2,3,4", wantStopped: api.StopRepeatedCursor, wantMsg: "the one just sent", wantPages: 2, wantRequests: 2},
		{name: "repeated cursor on a single page", service: fakeapi.HubSpot, op: "list_contacts", args: `{"after":"A"}`,
			hook:    func(w http.ResponseWriter, r *http.Request) bool { hubspotPage(w, []int{3, 4}, "A"); return true },
			wantIDs: "3,4", wantStopped: api.StopRepeatedCursor, wantRequests: 1},
		{name: "A→B→A cycle (GraphQL pageInfo)", service: fakeapi.Linear, op: "list_issues", pages: 10,
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				switch linearAfter(r) {
				case "":
					linearPage(w, []string{"i1"}, true, "A")
				case "A":
					linearPage(w, []string{"i2"}, true, "B")
				default:
					linearPage(w, []string{"i3"}, true, "A")
				}
				return true
			}, wantIDs: "i1,i2,i3", wantStopped: api.StopCursorCycle, wantMsg: "already followed", wantPages: 3, wantRequests: 3},
		{name: "cycle back to the first page's cursor", service: fakeapi.HubSpot, op: "list_contacts", args: `{"after":"A"}`, pages: 10,
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				if r.URL.Query().Get("after") == "A" {
					hubspotPage(w, []int{1}, "B")
				} else {
					hubspotPage(w, []int{2}, "A")
				}
				return true
			}, wantIDs: "1,2", wantStopped: api.StopCursorCycle, wantPages: 2, wantRequests: 2},
		{name: "has_more forever with empty pages (Stripe)", service: fakeapi.Stripe, op: "list_customers", pages: 10,
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				if r.URL.Query().Get("starting_after") == "" {
					stripePage(w, []string{"cus_1", "cus_2"}, true)
				} else {
					stripePage(w, nil, true)
				}
				return true
			}, wantIDs: "cus_1,cus_2", wantStopped: api.StopEmptyPages, wantPages: 2, wantRequests: 2},
		{name: "next cursor forever with empty pages (HubSpot)", service: fakeapi.HubSpot, op: "list_contacts", pages: 10,
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				if a := r.URL.Query().Get("after"); a == "" {
					hubspotPage(w, []int{1}, "c1")
				} else {
					hubspotPage(w, nil, a+"x")
				}
				return true
			}, wantIDs: "1", wantStopped: api.StopEmptyPages, wantPages: 2, wantRequests: 2},
		{name: "next link to another host", service: fakeapi.GitHub, op: "list_repos", pages: 5,
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				githubPage(w, []string{"a/one"}, `<https://api.evil.example/user/repos?page=2>; rel="next"`)
				return true
			}, wantIDs: "a/one", idField: "full_name", wantStopped: api.StopLinkRefused, wantMsg: "another host", wantPages: 1, wantRequests: 1},
		{name: "next link to another path", service: fakeapi.GitHub, op: "list_repos",
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				githubPage(w, []string{"a/one"}, `<https://api.github.com/user/orgs?page=2>; rel="next"`)
				return true
			}, wantIDs: "a/one", idField: "full_name", wantStopped: api.StopLinkRefused, wantMsg: "another path", wantRequests: 1},
		{name: "next link with userinfo", service: fakeapi.GitHub, op: "list_repos",
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				githubPage(w, []string{"a/one"}, `<https://x@api.github.com/user/repos?page=2>; rel="next"`)
				return true
			}, wantIDs: "a/one", idField: "full_name", wantStopped: api.StopLinkRefused, wantRequests: 1},
		{name: "next link over plain http", service: fakeapi.GitHub, op: "list_repos",
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				githubPage(w, []string{"a/one"}, `<http://api.github.com/user/repos?page=2>; rel="next"`)
				return true
			}, wantIDs: "a/one", idField: "full_name", wantStopped: api.StopLinkRefused, wantRequests: 1},
		{name: "next link on another port", service: fakeapi.GitHub, op: "list_repos",
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				githubPage(w, []string{"a/one"}, `<https://api.github.com:8443/user/repos?page=2>; rel="next"`)
				return true
			}, wantIDs: "a/one", idField: "full_name", wantStopped: api.StopLinkRefused, wantRequests: 1},
		{name: "two next links", service: fakeapi.GitHub, op: "list_repos",
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				githubPage(w, []string{"a/one"}, `<https://api.github.com/user/repos?page=2>; rel="next", <https://api.github.com/user/repos?page=9>; rel="next"`)
				return true
			}, wantIDs: "a/one", idField: "full_name", wantStopped: api.StopLinkRefused, wantMsg: "2 rel=\"next\"", wantRequests: 1},
		{name: "next link page key twice", service: fakeapi.GitHub, op: "list_repos",
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				githubPage(w, []string{"a/one"}, `<https://api.github.com/user/repos?page=2&page=3>; rel="next"`)
				return true
			}, wantIDs: "a/one", idField: "full_name", wantStopped: api.StopLinkRefused, wantMsg: "exactly one page", wantRequests: 1},
		{name: "only the page arg is taken from a link", service: fakeapi.GitHub, op: "list_repos", args: `{"per_page":2,"sort":"created"}`,
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				githubPage(w, []string{"a/one"}, `<https://api.github.com/user/repos?per_page=100&sort=pushed&visibility=private&page=2>; rel="next"`)
				return true
			}, wantIDs: "a/one", idField: "full_name", wantNext: `{"per_page":2,"sort":"created","page":2}`, wantRequests: 1},
		{name: "empty cursor", service: fakeapi.HubSpot, op: "list_contacts", pages: 5,
			hook:    func(w http.ResponseWriter, r *http.Request) bool { hubspotPage(w, []int{1, 2}, ""); return true },
			wantIDs: "1,2", wantStopped: api.StopEmptyCursor, wantPages: 1, wantRequests: 1},
		{name: "empty endCursor with hasNextPage", service: fakeapi.Linear, op: "list_issues",
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				linearPage(w, []string{"i1"}, true, "")
				return true
			},
			wantIDs: "i1", wantStopped: api.StopEmptyCursor, wantRequests: 1},
		{name: "empty page number in a link", service: fakeapi.GitHub, op: "list_repos",
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				githubPage(w, []string{"a/one"}, `<https://api.github.com/user/repos?page=>; rel="next"`)
				return true
			}, wantIDs: "a/one", idField: "full_name", wantStopped: api.StopEmptyCursor, wantRequests: 1},
		{name: "page count past the pages bound", service: fakeapi.DNSimple, op: "list_domains", args: account, pages: 4,
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				p := 1
				fmt.Sscan(r.URL.Query().Get("page"), &p)
				dnsimplePage(w, []int{p}, p, 1000000)
				return true
			}, wantIDs: "1,2,3,4", wantStopped: api.StopPages, wantNext: fmt.Sprintf(`{"account":%d,"page":5}`, fakeapi.DNSimpleAccountID), wantPages: 4, wantRequests: 4},
		{name: "page count past the arg's max", service: fakeapi.DNSimple, op: "list_domains", args: fmt.Sprintf(`{"account":%d,"page":1000}`, fakeapi.DNSimpleAccountID), pages: 3,
			hook:    func(w http.ResponseWriter, r *http.Request) bool { dnsimplePage(w, []int{7}, 1000, 2000); return true },
			wantIDs: "7", wantStopped: api.StopCursorInvalid, wantMsg: "must be at most 1000", wantPages: 1, wantRequests: 1},
		{name: "page count going backwards", service: fakeapi.DNSimple, op: "list_domains", args: account, pages: 10,
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				switch r.URL.Query().Get("page") {
				case "":
					dnsimplePage(w, []int{1}, 1, 5)
				case "2":
					dnsimplePage(w, []int{2}, 2, 5)
				default:
					dnsimplePage(w, []int{9}, 1, 5) // claims to be page 1 again: next is 2
				}
				return true
			}, wantIDs: "1,2,9", wantStopped: api.StopCursorCycle, wantPages: 3, wantRequests: 3},
		{name: "cursor that breaks the arg's pattern", service: fakeapi.Stripe, op: "list_customers",
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				stripePage(w, []string{"cus_1", "evil/../x"}, true)
				return true
			},
			wantIDs: "cus_1,evil/../x", wantStopped: api.StopCursorInvalid, wantMsg: "starting_after", wantRequests: 1},
		{name: "cursor over the arg's max_length", service: fakeapi.HubSpot, op: "list_contacts",
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				hubspotPage(w, []int{1}, strings.Repeat("a", 129))
				return true
			},
			wantIDs: "1", wantStopped: api.StopCursorInvalid, wantMsg: "at most 128", wantRequests: 1},
		{name: "cursor that is not a string", service: fakeapi.Linear, op: "list_issues",
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				_, _ = io.WriteString(w, `{"data":{"issues":{"nodes":[{"id":"i1"}],"pageInfo":{"hasNextPage":true,"endCursor":42}}}}`)
				return true
			}, wantIDs: "i1", wantStopped: api.StopCursorInvalid, wantMsg: "not a string", wantRequests: 1},
		{name: "cursor that echoes the credential", service: fakeapi.HubSpot, op: "list_contacts",
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				hubspotPage(w, []int{1}, fakeapi.Token(fakeapi.HubSpot)[4:20])
				return true
			}, wantIDs: "1", wantStopped: api.StopCursorInvalid, wantMsg: "echoes the credential", wantRequests: 1},
		// The echo check runs on every page's cursor, not only the
		// first: page 2 answers with a cursor holding part of the token,
		// and paging stops there with no next (it would carry it).
		{name: "a later page's cursor that echoes the credential", service: fakeapi.HubSpot, op: "list_contacts", pages: 5,
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				if r.URL.Query().Get("after") == "" {
					hubspotPage(w, []int{1}, "c2")
				} else {
					hubspotPage(w, []int{2}, "x"+fakeapi.Token(fakeapi.HubSpot)[6:18])
				}
				return true
			}, wantIDs: "1,2", wantStopped: api.StopCursorInvalid, wantMsg: "echoes the credential", wantPages: 2, wantRequests: 2},
		{name: "duplicate has_more key", service: fakeapi.Stripe, op: "list_customers",
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"cus_1"}],"has_more":false,"has_more":true}`)
				return true
			}, wantIDs: "cus_1", wantStopped: api.StopCursorInvalid, wantMsg: "repeats a key", wantRequests: 1},
		{name: "a later page fails", service: fakeapi.HubSpot, op: "list_contacts", pages: 5,
			hook: func(w http.ResponseWriter, r *http.Request) bool {
				if r.URL.Query().Get("after") == "" {
					hubspotPage(w, []int{1}, "c2")
					return true
				}
				w.Header().Set("Retry-After", "7")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = io.WriteString(w, `{"status":"error","message":"You have reached your secondly limit."}`)
				return true
			}, wantIDs: "1", wantStopped: api.StopPageFailed, wantMsg: "page 2: rate_limited", wantNext: `{"after":"c2"}`, wantPages: 1, wantRequests: 2},
		{name: "last page", service: fakeapi.HubSpot, op: "list_contacts", pages: 5,
			hook:    func(w http.ResponseWriter, r *http.Request) bool { hubspotPage(w, []int{1}, "-"); return true },
			wantIDs: "1", wantStopped: api.StopLastPage, wantPages: 1, wantRequests: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.Reset()
			env.fake.SetHandler(tt.hook)
			t.Cleanup(func() { env.fake.SetHandler(nil) })
			args := tt.args
			if args == "" {
				args = "{}"
			}
			res, err := env.eng.Run(context.Background(), Call{Service: tt.service, Op: tt.op, Args: json.RawMessage(args),
				Credential: Credential{Secret: secret.Secret(fakeapi.Token(tt.service))}, Pages: tt.pages})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			field := tt.idField
			if field == "" {
				field = "id"
			}
			if got := strings.Join(itemIDs(t, res.Data, field), ","); got != tt.wantIDs {
				t.Errorf("items %s, want %s", got, tt.wantIDs)
			}
			if res.Stopped != tt.wantStopped || !strings.Contains(res.StopMessage, tt.wantMsg) {
				t.Errorf("stopped %q (%q), want %q with %q", res.Stopped, res.StopMessage, tt.wantStopped, tt.wantMsg)
			}
			if tt.wantStopped != "" && res.StopMessage == "" {
				t.Error("a stop without a message")
			}
			if string(res.Next) != tt.wantNext {
				t.Errorf("next %s, want %q", res.Next, tt.wantNext)
			}
			if res.Pages != tt.wantPages {
				t.Errorf("pages %d, want %d", res.Pages, tt.wantPages)
			}
			if n := len(env.fake.Requests()); n != tt.wantRequests {
				t.Errorf("%d requests reached the fake, want %d", n, tt.wantRequests)
			}
		})
	}
}

// TestPaginatePagesArg checks the pages bound: within the op's
// max_pages, and only for ops that page. Nothing is sent for a refusal.
func TestPaginatePagesArg(t *testing.T) {
	env := newEnv(t, nil)
	tests := []struct {
		name, service, op string
		pages             int
		want              string
	}{
		{"over max_pages", fakeapi.GitHub, "list_repos", 11, "pages must be 1 to 10 for op github.list_repos"},
		{"negative", fakeapi.GitHub, "list_repos", -1, "pages must be 1 to 10"},
		{"op that does not page", fakeapi.GitHub, "get_viewer", 2, "op github.get_viewer does not page"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.Reset()
			_, err := env.eng.Run(context.Background(), Call{Service: tt.service, Op: tt.op, Args: json.RawMessage(`{}`),
				Credential: Credential{Secret: secret.Secret(fakeapi.Token(tt.service))}, Pages: tt.pages})
			he, ok := err.(*Error)
			if !ok || he.Code != api.CodeBadArgs || !strings.Contains(he.Message, tt.want) {
				t.Fatalf("err %v, want bad_args with %q", err, tt.want)
			}
			if n := len(env.fake.Requests()); n != 0 {
				t.Errorf("%d requests sent for a refused call", n)
			}
		})
	}
}

// TestPaginateResultCap: pages never take a result over the cap; the
// page that does not fit is next, so nothing is lost or truncated.
func TestPaginateResultCap(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.MaxResultBytes = 4 << 10 })
	res, err := env.eng.Run(context.Background(), Call{Service: fakeapi.Stripe, Op: "list_customers", Args: json.RawMessage(`{"limit":5}`),
		Credential: Credential{Secret: secret.Secret(fakeapi.Token(fakeapi.Stripe))}, Pages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) > 4<<10 {
		t.Fatalf("result is %d bytes, over the 4096-byte cap", len(res.Data))
	}
	if res.Stopped != api.StopResultCap || res.Next == nil || res.Pages < 1 || res.Pages >= 10 {
		t.Fatalf("stopped %q after %d pages with next %s; want result_cap with next", res.Stopped, res.Pages, res.Next)
	}
	ids := itemIDs(t, res.Data, "id")
	if len(ids) != 5*res.Pages {
		t.Errorf("%d items for %d pages of 5", len(ids), res.Pages)
	}
	// next starts right after the last item kept.
	want := fmt.Sprintf(`{"limit":5,"starting_after":%q}`, ids[len(ids)-1])
	if string(res.Next) != want {
		t.Errorf("next %s, want %s", res.Next, want)
	}
}
