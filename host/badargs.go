package host

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/abi"
	"github.com/elevenmessenger/pinned/registry"
)

// badArgs renders the message for a guest's reject from the reason, the
// arg's name and the op's declaration: the guest supplies codes, never
// text (ABI invariant 7).
func badArgs(p *prepared, reason int32, name string) *Error {
	e := &Error{Code: api.CodeBadArgs, Arg: name}
	a := p.op.Args[name]
	q := strconv.Quote(name)
	switch reason {
	case abi.RejectSyntax:
		e.Message = "args must be a JSON object with unique keys"
	case abi.RejectUndeclared:
		e.Message = fmt.Sprintf("op %s.%s has no arg %s (args: %s)", p.m.ID, p.name, q, declared(p.op))
	case abi.RejectMissing:
		e.Message = fmt.Sprintf("arg %s is required", q)
	case abi.RejectType:
		want := map[string]string{
			registry.TypeString: "a string", registry.TypeInteger: "an integer (up to 2^53)",
			registry.TypeNumber: "a number", registry.TypeBoolean: "true or false",
		}[a.Type]
		e.Message = fmt.Sprintf("arg %s must be %s", q, want)
	case abi.RejectEnum:
		e.Message = fmt.Sprintf("arg %s must be one of: %s", q, strings.Join(a.Enum, ", "))
	case abi.RejectPattern:
		e.Message = fmt.Sprintf("arg %s must match %s", q, a.Pattern)
	case abi.RejectMin:
		e.Message = fmt.Sprintf("arg %s must be at least %s", q, num(a.Min))
	case abi.RejectMax:
		e.Message = fmt.Sprintf("arg %s must be at most %s", q, num(a.Max))
	case abi.RejectLength:
		n := registry.DefaultMaxLength
		if a.MaxLength != nil {
			n = *a.MaxLength
		}
		e.Message = fmt.Sprintf("arg %s must be at most %d characters", q, n)
	case abi.RejectValue:
		e.Message = fmt.Sprintf("arg %s cannot be used here (an empty, \".\" or \"..\" path segment, or a control character)", q)
	default:
		e.Message = "invalid args"
	}
	return e
}

func declared(op *registry.Op) string {
	names := make([]string, 0, len(op.Args))
	for n := range op.Args {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func num(f *float64) string {
	if f == nil {
		return "?"
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}
