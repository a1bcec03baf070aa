package paginate

import (
	"net/http"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/host/api"

	"github.com/elevenmessenger/pinned/registry"
)

// Red team of paging (docs/SECURITY.md, "The red team"): the provider's
// answer is hostile — it chooses the Link header. The host-level rows
// (the cursor, has_more, page counts, time) are host's
// paginate_hostile_test.go.

// TestPaginateHostileLink feeds hostile Link headers to GitHub's pager.
// The URL is never fetched, so the only thing a link can do is choose
// the page value — or, through a parser confusion, be taken as rel="next"
// when it is not (the quoted-parameter rows broke: a title="…; rel=next"
// parameter was read as the rel).
func TestPaginateHostileLink(t *testing.T) {
	pr := &Pager{pg: &registry.Paginate{Style: registry.PaginateLink, Arg: "page"}, isInt: true, queryKey: "page", host: "api.github.com"}
	strPr := &Pager{pg: &registry.Paginate{Style: registry.PaginateLink, Arg: "page"}, queryKey: "page", host: "api.github.com"}
	const req = "https://api.github.com/user/repos?per_page=100"
	const ok2 = `<https://api.github.com/user/repos?page=2>; rel="next"`
	tests := []struct {
		name     string
		links    []string // one Link header each
		str      bool     // a string page arg instead of an integer
		want     string   // the page value, or "" for none
		wantStop api.StopReason
	}{
		{name: "quoted title smuggles rel=next before the real rel", links: []string{`<https://api.github.com/user/repos?page=2>; title="x; rel=next"; rel="prev"`}},
		{name: "quoted title with an escaped quote smuggles rel=next", links: []string{`<https://api.github.com/user/repos?page=2>; title="a\"; rel=next"; rel=prev`}},
		{name: "a quoted semicolon before the real rel next", links: []string{`<https://api.github.com/user/repos?page=2>; title="a; b"; rel="next"`}, want: "2"},
		{name: "rel list prev next", links: []string{`<https://api.github.com/user/repos?page=2>; rel="prev next"`}, want: "2"},
		{name: "upper-case REL and NEXT", links: []string{`<https://api.github.com/user/repos?page=2>; REL=NEXT`}, want: "2"},
		{name: "whitespace everywhere", links: []string{"  <https://api.github.com/user/repos?page=2>  ;  rel = \"next\"  ,  "}, want: "2"},
		{name: "next in each of two Link headers", links: []string{ok2, `<https://api.github.com/user/repos?page=9>; rel="next"`}, wantStop: api.StopLinkRefused},
		{name: "prev in one Link header, next in another", links: []string{`<https://api.github.com/user/repos?page=1>; rel="prev"`, ok2}, want: "2"},
		{name: "angle brackets inside a parameter", links: []string{`<https://evil.example/x?page=9>; title="<https://api.github.com/user/repos?page=2>"; rel=next`}, wantStop: api.StopLinkRefused},
		{name: "header over 16 KiB", links: []string{ok2 + ", " + strings.Repeat(`<https://api.github.com/user/repos?page=1>; rel="prev", `, 300)}, wantStop: api.StopLinkRefused},
		{name: "huge header split over many Link fields", links: append([]string{ok2}, strings.Split(strings.Repeat("<https://x.example/>; rel=prev\n", 600), "\n")...), wantStop: api.StopLinkRefused},
		{name: "upper-case host (fails closed)", links: []string{`<https://API.GITHUB.COM/user/repos?page=2>; rel="next"`}, wantStop: api.StopLinkRefused},
		{name: "trailing dot host", links: []string{`<https://api.github.com./user/repos?page=2>; rel="next"`}, wantStop: api.StopLinkRefused},
		{name: "explicit port 443", links: []string{`<https://api.github.com:443/user/repos?page=2>; rel="next"`}, want: "2"},
		{name: "port 0443", links: []string{`<https://api.github.com:0443/user/repos?page=2>; rel="next"`}, wantStop: api.StopLinkRefused},
		{name: "percent-encoded host", links: []string{`<https://api%2Egithub.com/user/repos?page=2>; rel="next"`}, wantStop: api.StopLinkRefused},
		{name: "IDN look-alike host", links: []string{`<https://аpi.github.com/user/repos?page=2>; rel="next"`}, wantStop: api.StopLinkRefused},
		{name: "punycode host", links: []string{`<https://xn--pi-7ka.github.com/user/repos?page=2>; rel="next"`}, wantStop: api.StopLinkRefused},
		{name: "userinfo that names the host", links: []string{`<https://api.github.com@evil.example/user/repos?page=2>; rel="next"`}, wantStop: api.StopLinkRefused},
		{name: "backslash before @", links: []string{`<https://api.github.com\@evil.example/user/repos?page=2>; rel="next"`}, wantStop: api.StopLinkRefused},
		{name: "scheme-relative //evil", links: []string{`<//evil.example/user/repos?page=2>; rel="next"`}, wantStop: api.StopLinkRefused},
		{name: "relative path", links: []string{`</user/repos?page=2>; rel="next"`}, wantStop: api.StopLinkRefused},
		{name: "path //evil on the host", links: []string{`<https://api.github.com//evil.example/user/repos?page=2>; rel="next"`}, wantStop: api.StopLinkRefused},
		{name: "percent-encoded slash in the path", links: []string{`<https://api.github.com/user%2Frepos?page=2>; rel="next"`}, wantStop: api.StopLinkRefused},
		{name: "dot segments in the path", links: []string{`<https://api.github.com/user/x/../repos?page=2>; rel="next"`}, wantStop: api.StopLinkRefused},
		{name: "fragment", links: []string{`<https://api.github.com/user/repos?page=2#x>; rel="next"`}, wantStop: api.StopLinkRefused},
		{name: "fragment hiding another host", links: []string{`<https://evil.example#@api.github.com/user/repos?page=2>; rel="next"`}, wantStop: api.StopLinkRefused},
		{name: "semicolon in the query", links: []string{`<https://api.github.com/user/repos?page=2;per_page=1>; rel="next"`}, wantStop: api.StopLinkRefused},
		{name: "page key in another case", links: []string{`<https://api.github.com/user/repos?Page=2>; rel="next"`}, wantStop: api.StopLinkRefused},
		{name: "encoded & smuggles a key into an integer page", links: []string{`<https://api.github.com/user/repos?page=2%26per_page%3D1>; rel="next"`}, wantStop: api.StopCursorInvalid},
		{name: "plus sign", links: []string{`<https://api.github.com/user/repos?page=%2B2>; rel="next"`}, wantStop: api.StopCursorInvalid},
		{name: "page 0", links: []string{`<https://api.github.com/user/repos?page=0>; rel="next"`}, wantStop: api.StopCursorInvalid},
		{name: "negative page", links: []string{`<https://api.github.com/user/repos?page=-1>; rel="next"`}, wantStop: api.StopCursorInvalid},
		{name: "leading zero", links: []string{`<https://api.github.com/user/repos?page=02>; rel="next"`}, wantStop: api.StopCursorInvalid},
		{name: "page past int64", links: []string{`<https://api.github.com/user/repos?page=18446744073709551617>; rel="next"`}, wantStop: api.StopCursorInvalid},
		{name: "float page", links: []string{`<https://api.github.com/user/repos?page=2.0>; rel="next"`}, wantStop: api.StopCursorInvalid},
		{name: "other keys are ignored, never taken", links: []string{`<https://api.github.com/user/repos?visibility=private&page=3&access_token=x>; rel="next"`}, want: "3"},
		{name: "string page arg: encoded & stays one value", str: true, links: []string{`<https://api.github.com/user/repos?page=a%26per_page%3D1>; rel="next"`}, want: "a&per_page=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pr
			if tt.str {
				p = strPr
			}
			h := http.Header{}
			for _, l := range tt.links {
				h.Add("Link", l)
			}
			c := p.Read(nil, h, req)
			var got string
			var stop api.StopReason
			if c != nil {
				got, stop = c.value, c.stop
				if c.stop != "" && (c.msg == "" || c.value != "") {
					t.Errorf("stop %s with value %q and message %q", c.stop, c.value, c.msg)
				}
			}
			if got != tt.want || stop != tt.wantStop {
				t.Fatalf("page %q stop %q, want page %q stop %q", got, stop, tt.want, tt.wantStop)
			}
		})
	}
}
