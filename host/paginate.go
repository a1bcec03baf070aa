package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/elevenmessenger/pinned/internal/jsonv"
	"github.com/elevenmessenger/pinned/internal/pick"
	"github.com/elevenmessenger/pinned/internal/upstream"
	"github.com/elevenmessenger/pinned/registry"
)

// Pagination (docs/MANIFEST.md "Paginate", docs/API.md "Pages"). An op
// whose manifest declares paginate gets, in its result, Next: the caller's
// args with the paginate arg set to the provider's next cursor — plain
// values of declared args, validated like any caller args. The host reads
// the cursor from the raw answer beside the pick; the guest never sees the
// answer (docs/RATIONALE.md, "Why does the guest never see the
// response?"). With Call.Pages the host follows Next itself, each page a
// whole op through Engine.run (guest renders, host checks, sends,
// projects), and merges the projected items under the same result cap.

// StopReason says why paging ended. The values are part of the API.
type StopReason string

// Stop reasons of Result.Stopped.
const (
	// StopLastPage: the provider said there is no next page.
	StopLastPage StopReason = "last_page"
	// StopPages: Call.Pages pages were read; Next is where to go on.
	StopPages StopReason = "pages"
	// StopResultCap: the next page's items would take the merged result
	// over the result cap; Next is that page, not included.
	StopResultCap StopReason = "result_cap"
	// StopPageFailed: a page after the first failed (its code and message
	// are in StopMessage); Next is that page, to retry.
	StopPageFailed StopReason = "page_failed"
	// StopRepeatedCursor: the provider's next cursor is the one just sent.
	StopRepeatedCursor StopReason = "repeated_cursor"
	// StopCursorCycle: the provider's next cursor was already followed in
	// this call (A→B→A).
	StopCursorCycle StopReason = "cursor_cycle"
	// StopEmptyPages: a page with no items claimed a next page.
	StopEmptyPages StopReason = "empty_pages"
	// StopEmptyCursor: the provider's next cursor is "".
	StopEmptyCursor StopReason = "empty_cursor"
	// StopLinkRefused: the Link rel="next" URL is not the pinned host and
	// the op's own path with one value of the page key.
	StopLinkRefused StopReason = "link_refused"
	// StopCursorInvalid: the provider's paging data cannot make next args
	// (not of the declared type, past the arg's bounds, missing where the
	// provider says there is more).
	StopCursorInvalid StopReason = "cursor_invalid"
	// StopTimeLimit: the call's Config.PagesTimeout ran out before the
	// next page was read (or while it was); Next is that page.
	StopTimeLimit StopReason = "time_limit"
)

// DefaultPagesTimeout is Config.PagesTimeout's default: a call with
// Pages takes at most this long in all, whatever its pages' own Timeout,
// so it ends well inside the sidecar's 60 s write timeout
// (sidecar.DefaultWriteTimeout; `pinned sidecar` checks --write-timeout
// exceeds --pages-timeout, with a broker also plus --op-timeout and
// --refresh-timeout for the retry after a refresh) instead of reading
// pages for an answer nobody can receive.
const DefaultPagesTimeout = 20 * time.Second

// pagesTimeout returns Config.PagesTimeout or its default.
func (e *Engine) pagesTimeout() time.Duration {
	if e.cfg.PagesTimeout > 0 {
		return e.cfg.PagesTimeout
	}
	return DefaultPagesTimeout
}

// maxLinkHeaderBytes bounds the Link header the host parses.
const maxLinkHeaderBytes = 16 << 10

// pager is an op's compiled paginate block.
type pager struct {
	pg       *registry.Paginate
	isInt    bool     // the paginate arg is an integer
	queryKey string   // link: the query key carrying the arg
	host     string   // the manifest's host
	root     []string // pick.root, for last_item
	// The paginate paths, split.
	cursor, hasMore, lastItem, page, total []string
}

