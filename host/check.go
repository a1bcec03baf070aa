package host

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/elevenmessenger/pinned/guest/executor"
	"github.com/elevenmessenger/pinned/registry"
)

// Checked is an op that passed every check short of sending it.
type Checked struct {
	Service string
	Op      string
	// Access is the op's access level, "read" or "write".
	Access string
	// Confirm is the op's confirm sentence with the args filled in (write
	// ops; empty for reads): what a consent chip shows.
	Confirm string
}

// Check runs an op's guest in a fresh instance exactly as Run does — the
// args are validated and the request is rendered and checked against the
// egress policy — but sends nothing and needs no credential. It then
// renders the op's confirm sentence from the validated args (defaults
// applied). The error, when not nil, is an *Error: CodeUnknownService,
// CodeUnknownOp, CodeBadArgs, CodeEgressDenied, CodeSandbox, CodeTimeout.
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
		// The sandbox accepted these exact args; the native executor only
		// recomputes their canonical text (defaults applied).
		vals, rej, ierr := executor.Validate(st.input)
		if ierr != nil || rej != nil {
			return nil, &Error{Code: CodeSandbox, Message: "the args could not be rendered for confirmation"}
		}
		c.Confirm = renderConfirm(p.op.Confirm, vals)
	}
	return c, nil
}

func renderConfirm(tmpl string, vals map[string]string) string {
	pieces, err := registry.ParseTemplate(tmpl)
	if err != nil {
		return tmpl
	}
	var b strings.Builder
	for _, pc := range pieces {
		if pc.Arg != "" {
			b.WriteString(vals[pc.Arg])
		} else {
			b.WriteString(pc.Text)
		}
	}
	return b.String()
}
