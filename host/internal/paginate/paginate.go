// Package paginate follows an op's pages (docs/MANIFEST.md "Paginate",
// docs/API.md "Pages"). An op whose manifest declares paginate gets, in
// its result, next: the caller's args with the paginate arg set to the
// provider's next cursor — plain values of declared args, validated like
// any caller args. The cursor is read from the raw answer beside the pick
// (Pager.Read); the guest never sees the answer (docs/RATIONALE.md, "Why
// does the guest never see the response?"). With a number of pages asked
// for, Pager.Run follows next itself, each page a whole op the host runs
// (Op: guest renders, host checks, sends, projects), and merges the
// projected items under the same result cap, guarded against a hostile
// provider's cursors (repeated, cyclic, empty, echoing the credential,
// refused as args) and bounded in time.
//
// It imports the registry, host/api, internal/jsonv and host/internal/pick; only the
// host imports it, and hands it the op to run.
package paginate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/elevenmessenger/pinned/host/api"

	"github.com/elevenmessenger/pinned/internal/jsonv"
)

// Page is one page as the host ran it.
type Page struct {
	// Status is the upstream HTTP status (2xx).
	Status int
	// Data is the projected result: a list for an op that pages.
	Data json.RawMessage
	// RawBytes is the decoded size of the upstream body.
	RawBytes int64
	// Cursor is what the answer says about the next page (Pager.Read);
	// nil on the last page.
	Cursor *Cursor
}

// Op is the op whose pages are followed, as the host runs it.
type Op interface {
	// Run runs the op with args as a whole op and returns its page, or on
	// failure the failure as the caller reports it ("code: message").
	Run(ctx context.Context, args json.RawMessage) (*Page, string)
	// Refused returns why args made from the provider's cursor are
	// refused, as the caller's args would be, and false when they pass.
	Refused(args json.RawMessage) (string, bool)
	// Echoes reports a cursor value that echoes the op's credential: it
	// would go back to the caller in next, which must never see any part
	// of the credential.
	Echoes(value string) bool
}

// Limits bound one call.
type Limits struct {
	// Pages is the number of pages asked for, 1 to MaxPages; 0 reads the
	// one page given and only says where next goes.
	Pages int
	// MaxResultBytes caps the merged result, in bytes.
	MaxResultBytes int
	// Time is the whole call's time limit, for the stop message: the
	// caller sets the deadline on ctx before the first page.
	Time time.Duration
}

// Result is a call's pages: the first page's fields with next, or the
// merged pages.
type Result struct {
	// Status is the first page's status.
	Status int
	// Data is the first page's data, or with Limits.Pages the items of
	// every page read, merged into one list.
	Data json.RawMessage
	// RawBytes is the decoded size of the upstream bodies read, summed.
	RawBytes int64
	// Pages is how many pages Data holds (0 without Limits.Pages).
	Pages int
	// Next is the args of the next page, nil when there is none to
	// follow.
	Next json.RawMessage
	// Stopped says why paging ended: always with Limits.Pages, and on a
	// single page when a next page exists but cannot be followed.
	Stopped api.StopReason
	// StopMessage explains Stopped for a human.
	StopMessage string
}

// ErrNotList is Run's error when the first page's projected result is
// not a list, so pages cannot be merged.
var ErrNotList = errors.New("paginate: the projected result is not a list")

// Run continues a call whose first page the host ran with args: without
// lim.Pages it says where next goes; with it, it reads pages 2… through
// op, merging their items, until the provider's last page, lim.Pages
// pages, the result cap, a page that fails, a guard, or ctx's deadline.
// Args that are not a JSON object (the guest would have refused them) end
// it at the first page, without next.
func (pr *Pager) Run(ctx context.Context, op Op, args json.RawMessage, first *Page, lim Limits) (*Result, error) {
	obj, aerr := argsObject(args)
	if aerr != nil {
		return &Result{Status: first.Status, Data: first.Data, RawBytes: first.RawBytes}, nil
	}
	if lim.Pages == 0 {
		empty := isEmptyList(first.Data)
		next, reason, msg := pr.nextArgs(op, obj, first.Cursor, empty, nil)
		return &Result{Status: first.Status, Data: first.Data, RawBytes: first.RawBytes,
			Next: next, Stopped: reason, StopMessage: msg}, nil
	}
	return pr.follow(ctx, op, obj, first, lim)
}