func newPager(m *registry.Manifest, op *registry.Op) *pager {
	pg := op.Paginate
	// A write op never pages, whatever reached the host: following pages
	// repeats the request (the loader refuses it too).
	if pg == nil || op.Access != registry.AccessRead || op.Args[pg.Arg] == nil {
		return nil
	}
	return &pager{
		pg: pg, isInt: op.Args[pg.Arg].Type == registry.TypeInteger,
		queryKey: op.PageQueryKey(), host: m.Host, root: splitPath(op.Pick.Root),
		cursor: splitPath(pg.Cursor), hasMore: splitPath(pg.HasMore), lastItem: splitPath(pg.LastItem),
		page: splitPath(pg.Page), total: splitPath(pg.TotalPages),
	}
}

// pageCursor is what one answer says about the next page.
type pageCursor struct {
	more    bool   // the provider says a next page exists
	value   string // its cursor: the arg's value (decimal for an integer)
	current string // the page the answer says it is (page_count), if known
	stop    StopReason
	msg     string
}

func stopped(reason StopReason, format string, a ...any) *pageCursor {
	return &pageCursor{more: true, stop: reason, msg: fmt.Sprintf(format, a...)}
}

// read finds the next cursor in a successful answer: raw is the decoded
// body (already validated as JSON by the projection), h its headers and
// reqURL the URL the request went to.
func (pr *pager) read(raw []byte, h http.Header, reqURL string) *pageCursor {
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
			return stopped(StopCursorInvalid, "the answer says there is a next page (%s) but has no cursor at %s", pr.pg.HasMore, pr.pg.Cursor)
		case !ok:
			return nil // no cursor: the last page
		}
		return &pageCursor{more: true, value: v}
	case registry.PaginateLastItem:
		more, c := readBool(raw, pr.hasMore, pr.pg.HasMore)
		if c != nil || !more {
			return c
		}
		items, found, dup := pick.Lookup(raw, pr.root)
		if dup {
			return stopped(StopCursorInvalid, "the answer repeats a key on the way to its items")
		}
		last, n := pick.LastElement(items)
		switch {
		case !found || n < 0:
			return stopped(StopCursorInvalid, "the answer says there is a next page but holds no list of items")
		case n == 0:
			return stopped(StopEmptyPages, "the answer holds no items but says there is a next page (%s)", pr.pg.HasMore)
		}
		v, ok, c := readString(last, pr.lastItem, pr.pg.LastItem)
		switch {
		case c != nil:
			return c
		case !ok:
			return stopped(StopCursorInvalid, "the last item has no %s to continue after", pr.pg.LastItem)
		}
		return &pageCursor{more: true, value: v}
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
			return stopped(StopCursorInvalid, "the answer's page count is not usable (page %d of %d)", cur, total)
		case cur >= total:
			return &pageCursor{current: strconv.FormatInt(cur, 10)}
		}
		return &pageCursor{more: true, value: strconv.FormatInt(cur+1, 10), current: strconv.FormatInt(cur, 10)}
	}
	return nil
}

// readBool reads the boolean at path; absent (or null) is false.
func readBool(raw []byte, path []string, name string) (bool, *pageCursor) {
	v, found, dup := pick.Lookup(raw, path)
	switch {
	case dup:
		return false, stopped(StopCursorInvalid, "the answer repeats a key on the way to %s", name)
	case !found || string(v) == "null":
		return false, nil
	case string(v) == "true":
		return true, nil
	case string(v) == "false":
		return false, nil
	}
	return false, stopped(StopCursorInvalid, "the answer's %s is not true or false", name)
}

// readString reads the string at path; ok is false when it is absent or
// null.
func readString(raw []byte, path []string, name string) (string, bool, *pageCursor) {
	v, found, dup := pick.Lookup(raw, path)
	switch {
	case dup:
		return "", false, stopped(StopCursorInvalid, "the answer repeats a key on the way to %s", name)
	case !found || string(v) == "null":
		return "", false, nil
	}
	pv, err := jsonv.Parse(v)
	if err != nil || pv.Kind != jsonv.String {
		return "", false, stopped(StopCursorInvalid, "the answer's %s is not a string", name)
	}
	if pv.S == "" {
		return "", false, stopped(StopEmptyCursor, "the answer's %s is the empty string", name)
	}
	return pv.S, true, nil
}

