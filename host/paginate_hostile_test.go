package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/host/internal/paginate"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/secret"
)

// Red team of paging (docs/SECURITY.md, "The red team"): the provider's
// answer is hostile — it chooses the Link header, the cursor, has_more
// and the page counts. Each row is an attack; the assertions are what
// must hold: the stop reason, no request sent for a refused cursor, no
// provider text in next beyond the cursor arg's declaration, and a paged
// call bounded in time.

// TestPaginateLinkNotFetched: a next link that names other query
// keys (a private listing, a token) is not the next request: page 2 is
// rendered from the caller's args with only page set, and passes the
// same sandbox and egress checks as page 1.
func TestPaginateLinkNotFetched(t *testing.T) {
	env := newEnv(t, nil)
	env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Query().Get("page") == "" {
			githubPage(w, []string{"a/one"}, `<https://api.github.com/user/repos?visibility=private&affiliation=organization_member&per_page=100&access_token=x&page=2>; rel="next"`)
		} else {
			githubPage(w, []string{"a/two"}, "")
		}
		return true
	})
	res, err := env.eng.Run(context.Background(), Call{Service: fakeapi.GitHub, Op: "list_repos", Args: json.RawMessage(`{"per_page":5}`),
		Credential: Credential{Secret: secret.Secret(fakeapi.Token(fakeapi.GitHub))}, Pages: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(itemIDs(t, res.Data, "full_name"), ","); got != "a/one,a/two" || res.Stopped != api.StopLastPage {
		t.Fatalf("items %s stopped %q, want a/one,a/two and last_page", got, res.Stopped)
	}
	reqs := env.fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if reqs[1].Host != "api.github.com" || reqs[1].Path != reqs[0].Path {
		t.Errorf("page 2 went to %s%s, want %s%s", reqs[1].Host, reqs[1].Path, reqs[0].Host, reqs[0].Path)
	}
	q0, q1 := reqs[0].RawQuery, reqs[1].RawQuery
	for _, k := range []string{"visibility", "affiliation", "access_token", "per_page=100"} {
		if strings.Contains(q1, k) {
			t.Errorf("page 2's query %q carries %q from the provider's link", q1, k)
		}
	}
	if !strings.Contains(q1, "page=2") || !strings.Contains(q1, "per_page=5") || len(q1) != len(q0)+len("&page=2") {
		t.Errorf("page 2's query %q, want page 1's %q with page=2 only", q1, q0)
	}
}

// TestPaginateHostileBody: paging data of the wrong type, out of
// range or smuggling request syntax never becomes a next page: paging
// stops with the stated reason, no second request is sent (pages asks
// for more), and none of the provider's text reaches the result outside
// pick (the marker is in the hostile cursor only).
func TestPaginateHostileBody(t *testing.T) {
	env := newEnv(t, nil)
	account := fmt.Sprintf(`{"account":%d}`, fakeapi.DNSimpleAccountID)
	const marker = "LEAKMARKER"
	dns := func(page, total string) func(w http.ResponseWriter, r *http.Request) bool {
		return func(w http.ResponseWriter, r *http.Request) bool {
			_, _ = fmt.Fprintf(w, `{"data":[{"id":1,"name":"d1.example"}],"pagination":{"current_page":%s,"total_pages":%s}}`, page, total)
			return true
		}
	}
	hub := func(after string) func(w http.ResponseWriter, r *http.Request) bool {
		return func(w http.ResponseWriter, r *http.Request) bool {
			_, _ = fmt.Fprintf(w, `{"results":[{"id":"1","properties":{"email":"c1@example.com"}}],"paging":{"next":{"after":%s}}}`, after)
			return true
		}
	}
	stripe := func(body string) func(w http.ResponseWriter, r *http.Request) bool {
		return func(w http.ResponseWriter, r *http.Request) bool { _, _ = io.WriteString(w, body); return true }
	}
	tests := []struct {
		name, service, op, args string
		hook                    func(w http.ResponseWriter, r *http.Request) bool
		wantStop                api.StopReason
	}{
		{"page_count: page 0", fakeapi.DNSimple, "list_domains", account, dns("0", "5"), api.StopCursorInvalid},
		{"page_count: negative page", fakeapi.DNSimple, "list_domains", account, dns("-3", "5"), api.StopCursorInvalid},
		{"page_count: float page", fakeapi.DNSimple, "list_domains", account, dns("1.5", "5"), api.StopCursorInvalid},
		{"page_count: exponent page", fakeapi.DNSimple, "list_domains", account, dns("1e0", "5"), api.StopCursorInvalid},
		{"page_count: string page", fakeapi.DNSimple, "list_domains", account, dns(`"1"`, "5"), api.StopCursorInvalid},
		{"page_count: string total", fakeapi.DNSimple, "list_domains", account, dns("1", `"5"`), api.StopCursorInvalid},
		{"page_count: page past 2^53", fakeapi.DNSimple, "list_domains", account, dns("9007199254740993", "9007199254740999"), api.StopCursorInvalid},
		{"page_count: page past the arg's max", fakeapi.DNSimple, "list_domains", account, dns("1000", "99999999"), api.StopCursorInvalid},
		{"page_count: negative total", fakeapi.DNSimple, "list_domains", account, dns("1", "-1"), api.StopCursorInvalid},
		{"page_count: object page", fakeapi.DNSimple, "list_domains", account, dns(`{"n":1}`, "5"), api.StopCursorInvalid},
		{"page_count: total 0 is the last page", fakeapi.DNSimple, "list_domains", account, dns("1", "0"), api.StopLastPage},
		{"cursor: object", fakeapi.HubSpot, "list_contacts", "{}", hub(`{"v":"` + marker + `"}`), api.StopCursorInvalid},
		{"cursor: array", fakeapi.HubSpot, "list_contacts", "{}", hub(`["` + marker + `"]`), api.StopCursorInvalid},
		{"cursor: number", fakeapi.HubSpot, "list_contacts", "{}", hub(`12345`), api.StopCursorInvalid},
		{"cursor: boolean", fakeapi.HubSpot, "list_contacts", "{}", hub(`true`), api.StopCursorInvalid},
		{"cursor: smuggles a query key", fakeapi.HubSpot, "list_contacts", "{}", hub(`"c2&limit=100&` + marker + `=1"`), api.StopCursorInvalid},
		{"cursor: smuggles an encoded query key", fakeapi.HubSpot, "list_contacts", "{}", hub(`"c2%26` + marker + `"`), api.StopCursorInvalid},
		{"cursor: path characters", fakeapi.HubSpot, "list_contacts", "{}", hub(`"../../` + marker + `"`), api.StopCursorInvalid},
		{"cursor: NUL", fakeapi.HubSpot, "list_contacts", "{}", hub(`"` + marker + `\u0000"`), api.StopCursorInvalid},
		{"cursor: invisible Unicode", fakeapi.HubSpot, "list_contacts", "{}", hub(`"` + marker + `\u200b"`), api.StopCursorInvalid},
		{"cursor: a field pick excludes, over max_length", fakeapi.HubSpot, "list_contacts", "{}", hub(`"` + marker + strings.Repeat("phone5550123", 12) + `"`), api.StopCursorInvalid},
		{"cursor: far bigger than any cap", fakeapi.HubSpot, "list_contacts", "{}", hub(`"` + marker + strings.Repeat("A", 300<<10) + `"`), api.StopCursorInvalid},
		{"last_item: has_more a string", fakeapi.Stripe, "list_customers", "{}", stripe(`{"data":[{"id":"cus_` + marker + `"}],"has_more":"true"}`), api.StopCursorInvalid},
		{"last_item: has_more a number", fakeapi.Stripe, "list_customers", "{}", stripe(`{"data":[{"id":"cus_` + marker + `"}],"has_more":1}`), api.StopCursorInvalid},
		{"last_item: root is an object, not a list", fakeapi.Stripe, "list_customers", "{}", stripe(`{"data":{"id":"cus_` + marker + `"},"has_more":true}`), api.StopCursorInvalid},
		{"last_item: has_more again under an escaped key", fakeapi.Stripe, "list_customers", "{}", stripe(`{"data":[{"id":"cus_` + marker + `"}],"has_more":false,"has\u005fmore":true}`), api.StopCursorInvalid},
		{"cursor: after again under an escaped key", fakeapi.HubSpot, "list_contacts", "{}", func(w http.ResponseWriter, r *http.Request) bool {
			_, _ = io.WriteString(w, `{"results":[{"id":"1"}],"paging":{"next":{"after":"c2","\u0061fter":"`+marker+`"}}}`)
			return true
		}, api.StopCursorInvalid},
		{"last_item: id an object", fakeapi.Stripe, "list_customers", "{}", stripe(`{"data":[{"id":{"x":"cus_` + marker + `"}}],"has_more":true}`), api.StopCursorInvalid},
		{"last_item: id off the pattern", fakeapi.Stripe, "list_customers", "{}", stripe(`{"data":[{"id":"cus_1"},{"id":"sk_live_` + marker + `"}],"has_more":true}`), api.StopCursorInvalid},
		{"has_more: Linear hasNextPage a string", fakeapi.Linear, "list_issues", "{}", func(w http.ResponseWriter, r *http.Request) bool {
			_, _ = io.WriteString(w, `{"data":{"issues":{"nodes":[{"id":"i1"}],"pageInfo":{"hasNextPage":"yes","endCursor":"`+marker+`"}}}}`)
			return true
		}, api.StopCursorInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.Reset()
			env.fake.SetHandler(tt.hook)
			t.Cleanup(func() { env.fake.SetHandler(nil) })
			for _, pages := range []int{0, 3} {
				res, err := env.eng.Run(context.Background(), Call{Service: tt.service, Op: tt.op, Args: json.RawMessage(tt.args),
					Credential: Credential{Secret: secret.Secret(fakeapi.Token(tt.service))}, Pages: pages})
				if err != nil {
					// A root that is not a list cannot be merged: the op's
					// error, with nothing past the first request.
					if he, ok := err.(*Error); pages == 0 || !ok || he.Code != api.CodeUpstreamInvalid || strings.Contains(he.Message, marker) {
						t.Fatalf("pages %d: %v", pages, err)
					}
					continue
				}
				want := tt.wantStop
				if want == api.StopLastPage && pages == 0 {
					want = "" // a single page's last page states no stop
				}
				if res.Stopped != want || res.Next != nil || (want != "" && res.StopMessage == "") {
					t.Errorf("pages %d: stopped %q (%q) next %s, want %q and no next", pages, res.Stopped, res.StopMessage, res.Next, want)
				}
				if strings.Contains(res.StopMessage, marker) || strings.Contains(string(res.Next), marker) {
					t.Errorf("pages %d: the provider's cursor text reached the stop message or next: %q %s", pages, res.StopMessage, res.Next)
				}
				if strings.Contains(tt.service, fakeapi.HubSpot) && strings.Contains(string(res.Data), marker) {
					t.Errorf("pages %d: the cursor text reached data: %.200s", pages, res.Data)
				}
			}
			if n := len(env.fake.Requests()); n != 2 {
				t.Errorf("%d requests for two calls, want 2: a refused cursor was followed", n)
			}
		})
	}
}

