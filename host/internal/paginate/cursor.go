package paginate

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/elevenmessenger/pinned/host/api"

	"github.com/elevenmessenger/pinned/host/internal/pick"
	"github.com/elevenmessenger/pinned/internal/jsonv"
	"github.com/elevenmessenger/pinned/registry"
)

// maxLinkHeaderBytes bounds the Link header the host parses.
const maxLinkHeaderBytes = 16 << 10

// Pager is an op's compiled paginate block.
type Pager struct {
	pg       *registry.Paginate
	isInt    bool     // the paginate arg is an integer
	queryKey string   // link: the query key carrying the arg
	host     string   // the manifest's host
	root     []string // pick.root, for last_item
	// The paginate paths, split.
	cursor, hasMore, lastItem, page, total []string
}

// New compiles op's paginate block; nil when the op does not page (no
// block, or a write op: following pages repeats the request).
func New(m *registry.Manifest, op *registry.Op) *Pager {
	pg := op.Paginate
	// A write op never pages, whatever reached the host: following pages
	// repeats the request (the loader refuses it too).
	if pg == nil || op.Access != registry.AccessRead || op.Args[pg.Arg] == nil {
		return nil
	}
	return &Pager{
		pg: pg, isInt: op.Args[pg.Arg].Type == registry.TypeInteger,
		queryKey: op.PageQueryKey(), host: m.Host, root: splitPath(op.Pick.Root),
		cursor: splitPath(pg.Cursor), hasMore: splitPath(pg.HasMore), lastItem: splitPath(pg.LastItem),
		page: splitPath(pg.Page), total: splitPath(pg.TotalPages),
	}
}

// MaxPages is the op's paginate.max_pages: the most pages one call may
// ask for.
func (pr *Pager) MaxPages() int { return pr.pg.MaxPages }

// Cursor is what one answer says about the next page.
type Cursor struct {
	more    bool   // the provider says a next page exists
	value   string // its cursor: the arg's value (decimal for an integer)
	current string // the page the answer says it is (page_count), if known
	stop    api.StopReason
	msg     string
}

func stopped(reason api.StopReason, format string, a ...any) *Cursor {
	return &Cursor{more: true, stop: reason, msg: fmt.Sprintf(format, a...)}
}

// Read finds the next cursor in a successful answer: raw is the decoded
// body (already validated as JSON by the projection), h its headers and
// reqURL the URL the request went to. Nil means the last page.
func (pr *Pager) Read(raw []byte, h http.Header, reqURL string) *Cursor {
	switch pr.pg.Style {
	case registry.PaginateLink:
		return pr.readLink(h, reqURL)
	case registry.PaginateCursor:
		if pr.hasMore != nil {
			more, c := readBool(raw, pr.hasMore, pr.pg.HasMore)
			if c != nil || !more {
				return c
			}
		}
		v, ok, c := readString(raw, pr.cursor, pr.pg.Cursor)
		switch {
		case c != nil:
			return c
		case !ok && pr.hasMore != nil:
			return stopped(api.StopCursorInvalid, "the answer says there is a next page (%s) but has no cursor at %s", pr.pg.HasMore, pr.pg.Cursor)
		case !ok:
			return nil // no cursor: the last page
		}
		return &Cursor{more: true, value: v}
	case registry.PaginateLastItem:
		more, c := readBool(raw, pr.hasMore, pr.pg.HasMore)
		if c != nil || !more {
			return c
		}
		items, found, dup := pick.Lookup(raw, pr.root)
		if dup {
			return stopped(api.StopCursorInvalid, "the answer repeats a key on the way to its items")
		}
		last, n := pick.LastElement(items)
		switch {
		case !found || n < 0:
			return stopped(api.StopCursorInvalid, "the answer says there is a next page but holds no list of items")
		case n == 0:
			return stopped(api.StopEmptyPages, "the answer holds no items but says there is a next page (%s)", pr.pg.HasMore)
		}
		v, ok, c := readString(last, pr.lastItem, pr.pg.LastItem)
		switch {
		case c != nil:
			return c
		case !ok:
			return stopped(api.StopCursorInvalid, "the last item has no %s to continue after", pr.pg.LastItem)
		}
		return &Cursor{more: true, value: v}
	case registry.PaginatePageCount:
		cur, c := readInt(raw, pr.page, pr.pg.Page)
		if c != nil {
			return c
		}
		total, c := readInt(raw, pr.total, pr.pg.TotalPages)
		if c != nil {
			return c
		}
		switch {
		case cur < 1 || total < 0:
			return stopped(api.StopCursorInvalid, "the answer's page count is not usable (page %d of %d)", cur, total)
		case cur >= total:
			return &Cursor{current: strconv.FormatInt(cur, 10)}
		}
		return &Cursor{more: true, value: strconv.FormatInt(cur+1, 10), current: strconv.FormatInt(cur, 10)}
	}
	return nil
}

// readBool reads the boolean at path; absent (or null) is false.
func readBool(raw []byte, path []string, name string) (bool, *Cursor) {
	v, found, dup := pick.Lookup(raw, path)
	switch {
	case dup:
		return false, stopped(api.StopCursorInvalid, "the answer repeats a key on the way to %s", name)
	case !found || string(v) == "null":
		return false, nil
	case string(v) == "true":
		return true, nil
	case string(v) == "false":
		return false, nil
	}
	return false, stopped(api.StopCursorInvalid, "the answer's %s is not true or false", name)
}

