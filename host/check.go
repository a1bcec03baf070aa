package host

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/elevenmessenger/pinned/internal/display"
	"github.com/elevenmessenger/pinned/registry"
)

// Checked is an op that passed every check short of sending it.
type Checked struct {
	// Service and Op are the call's.
	Service string
	Op      string
	// Access is the op's access level, "read" or "write".
	Access string
	// Confirm is the op's confirm sentence with the args filled in (write
	// ops; empty for reads): what a consent chip shows.
	Confirm string
}

// Check runs an op's guest exactly as Run does — in an instance in the
// state of a fresh one (a pooled instance reset to the template, or a new
// one; Config.Isolation), the args validated and the request rendered and
// checked against the egress policy and the request binding — but sends nothing and needs no credential. It then
// renders the op's confirm sentence from the validated args (defaults
// applied). The error, when not nil, is an *Error: CodeUnknownService,
// CodeUnknownOp, CodeBadArgs, CodeEgressDenied, CodeSandboxError, CodeTimeout.
func (e *Engine) Check(ctx context.Context, service, op string, args json.RawMessage) (*Checked, error) {
	p, err := e.prepare(service, op)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	st, herr := e.execute(ctx, p, args)
	if herr != nil {
		return nil, herr
	}
	if herr := e.outcomeError(ctx, Call{Service: service, Op: op}, p, st); herr != nil {
		return nil, herr
	}
	c := &Checked{Service: service, Op: op, Access: p.op.Access}
	if p.op.Confirm != "" {
		// The host validated these exact args and the guest's request is
		// bound to them; the sentence shows their canonical text
		// (defaults applied).
		c.Confirm = renderConfirm(p.op.Confirm, p.bind.ConfirmValues(st.Want()))
	}
	return c, nil
}

// renderConfirm fills the confirm template. The values are caller text
// (a model's proposal) inside a sentence a member will trust, so each is
// made one visible line: line breaks show as "⏎", other control
// characters as spaces, bidirectional-override and invisible formatting
// characters are dropped, and a value over maxConfirmValueRunes is cut
// with "…". The op itself runs with the values as given (and a grant's
// args_sha256 binds them exactly).
func renderConfirm(tmpl string, vals map[string]string) string {
	pieces, err := registry.ParseTemplate(tmpl)
	if err != nil {
		return tmpl
	}
	var b strings.Builder
	for _, pc := range pieces {
		if pc.Arg != "" {
			b.WriteString(confirmValue(vals[pc.Arg]))
		} else {
			b.WriteString(pc.Text)
		}
	}
	return b.String()
}

// maxConfirmValueRunes bounds one value in a confirm sentence.
const maxConfirmValueRunes = 200

func confirmValue(s string) string { return display.Value(s, maxConfirmValueRunes) }