// TestPaginateCursorNoSideChannel: what a hostile provider CAN put in
// next is exactly what the cursor arg's declaration admits — HubSpot's
// after, ^[A-Za-z0-9_-]+$ up to 128 code points — and no more: one
// character over is refused, and pick's excluded fields do not ride
// along (the loader now requires that max_length, at most 1024).
func TestPaginateCursorNoSideChannel(t *testing.T) {
	env := newEnv(t, nil)
	excluded := "hsnote5550123secret" // properties.notes: not in list_contacts' pick
	in := strings.Repeat(excluded, 10)[:128]
	for _, tt := range []struct {
		cursor   string
		wantNext string
		wantStop api.StopReason
	}{
		{in, `{"after":"` + in + `"}`, ""},
		{in + "x", "", api.StopCursorInvalid},
	} {
		env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
			_, _ = fmt.Fprintf(w, `{"results":[{"id":"1","properties":{"email":"c1@example.com","notes":%q}}],"paging":{"next":{"after":%q}}}`, excluded, tt.cursor)
			return true
		})
		res, err := env.eng.Run(context.Background(), Call{Service: fakeapi.HubSpot, Op: "list_contacts", Args: json.RawMessage(`{}`),
			Credential: Credential{Secret: secret.Secret(fakeapi.Token(fakeapi.HubSpot))}})
		env.fake.SetHandler(nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Next) != tt.wantNext || res.Stopped != tt.wantStop {
			t.Errorf("cursor of %d: next %s stopped %q, want %s %q", len(tt.cursor), res.Next, res.Stopped, tt.wantNext, tt.wantStop)
		}
		if strings.Contains(string(res.Data), "notes") || strings.Contains(string(res.Data), excluded) {
			t.Errorf("data carries the excluded field: %s", res.Data)
		}
	}
	hm, _ := registry.Default().Service(fakeapi.HubSpot)
	op, _ := hm.Op("list_contacts")
	if a := op.Args[op.Paginate.Arg]; a.MaxLength == nil || *a.MaxLength > registry.MaxCursorLength {
		t.Fatalf("hubspot's cursor arg has max_length %v, want at most %d", a.MaxLength, registry.MaxCursorLength)
	}
}

