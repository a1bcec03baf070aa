package host

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/host/internal/paginate"
	"github.com/elevenmessenger/pinned/host/internal/upstream"
)

// Pagination (docs/MANIFEST.md "Paginate", docs/API.md "Pages"): an op
// whose manifest declares paginate gets, in its result, Next; with
// Call.Pages the host follows Next itself, each page a whole op through
// Engine.run (guest renders, host checks, sends, projects), and merges
// the projected items under the same result cap. The paging itself —
// reading the cursor, the guards, merging — is host/internal/paginate's.

// DefaultPagesTimeout is Config.PagesTimeout's default: a call with
// Pages takes at most this long in all, whatever its pages' own Timeout,
// so it ends well inside the sidecar's 60 s write timeout
// (sidecar.DefaultWriteTimeout; `pinned sidecar` checks --write-timeout
// exceeds --pages-timeout, with a broker also plus --op-timeout and
// --refresh-timeout for the retry after a refresh) instead of reading
// pages for an answer nobody can receive.
const DefaultPagesTimeout = 20 * time.Second

// runPages runs call: one page, or with call.Pages up to that many pages
// merged into one result (host/internal/paginate follows them through
// pageOp).
func (e *Engine) runPages(ctx context.Context, call Call, start time.Time) (*Result, *Error) {
	p, perr := e.prepare(call.Service, call.Op)
	if perr != nil {
		return nil, perr
	}
	if call.Pages != 0 {
		switch {
		case p.pager == nil:
			return nil, newError(api.CodeBadArgs, fmt.Sprintf("op %s.%s does not page; call it without pages", p.m.ID, p.name))
		case call.Pages < 0 || call.Pages > p.pager.MaxPages():
			return nil, newError(api.CodeBadArgs, fmt.Sprintf("pages must be 1 to %d for op %s.%s", p.pager.MaxPages(), p.m.ID, p.name))
		}
		// The whole paged call, every page in it, ends by this deadline.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, start.Add(e.cfg.pagesTimeout()))
		defer cancel()
	}
	res, err := e.run(ctx, call, p, start)
	if err != nil {
		return nil, err
	}
	if p.pager == nil {
		return res, nil
	}
	var t time.Time
	if phaseHook != nil {
		t = time.Now()
	}
	defer phaseDone(phaseAfter, &t)
	out, ferr := p.pager.Run(ctx, pageOp{e: e, call: call, p: p}, call.Args, res.page(),
		paginate.Limits{Pages: call.Pages, MaxResultBytes: e.cfg.maxResultBytes(), Time: e.cfg.pagesTimeout()})
	if ferr != nil { // paginate.ErrNotList
		return nil, newError(api.CodeUpstreamInvalid, "the op's projected result is not a list, so its pages cannot be merged")
	}
	res = &Result{Status: out.Status, Data: out.Data, RawBytes: out.RawBytes, Next: out.Next, Pages: out.Pages,
		Stopped: out.Stopped, StopMessage: out.StopMessage, Target: res.Target}
	// The merged pages and the next args, checked as each page was: a
	// credential split across pages, or carried in a cursor, never
	// comes back. (One page's data was checked by run.)
	merged := out.Pages > 1 && e.echoes(call, res.Data)
	if merged || e.echoes(call, res.Next) || upstream.EchoesText(res.StopMessage, e.callSecrets(call)...) {
		return nil, e.echoError(p, res.Status)
	}
	return res, nil
}

// page is res as host/internal/paginate reads it.
func (res *Result) page() *paginate.Page {
	return &paginate.Page{Status: res.Status, Data: res.Data, RawBytes: res.RawBytes, Cursor: res.cursor}
}

// pageOp is a paged call's op as host/internal/paginate runs its next pages:
// each a whole op with the next args, validated as the caller's are.
type pageOp struct {
	e    *Engine
	call Call
	p    *prepared
}

func (o pageOp) Run(ctx context.Context, args json.RawMessage) (*paginate.Page, string) {
	c := o.call
	c.Args = args
	res, err := o.e.run(ctx, c, o.p, time.Now())
	if err != nil {
		return nil, string(err.Code) + ": " + err.Message
	}
	return res.page(), ""
}

func (o pageOp) Refused(args json.RawMessage) (string, bool) {
	if _, _, herr := o.p.bindArgs(args, o.e.cfg.maxArgsBytes()); herr != nil {
		return herr.Message, true
	}
	return "", false
}

// Echoes judges a cursor as upstream.Redact judges an error message and
// upstream.EchoesText judges text, for the credential and the call's
// other secrets.
func (o pageOp) Echoes(v string) bool {
	for _, s := range o.e.callSecrets(o.call) {
		if upstream.Redact(v, s) != v {
			return true
		}
	}
	return upstream.EchoesText(v, o.e.callSecrets(o.call)...)
}