// readString reads the string at path; ok is false when it is absent or
// null.
func readString(raw []byte, path []string, name string) (string, bool, *Cursor) {
	v, found, dup := pick.Lookup(raw, path)
	switch {
	case dup:
		return "", false, stopped(api.StopCursorInvalid, "the answer repeats a key on the way to %s", name)
	case !found || string(v) == "null":
		return "", false, nil
	}
	pv, err := jsonv.Parse(v)
	if err != nil || pv.Kind != jsonv.String {
		return "", false, stopped(api.StopCursorInvalid, "the answer's %s is not a string", name)
	}
	if pv.S == "" {
		return "", false, stopped(api.StopEmptyCursor, "the answer's %s is the empty string", name)
	}
	return pv.S, true, nil
}

// readInt reads the integer at path, which must be present.
func readInt(raw []byte, path []string, name string) (int64, *Cursor) {
	v, found, dup := pick.Lookup(raw, path)
	if dup {
		return 0, stopped(api.StopCursorInvalid, "the answer repeats a key on the way to %s", name)
	}
	if found {
		if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && n >= -1<<53 && n <= 1<<53 {
			return n, nil
		}
	}
	return 0, stopped(api.StopCursorInvalid, "the answer has no integer at %s", name)
}

// readLink finds the one Link rel="next" (RFC 8288) and takes only the
// page key's value from it. The URL is untrusted: it must be an absolute
// https URL of the pinned host (port 443 or none) and the request's own
// path, with exactly one value of the page key; anything else ends paging.
func (pr *Pager) readLink(h http.Header, reqURL string) *Cursor {
	values := h.Values("Link")
	n := 0
	for _, v := range values {
		n += len(v)
	}
	if n > maxLinkHeaderBytes {
		return stopped(api.StopLinkRefused, "the Link header is over %d bytes", maxLinkHeaderBytes)
	}
	var next []string
	for _, v := range values {
		for _, l := range splitLinks(v) {
			if target, ok := nextTarget(l); ok {
				next = append(next, target)
			}
		}
	}
	switch len(next) {
	case 0:
		return nil // no rel="next": the last page
	case 1:
	default:
		return stopped(api.StopLinkRefused, "the Link header has %d rel=\"next\" links; want one", len(next))
	}
	u, err := url.Parse(next[0])
	if err != nil || u.Scheme != "https" || u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return stopped(api.StopLinkRefused, "the next link is not an https URL of %s", pr.host)
	}
	if host := u.Host; host != pr.host && host != pr.host+":443" {
		return stopped(api.StopLinkRefused, "the next link names another host, not %s", pr.host)
	}
	req, err := url.Parse(reqURL)
	if err != nil || u.EscapedPath() != req.EscapedPath() {
		return stopped(api.StopLinkRefused, "the next link names another path than the op's own")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil || len(q[pr.queryKey]) != 1 {
		return stopped(api.StopLinkRefused, "the next link does not carry exactly one %s", pr.queryKey)
	}
	v := q[pr.queryKey][0]
	if v == "" {
		return stopped(api.StopEmptyCursor, "the next link's %s is the empty string", pr.queryKey)
	}
	if pr.isInt {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 1 || strconv.FormatInt(n, 10) != v {
			return stopped(api.StopCursorInvalid, "the next link's %s is not a page number", pr.queryKey)
		}
	}
	return &Cursor{more: true, value: v}
}

// splitLinks splits a Link field value at the commas between link-values
// (a comma inside <...> or a quoted string belongs to it).
func splitLinks(v string) []string { return splitOutside(v, ',', true) }

// splitOutside splits s at each sep outside quoted strings (RFC 9110
// section 5.6.4; a backslash escapes inside one) and, with angles, outside
// <...> (a link-value's URI-Reference, RFC 8288 section 3).
func splitOutside(s string, sep byte, angles bool) []string {
	var out []string
	inURI, inQuote, start := false, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case inQuote && c == '\\':
			i++
		case inQuote:
			inQuote = c != '"'
		case inURI:
			inURI = c != '>'
		case angles && c == '<':
			inURI = true
		case c == '"':
			inQuote = true
		case c == sep:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// nextTarget returns the target of a link-value whose rel includes
// "next" (case-insensitively; rel is a space-separated list). Parameters
// split at the semicolons outside quoted strings, so a quoted value such
// as title="a; rel=next" is one parameter, not a rel.
func nextTarget(l string) (string, bool) {
	l = strings.TrimSpace(l)
	if !strings.HasPrefix(l, "<") {
		return "", false
	}
	end := strings.IndexByte(l, '>')
	if end < 0 {
		return "", false
	}
	target := l[1:end]
	for _, param := range splitOutside(l[end+1:], ';', false) { // the parameters, at semicolons outside quoted strings
		k, v, ok := strings.Cut(strings.TrimSpace(param), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "rel") {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"`)
		for _, rel := range strings.Fields(v) {
			if strings.EqualFold(rel, "next") {
				return target, true
			}
		}
		return "", false // the first rel parameter counts (RFC 8288 section 3.3)
	}
	return "", false
}

func splitPath(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, ".")
}
