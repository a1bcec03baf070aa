package paginate

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/registry"
)

func TestNextTarget(t *testing.T) {
	tests := []struct {
		name, header string
		want         []string
	}{
		{"github", `<https://api.github.com/user/repos?page=1>; rel="prev", <https://api.github.com/user/repos?page=3>; rel="next", <https://api.github.com/user/repos?page=9>; rel="last"`, []string{"https://api.github.com/user/repos?page=3"}},
		{"unquoted rel", `<https://a.example/x?page=2>; rel=next`, []string{"https://a.example/x?page=2"}},
		{"rel list, any case", `<https://a.example/x?page=2>; rel="last NEXT"`, []string{"https://a.example/x?page=2"}},
		{"comma inside the URI and a quoted param", `<https://a.example/x?a=1,2&page=2>; title="a, b"; rel="next"`, []string{"https://a.example/x?a=1,2&page=2"}},
		{"only the first rel counts", `<https://a.example/x?page=2>; rel="prev"; rel="next"`, nil},
		{"no angle brackets", `https://a.example/x?page=2; rel="next"`, nil},
		{"nextish is not next", `<https://a.example/x?page=2>; rel="nextpage"`, nil},
		{"empty", ``, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, l := range splitLinks(tt.header) {
				if target, ok := nextTarget(l); ok {
					got = append(got, target)
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Fatalf("next targets %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzPageCursor feeds hostile answers to every paging style: reading
// never panics, and a cursor it yields is a non-empty value (a decimal
// page number for an integer arg) or a stated stop.
func FuzzPageCursor(f *testing.F) {
	f.Add([]byte(`{"paging":{"next":{"after":"12"}}}`), `<https://api.github.com/user/repos?page=2>; rel="next"`)
	f.Add([]byte(`{"data":[{"id":"cus_1"}],"has_more":true}`), ``)
	f.Add([]byte(`{"data":[],"pagination":{"current_page":1,"total_pages":3}}`), `<https://evil.example/x>; rel="next"`)
	f.Add([]byte(`{"data":{"issues":{"pageInfo":{"hasNextPage":true,"endCursor":"a"}}}}`), `<https://api.github.com/user/repos?page=>; rel=next`)
	f.Add([]byte(`{"has_more":true,"has_more":false,"data":[1,2]}`), `<>; rel="next", <https://api.github.com/user/repos?page=2&page=3>; rel="next"`)
	pagers := []*Pager{
		{pg: &registry.Paginate{Style: registry.PaginateCursor, Arg: "after", Cursor: "paging.next.after"}, cursor: []string{"paging", "next", "after"}},
		{pg: &registry.Paginate{Style: registry.PaginateCursor, Arg: "after", Cursor: "c", HasMore: "data.issues.pageInfo.hasNextPage"},
			cursor: []string{"data", "issues", "pageInfo", "endCursor"}, hasMore: []string{"data", "issues", "pageInfo", "hasNextPage"}},
		{pg: &registry.Paginate{Style: registry.PaginateLastItem, Arg: "starting_after", HasMore: "has_more", LastItem: "id"},
			root: []string{"data"}, hasMore: []string{"has_more"}, lastItem: []string{"id"}},
		{pg: &registry.Paginate{Style: registry.PaginatePageCount, Arg: "page"}, isInt: true,
			page: []string{"pagination", "current_page"}, total: []string{"pagination", "total_pages"}},
		{pg: &registry.Paginate{Style: registry.PaginateLink, Arg: "page"}, isInt: true, queryKey: "page", host: "api.github.com"},
	}
	f.Fuzz(func(t *testing.T, body []byte, link string) {
		h := http.Header{}
		h.Set("Link", link)
		for _, pr := range pagers {
			c := pr.Read(body, h, "https://api.github.com/user/repos?page=1")
			if c == nil || !c.more {
				continue
			}
			if c.stop != "" {
				if c.msg == "" {
					t.Fatalf("%s: stop %s without a message", pr.pg.Style, c.stop)
				}
				continue
			}
			if c.value == "" {
				t.Fatalf("%s: an empty cursor was not stopped", pr.pg.Style)
			}
			if pr.isInt {
				if n, err := strconv.ParseInt(c.value, 10, 64); err != nil || n < 1 {
					t.Fatalf("%s: page %q is not a page number", pr.pg.Style, c.value)
				}
			}
		}
	})
}