// readInt reads the integer at path, which must be present.
func readInt(raw []byte, path []string, name string) (int64, *pageCursor) {
	v, found, dup := pick.Lookup(raw, path)
	if dup {
		return 0, stopped(StopCursorInvalid, "the answer repeats a key on the way to %s", name)
	}
	if found {
		if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && n >= -1<<53 && n <= 1<<53 {
			return n, nil
		}
	}
	return 0, stopped(StopCursorInvalid, "the answer has no integer at %s", name)
}

// readLink finds the one Link rel="next" (RFC 8288) and takes only the
// page key's value from it. The URL is untrusted: it must be an absolute
// https URL of the pinned host (port 443 or none) and the request's own
// path, with exactly one value of the page key; anything else ends paging.
func (pr *pager) readLink(h http.Header, reqURL string) *pageCursor {
	values := h.Values("Link")
	n := 0
	for _, v := range values {
		n += len(v)
	}
	if n > maxLinkHeaderBytes {
		return stopped(StopLinkRefused, "the Link header is over %d bytes", maxLinkHeaderBytes)
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
		return stopped(StopLinkRefused, "the Link header has %d rel=\"next\" links; want one", len(next))
	}
	u, err := url.Parse(next[0])
	if err != nil || u.Scheme != "https" || u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return stopped(StopLinkRefused, "the next link is not an https URL of %s", pr.host)
	}
	if host := u.Host; host != pr.host && host != pr.host+":443" {
		return stopped(StopLinkRefused, "the next link names another host, not %s", pr.host)
	}
	req, err := url.Parse(reqURL)
	if err != nil || u.EscapedPath() != req.EscapedPath() {
		return stopped(StopLinkRefused, "the next link names another path than the op's own")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil || len(q[pr.queryKey]) != 1 {
		return stopped(StopLinkRefused, "the next link does not carry exactly one %s", pr.queryKey)
	}
	v := q[pr.queryKey][0]
	if v == "" {
		return stopped(StopEmptyCursor, "the next link's %s is the empty string", pr.queryKey)
	}
	if pr.isInt {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 1 || strconv.FormatInt(n, 10) != v {
			return stopped(StopCursorInvalid, "the next link's %s is not a page number", pr.queryKey)
		}
	}
	return &pageCursor{more: true, value: v}
}