// TestPaginateTimeLimit: a provider that answers every page
// slowly, with a fresh cursor each time, cannot hold a paged call for
// pages × Timeout: the whole call ends by PagesTimeout with time_limit
// and next for the page not read.
func TestPaginateTimeLimit(t *testing.T) {
	const limit, delay = 3 * time.Second, 1200 * time.Millisecond
	env := newEnv(t, func(c *Config) { c.PagesTimeout = limit })
	n := 0
	env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return true
		}
		n++ // the fake serves one request at a time here: pages are sequential
		hubspotPage(w, []int{n}, fmt.Sprintf("c%d", n+1))
		return true
	})
	start := time.Now()
	res, err := env.eng.Run(context.Background(), Call{Service: fakeapi.HubSpot, Op: "list_contacts", Args: json.RawMessage(`{}`),
		Credential: Credential{Secret: secret.Secret(fakeapi.Token(fakeapi.HubSpot))}, Pages: 10})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != api.StopTimeLimit || res.Next == nil || !strings.Contains(res.StopMessage, "3s") {
		t.Fatalf("stopped %q (%q) next %s, want time_limit with next", res.Stopped, res.StopMessage, res.Next)
	}
	if res.Pages < 1 || res.Pages > 2 {
		t.Errorf("%d pages in %s at %s a page, want 1 or 2", res.Pages, limit, delay)
	}
	// Unbounded, 10 pages would take 12 s; the limit plus slack for a
	// loaded machine is far below that.
	if took > limit+5*time.Second {
		t.Errorf("the paged call took %s, over its %s limit", took, limit)
	}
	var next struct{ After string }
	if json.Unmarshal(res.Next, &next) != nil || next.After != fmt.Sprintf("c%d", res.Pages+1) {
		t.Errorf("next %s, want the page after the %d read", res.Next, res.Pages)
	}
}