// follow reads pages 2… after first, merging the items.
func (pr *Pager) follow(ctx context.Context, op Op, args jsonv.Value, first *Page, lim Limits) (*Result, error) {
	out := &Result{Status: first.Status}
	merged := []byte{'['}
	seen := map[string]bool{}
	if v, ok := argValue(args, pr.pg.Arg); ok {
		seen[v] = true
	}
	res := first
	for page := 1; ; page++ {
		items, ok := listItems(res.Data)
		if !ok {
			out.Stopped, out.StopMessage = api.StopPageFailed, fmt.Sprintf("page %d: the result is not a list of items", page)
			if page == 1 {
				return nil, ErrNotList
			}
			break
		}
		if len(items) > 0 && page > 1 && len(merged)+1+len(items)+1 > lim.MaxResultBytes {
			out.Next = jsonv.Append(nil, args)
			out.Stopped, out.StopMessage = api.StopResultCap, fmt.Sprintf("page %d would take the result over the %d-byte limit; next asks for it", page, lim.MaxResultBytes)
			break
		}
		if len(items) > 0 {
			if len(merged) > 1 {
				merged = append(merged, ',')
			}
			merged = append(merged, items...)
		}
		out.Pages, out.RawBytes = page, out.RawBytes+res.RawBytes
		c := res.Cursor
		if c != nil && c.current != "" {
			seen[c.current] = true
		}
		next, reason, msg := pr.nextArgs(op, args, c, len(items) == 0, seen)
		if next == nil {
			if reason == "" {
				reason, msg = api.StopLastPage, "the provider says this is the last page"
			}
			out.Stopped, out.StopMessage = reason, msg
			break
		}
		if page == lim.Pages {
			out.Next = next
			out.Stopped, out.StopMessage = api.StopPages, fmt.Sprintf("read the %d pages asked for; next continues", page)
			break
		}
		if ctx.Err() == context.DeadlineExceeded {
			out.Next = next
			out.Stopped, out.StopMessage = api.StopTimeLimit, fmt.Sprintf("the %s limit for the whole call ran out before page %d; next asks for it", lim.Time, page+1)
			break
		}
		v, _ := argValue(mustArgs(next), pr.pg.Arg)
		seen[v] = true
		args = mustArgs(next)
		var failure string
		res, failure = op.Run(ctx, next)
		if res == nil {
			out.Next = next
			out.Stopped, out.StopMessage = api.StopPageFailed, fmt.Sprintf("page %d: %s", page+1, failure)
			if ctx.Err() == context.DeadlineExceeded {
				out.Stopped, out.StopMessage = api.StopTimeLimit, fmt.Sprintf("the %s limit for the whole call ran out while page %d was read; next asks for it", lim.Time, page+1)
			}
			break
		}
	}
	out.Data = append(merged, ']')
	return out, nil
}

// nextArgs turns a page's cursor into the args of the next page, or says
// why there is none. seen holds the cursors already followed in this call
// (nil for a single page). A cursor that echoes the credential
// (Op.Echoes) is refused: next goes back to the caller, which must never
// see any part of it.
func (pr *Pager) nextArgs(op Op, args jsonv.Value, c *Cursor, empty bool, seen map[string]bool) (json.RawMessage, api.StopReason, string) {
	arg := pr.pg.Arg
	switch {
	case c == nil || !c.more:
		return nil, "", ""
	case c.stop != "":
		return nil, c.stop, c.msg
	case empty:
		return nil, api.StopEmptyPages, "a page with no items says there is a next page"
	}
	if op.Echoes(c.value) {
		return nil, api.StopCursorInvalid, fmt.Sprintf("the provider's next %s echoes the credential", arg)
	}
	if cur, ok := argValue(args, arg); ok && cur == c.value {
		return nil, api.StopRepeatedCursor, fmt.Sprintf("the provider's next %s is the one just sent", arg)
	}
	if seen[c.value] {
		return nil, api.StopCursorCycle, fmt.Sprintf("the provider's next %s was already followed in this call", arg)
	}
	val := jsonv.Value{Kind: jsonv.String, S: c.value}
	if pr.isInt {
		val = jsonv.Value{Kind: jsonv.Number, S: c.value}
	}
	next := setMember(args, arg, val)
	raw := json.RawMessage(jsonv.Append(nil, next))
	if msg, refused := op.Refused(raw); refused {
		return nil, api.StopCursorInvalid, "the next page's args are refused: " + msg
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
