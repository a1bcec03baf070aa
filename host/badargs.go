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
	if a != nil && a.Type == registry.TypeArray && a.Items != nil {
		if m := arrayMessage(a, q, reason); m != "" {
			e.Message = m
			return e
		}
		// A value's own rule (enum, pattern, min, max, max_length) is
		// its items'.
		q += " (each value)"
		a = a.Items
	}
	switch reason {
	case abi.RejectSyntax:
		e.Message = "args must be a JSON object with unique keys"
	case abi.RejectUndeclared:
		e.Message = fmt.Sprintf("op %s.%s has no arg %s (args: %s)", p.m.ID, p.name, q, declared(p.op))
	case abi.RejectMissing:
		e.Message = fmt.Sprintf("arg %s is required", q)
	case abi.RejectType:
		e.Message = fmt.Sprintf("arg %s must be %s", q, typeWords[a.Type])
	case abi.RejectEnum:
		e.Message = fmt.Sprintf("arg %s must be one of: %s", q, strings.Join(a.Enum, ", "))
	case abi.RejectPattern:
		e.Message = fmt.Sprintf("arg %s must match %s", q, a.Pattern)
	case abi.RejectMin:
		e.Message = fmt.Sprintf("arg %s must be at least %s", q, num(a.Min))
	case abi.RejectMax:
		e.Message = fmt.Sprintf("arg %s must be at most %s", q, num(a.Max))
	case abi.RejectLength:
		e.Message = fmt.Sprintf("arg %s must be at most %d characters", q, maxLength(a))
	case abi.RejectValue:
		e.Message = fmt.Sprintf("arg %s cannot be used here (an empty, \".\" or \"..\" path segment, or a control character)", q)
	default:
		e.Message = "invalid args"
	}
	return e
}

// arrayMessage is the message of a reject of array arg a that concerns
// the array itself, or "" for one of its values' rules.
func arrayMessage(a *registry.Arg, q string, reason int32) string {
	n := registry.DefaultMaxItems
	if a.MaxItems != nil {
		n = *a.MaxItems
	}
	switch reason {
	case abi.RejectType:
		return fmt.Sprintf("arg %s must be an array of at most %d values, each %s", q, n, typeWords[a.Items.Type])
	case abi.RejectLength:
		if a.Items.Type == registry.TypeString {
			return fmt.Sprintf("arg %s must hold at most %d values, each at most %d characters", q, n, maxLength(a.Items))
		}
		return fmt.Sprintf("arg %s must hold at most %d values", q, n)
	case abi.RejectValue:
		if d := a.Delimiter(); d != 0 {
			return fmt.Sprintf("arg %s cannot be sent: its values are joined by %q, so none may be empty or hold it (or a control character)", q, string(d))
		}
	}
	return ""
}

// typeWords says what a value of each arg type is, for messages.
var typeWords = map[string]string{
	registry.TypeString: "a string", registry.TypeInteger: "an integer (up to 2^53)",
	registry.TypeNumber: "a number", registry.TypeBoolean: "true or false",
}

func maxLength(a *registry.Arg) int {
	if a.MaxLength != nil {
		return *a.MaxLength
	}
	return registry.DefaultMaxLength
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