// TestPaginateWriteOpNeverPages: pages on a write op is refused
// before anything is sent, and even an op that reached the host with a
// paginate block but write access gets no pager (the loader refuses it
// too, TestParseRefuses "paginate on a write op").
func TestPaginateWriteOpNeverPages(t *testing.T) {
	env := newEnv(t, nil)
	_, err := env.eng.Run(context.Background(), Call{Service: fakeapi.GitHub, Op: "create_issue",
		Args:       json.RawMessage(`{"owner":"o","repo":"r","title":"t"}`),
		Credential: Credential{Secret: secret.Secret(fakeapi.Token(fakeapi.GitHub))}, Pages: 2})
	if he, ok := err.(*Error); !ok || he.Code != api.CodeBadArgs {
		t.Fatalf("pages on a write op: %v, want bad_args", err)
	}
	if n := len(env.fake.Requests()); n != 0 {
		t.Fatalf("%d requests sent for a refused write", n)
	}
	m, _ := registry.Default().Service(fakeapi.GitHub)
	read, _ := m.Op("list_repos")
	w := *read
	w.Access = registry.AccessWrite
	if paginate.New(m, read) == nil || paginate.New(m, &w) != nil {
		t.Fatal("a pager for a write op")
	}
}

// TestPaginateHoldsNoSandboxSlot: a paged call waiting on a slow
// provider holds no guest between its pages (the request is sent after
// the guest has finished), so with a pool of one guest another op runs
// and finishes while the paged call is still reading pages.
func TestPaginateHoldsNoSandboxSlot(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.PoolSize = 1 })
	const delay = 700 * time.Millisecond
	firstPage := make(chan struct{}) // closed when the first page is asked for
	var once sync.Once
	env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/crm/v3/objects/contacts" {
			return false // the fake's own answer for the other op
		}
		once.Do(func() { close(firstPage) })
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return true
		}
		after := r.URL.Query().Get("after")
		hubspotPage(w, []int{len(after) + 1}, after+"x")
		return true
	})
	paged := make(chan time.Time, 1)
	go func() {
		_, err := env.eng.Run(context.Background(), Call{Service: fakeapi.HubSpot, Op: "list_contacts", Args: json.RawMessage(`{}`),
			Credential: Credential{Secret: secret.Secret(fakeapi.Token(fakeapi.HubSpot))}, Pages: 3})
		if err != nil {
			t.Error(err)
		}
		paged <- time.Now()
	}()
	<-firstPage // the paged call is waiting on its first page
	if _, err := env.run(fakeapi.GitHub, "get_viewer", `{}`); err != nil {
		t.Fatalf("an op beside a paged call: %v", err)
	}
	other := time.Now()
	select {
	case done := <-paged:
		t.Fatalf("the other op finished at %s, after the paged call (%s): the paged call held the only guest", other.Format(time.StampMilli), done.Format(time.StampMilli))
	default:
	}
	<-paged
}