// splitLinks splits a Link field value at the commas between link-values
// (a comma inside <...> or a quoted string belongs to it).
func splitLinks(v string) []string {
	var out []string
	inURI, inQuote, start := false, false, 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case inQuote && c == '\\':
			i++
		case inQuote:
			inQuote = c != '"'
		case inURI:
			inURI = c != '>'
		case c == '<':
			inURI = true
		case c == '"':
			inQuote = true
		case c == ',':
			out = append(out, v[start:i])
			start = i + 1
		}
	}
	return append(out, v[start:])
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
	for _, param := range splitParams(l[end+1:]) {
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

// splitParams splits a link-value's parameters at the semicolons outside
// quoted strings (RFC 9110 section 5.6.4; a backslash escapes inside one).
func splitParams(s string) []string {
	var out []string
	inQuote, start := false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case inQuote && c == '\\':
			i++
		case inQuote:
			inQuote = c != '"'
		case c == '"':
			inQuote = true
		case c == ';':
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// runPages runs call: one page, or with call.Pages up to that many pages
// merged into one result.
func (e *Engine) runPages(ctx context.Context, call Call, start time.Time) (*Result, *Error) {
	p, perr := e.prepare(call.Service, call.Op)
	if perr != nil {
		return nil, perr
	}
	if call.Pages != 0 {
		switch {
		case p.pager == nil:
			return nil, newError(CodeBadArgs, fmt.Sprintf("op %s.%s does not page; call it without pages", p.m.ID, p.name))
		case call.Pages < 0 || call.Pages > p.pager.pg.MaxPages:
			return nil, newError(CodeBadArgs, fmt.Sprintf("pages must be 1 to %d for op %s.%s", p.pager.pg.MaxPages, p.m.ID, p.name))
		}
	}
	args, aerr := argsObject(call.Args)
	if call.Pages != 0 {
		// The whole paged call, every page in it, ends by this deadline.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, start.Add(e.pagesTimeout()))
		defer cancel()
	}
	res, err := e.run(ctx, call, start)
	if err != nil {
		return nil, err
	}
	if p.pager == nil || aerr != nil {
		res.cursor = nil
		return res, nil
	}
	if call.Pages == 0 {
		c := res.cursor
		res.cursor = nil
		empty := isEmptyList(res.Data)
		next, reason, msg := e.nextArgs(p, args, c, empty, nil, call.Credential)
		res.Next, res.Stopped, res.StopMessage = next, reason, msg
		return res, nil
	}
	return e.follow(ctx, call, p, args, res)
}

// follow reads pages 2… of call after first, merging the items.
func (e *Engine) follow(ctx context.Context, call Call, p *prepared, args jsonv.Value, first *Result) (*Result, *Error) {
	out := &Result{Status: first.Status}
	merged := []byte{'['}
	seen := map[string]bool{}
	if v, ok := argValue(args, p.pager.pg.Arg); ok {
		seen[v] = true
	}
	res := first
	for page := 1; ; page++ {
		items, ok := listItems(res.Data)
		if !ok {
			out.Stopped, out.StopMessage = StopPageFailed, fmt.Sprintf("page %d: the result is not a list of items", page)
			if page == 1 {
				return nil, newError(CodeUpstreamInvalid, "the op's projected result is not a list, so its pages cannot be merged")
			}
			break
		}
		if len(items) > 0 && page > 1 && len(merged)+1+len(items)+1 > e.cfg.MaxResultBytes {
			out.Next = jsonv.Append(nil, args)
			out.Stopped, out.StopMessage = StopResultCap, fmt.Sprintf("page %d would take the result over the %d-byte limit; next asks for it", page, e.cfg.MaxResultBytes)
			break
		}
		if len(items) > 0 {
			if len(merged) > 1 {
				merged = append(merged, ',')
			}
			merged = append(merged, items...)
		}
		out.Pages, out.RawBytes = page, out.RawBytes+res.RawBytes
		c := res.cursor
		res.cursor = nil
		if c != nil && c.current != "" {
			seen[c.current] = true
		}
		next, reason, msg := e.nextArgs(p, args, c, len(items) == 0, seen, call.Credential)
		if next == nil {
			if reason == "" {
				reason, msg = StopLastPage, "the provider says this is the last page"
			}
			out.Stopped, out.StopMessage = reason, msg
			break
		}
		if page == call.Pages {
			out.Next = next
			out.Stopped, out.StopMessage = StopPages, fmt.Sprintf("read the %d pages asked for; next continues", page)
			break
		}
		if ctx.Err() == context.DeadlineExceeded {
			out.Next = next
			out.Stopped, out.StopMessage = StopTimeLimit, fmt.Sprintf("the %s limit for the whole call ran out before page %d; next asks for it", e.pagesTimeout(), page+1)
			break
		}
		v, _ := argValue(mustArgs(next), p.pager.pg.Arg)
		seen[v] = true
		args = mustArgs(next)
		c2 := call
		c2.Args = next
		var err *Error
		res, err = e.run(ctx, c2, time.Now())
		if err != nil {
			out.Next = next
			out.Stopped, out.StopMessage = StopPageFailed, fmt.Sprintf("page %d: %s: %s", page+1, err.Code, err.Message)
			if ctx.Err() == context.DeadlineExceeded {
				out.Stopped, out.StopMessage = StopTimeLimit, fmt.Sprintf("the %s limit for the whole call ran out while page %d was read; next asks for it", e.pagesTimeout(), page+1)
			}
			break
		}
	}
	out.Data = append(merged, ']')
	return out, nil
}

// nextArgs turns a page's cursor into the args of the next page, or says
// why there is none. seen holds the cursors already followed in this call
// (nil for a single page). A cursor that echoes the credential (as
// upstream.Redact judges an error message) is refused: next goes back to
// the caller, which must never see any part of it.
func (e *Engine) nextArgs(p *prepared, args jsonv.Value, c *pageCursor, empty bool, seen map[string]bool, cred Credential) (json.RawMessage, StopReason, string) {
	arg := p.pager.pg.Arg
	switch {
	case c == nil || !c.more:
		return nil, "", ""
	case c.stop != "":
		return nil, c.stop, c.msg
	case empty:
		return nil, StopEmptyPages, "a page with no items says there is a next page"
	}
	if upstream.Redact(c.value, string(cred.Secret)) != c.value {
		return nil, StopCursorInvalid, fmt.Sprintf("the provider's next %s echoes the credential", arg)
	}
	if cur, ok := argValue(args, arg); ok && cur == c.value {
		return nil, StopRepeatedCursor, fmt.Sprintf("the provider's next %s is the one just sent", arg)
	}
	if seen[c.value] {
		return nil, StopCursorCycle, fmt.Sprintf("the provider's next %s was already followed in this call", arg)
	}
	val := jsonv.Value{Kind: jsonv.String, S: c.value}
	if p.pager.isInt {
		val = jsonv.Value{Kind: jsonv.Number, S: c.value}
	}
	next := setMember(args, arg, val)
	raw := json.RawMessage(jsonv.Append(nil, next))
	if verr := ValidateArgs(p.m, p.name, raw, e.cfg.MaxArgsBytes); verr != nil {
		return nil, StopCursorInvalid, "the next page's args are refused: " + verr.Message
	}
	return raw, "", ""
}

// argsObject parses the caller's args as the object the guest accepted
// (empty means {}).
func argsObject(raw json.RawMessage) (jsonv.Value, error) {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return jsonv.Value{Kind: jsonv.Object}, nil
	}
	v, err := jsonv.Parse(raw)
	if err == nil && v.Kind != jsonv.Object {
		err = fmt.Errorf("args are not an object")
	}
	return v, err
}

func mustArgs(raw json.RawMessage) jsonv.Value {
	v, _ := argsObject(raw)
	return v
}

// argValue returns the arg's value as a cursor: a string's text or a
// number's literal.
func argValue(args jsonv.Value, name string) (string, bool) {
	v := args.Get(name)
	if v == nil || (v.Kind != jsonv.String && v.Kind != jsonv.Number) {
		return "", false
	}
	return v.S, true
}

// setMember returns a copy of the object args with member name set to v
// (replaced in place, or appended).
func setMember(args jsonv.Value, name string, v jsonv.Value) jsonv.Value {
	out := jsonv.Value{Kind: jsonv.Object, O: make([]jsonv.Member, 0, len(args.O)+1)}
	set := false
	for _, m := range args.O {
		if m.Key == name {
			m.Value, set = v, true
		}
		out.O = append(out.O, m)
	}
	if !set {
		out.O = append(out.O, jsonv.Member{Key: name, Value: v})
	}
	return out
}

// isEmptyList reports a projected result that holds no items.
func isEmptyList(data []byte) bool {
	items, ok := listItems(data)
	return ok && len(items) == 0
}

// listItems returns the elements of a projected list, as the bytes
// between its brackets ("" for [] and null); ok is false when data is not
// a list. Projected data is compact JSON.
func listItems(data []byte) ([]byte, bool) {
	switch s := string(data); {
	case s == "null" || s == "[]" || s == "":
		return nil, true
	case len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']':
		return data[1 : len(data)-1], true
	}
	return nil, false
}

func splitPath(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, ".")
}
