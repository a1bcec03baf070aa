package host

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/host/internal/egress"
	"github.com/elevenmessenger/pinned/internal/display"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/secret"
)

// Checked is an op that passed every check short of sending it.
type Checked struct {
	// Service and Op are the call's.
	Service string
	Op      string
	// Access is the op's access level, "read" or "write".
	Access string
	// Confirm is a write op's confirm line (empty for reads): its target
	// first, then the manifest's sentence with the args filled in, e.g.
	// `[GitHub: owner "pinned-tester", repo "notes"] Open an issue titled
	// "Typo" in pinned-tester/notes?` (see Consent).
	Confirm string
	// Target is the write's target args (registry.Op.TargetArgs) with
	// their values, as Confirm shows them first.
	Target []Shown
	// Sends is every other arg value the request carries that Confirm
	// does not show whole and as is, labelled by arg name, each value
	// whole (display.Block). Nothing is sent that Confirm and Sends do not
	// show.
	Sends []Shown
}

// Shown is one arg value as a consent shows it.
type Shown struct {
	// Arg is the arg's name.
	Arg string `json:"arg"`
	// Value is the value as the person must see it: the text sent,
	// whole, line breaks kept, every invisible, blank-looking or control
	// code point written as a visible escape such as ⟨U+200B⟩ (package
	// internal/display); "[redacted]" for a secret arg.
	Value string `json:"value"`
}

// Text is the whole consent as text, for a terminal, a chat client or an
// MCP confirmation: Confirm, then, when the request carries more, "Also
// sent:" and one "- arg: value" entry per Sends value. A value of several
// lines starts on the line after its label, each line indented four
// spaces, so no line of a value can pass for a label.
func (c *Checked) Text() string {
	return ConsentText(c.Confirm, c.Sends)
}

// ConsentText is Checked.Text for a confirm line and its sends.
func ConsentText(confirm string, sends []Shown) string {
	if len(sends) == 0 {
		return confirm
	}
	var b strings.Builder
	b.WriteString(confirm)
	b.WriteString("\nAlso sent:")
	for _, s := range sends {
		b.WriteString("\n- " + s.Arg + ":")
		switch {
		case s.Value == "":
			b.WriteString(` ""`)
		case !strings.Contains(s.Value, "\n"):
			b.WriteString(" " + s.Value)
		default:
			for _, line := range strings.Split(s.Value, "\n") {
				b.WriteString("\n    " + line)
			}
		}
	}
	return b.String()
}

// Check runs an op's guest exactly as Run does — in an instance in the
// state of a fresh one (a pooled instance reset to the template, or a new
// one; Config.Isolation), the args validated and the request rendered and
// checked against the egress policy and the request binding — but sends nothing and needs no credential. It then
// renders a write op's consent from the validated args (defaults
// applied): the confirm line and every other value the request carries.
// The error, when not nil, is an *Error with the code
// api.CodeUnknownService, CodeUnknownOp, CodeBadArgs, CodeEgressDenied,
// CodeSandboxError or CodeTimeout.
func (e *Engine) Check(ctx context.Context, service, op string, args json.RawMessage) (*Checked, error) {
	p, err := e.prepare(service, op)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.timeout())
	defer cancel()
	args, want, herr := p.bindArgs(args, e.cfg.maxArgsBytes())
	if herr != nil {
		return nil, herr
	}
	if _, herr := e.execute(ctx, p, args, want); herr != nil {
		return nil, herr
	}
	c := &Checked{Service: service, Op: op, Access: p.op.Access}
	if p.op.Confirm != "" {
		// The host validated these exact args and the guest's request is
		// bound to them; the consent shows their canonical text
		// (defaults applied).
		c.Confirm, c.Target, c.Sends = consent(p, want, true)
	}
	return c, nil
}

// maxConfirmValueRunes bounds one value inside the confirm sentence; a
// value cut there is shown whole in Sends.
const maxConfirmValueRunes = 200

// consent renders a write op's consent from the bound args: the confirm
// line (the target, quoted, then the sentence), the target values, and
// every other arg the request carries that the line does not show whole
// and as is. With redact, a secret arg's value is secret.Redacted (the
// loader keeps secret args out of confirm and target).
func consent(p *prepared, want *egress.Bound, redact bool) (confirm string, target, sends []Shown) {
	m, op, b := p.m, p.op, p.bind
	vals := b.ConfirmValues(want)
	var line strings.Builder
	line.WriteString("[" + m.Name)
	shownWhole := map[string]bool{}
	for i, a := range op.TargetArgs() {
		v, ok := vals[a]
		if !ok {
			continue
		}
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		line.WriteString(sep + a + " " + quote(v))
		target = append(target, Shown{Arg: a, Value: display.Block(v)})
		shownWhole[a] = display.Shown(v, math.MaxInt) && !strings.ContainsAny(v, `"\`)
	}
	line.WriteString("] ")
	pieces, err := registry.ParseTemplate(op.Confirm)
	if err != nil { // the loader parsed it
		pieces = []registry.Piece{{Text: op.Confirm}}
	}
	for _, pc := range pieces {
		if pc.Arg == "" {
			line.WriteString(pc.Text)
			continue
		}
		v := vals[pc.Arg]
		line.WriteString(display.Value(v, maxConfirmValueRunes))
		if display.Shown(v, maxConfirmValueRunes) {
			shownWhole[pc.Arg] = true
		}
	}
	for _, s := range b.Sent(want) {
		if shownWhole[s.Name] {
			continue
		}
		v := display.Block(s.Text)
		if s.Secret && redact {
			v = secret.Redacted
		}
		sends = append(sends, Shown{Arg: s.Name, Value: v})
	}
	return line.String(), target, sends
}

// quote renders a target value in double quotes, whole, escaped like a
// consent value (display.Value) with `"` and `\` written as `\"` and
// `\\`, so a value cannot close the quote or the bracket early.
func quote(v string) string {
	v = strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v)
	return `"` + display.Value(v, math.MaxInt) + `"`
}

// refuseHidden refuses a write op's args that carry a code point a
// person cannot be shown and must not approve unseen (display.Refused:
// the Unicode tag characters), naming the arg and the code point. Read
// ops are not affected.
func refuseHidden(op *registry.Op, b *egress.Binding, want *egress.Bound) *Error {
	if op.Access != registry.AccessWrite {
		return nil
	}
	vals := b.ConfirmValues(want)
	for _, name := range slices.Sorted(maps.Keys(vals)) {
		if r, bad := display.Refused(vals[name]); bad {
			return &Error{Code: api.CodeBadArgs, Arg: name, Message: fmt.Sprintf(
				"arg %q holds %U, an invisible Unicode tag character; a write op's args may not carry tag characters, which a person approving it cannot see: remove them", name, r)}
		}
	}
	return nil
}
