package host

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/elevenmessenger/pinned/registry"
)

// ValidateArgs checks args for the op opName of m with the host's own
// argument rules (package argrules, the rules the guest also runs) and
// renders the request they bind the op to, as Run does before any guest
// runs: no sandbox is built, so it takes microseconds. It is for tools
// that want to refuse args early (`pinned grant seal` does, before sealing
// a grant that could never run). maxArgsBytes is the engine's
// Config.MaxArgsBytes (0 means DefaultMaxArgsBytes); empty args are {}.
//
// It returns nil when the args pass, else an *Error with CodeUnknownOp or
// CodeBadArgs (Arg and Message as Run would give them), or CodeSandbox if
// the op cannot be prepared at all.
func ValidateArgs(m *registry.Manifest, opName string, args json.RawMessage, maxArgsBytes int) *Error {
	op, ok := m.Op(opName)
	if !ok {
		return newError(CodeUnknownOp, fmt.Sprintf("service %s has no op %q (ops: %s)", m.ID, opName, joinNames(m.OpNames())))
	}
	if maxArgsBytes <= 0 {
		maxArgsBytes = DefaultMaxArgsBytes
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	if len(args) > maxArgsBytes {
		return &Error{Code: CodeBadArgs, Message: fmt.Sprintf("args are larger than %d bytes", maxArgsBytes)}
	}
	prefix, err := inputPrefix(m, op)
	if err != nil {
		return &Error{Code: CodeSandbox, Message: "op cannot be prepared", cause: err}
	}
	b, err := newBinding(m, op, prefix)
	if err != nil {
		return &Error{Code: CodeSandbox, Message: "op cannot be prepared", cause: err}
	}
	if _, rej := b.bind(args); rej != nil {
		return badArgs(&prepared{m: m, op: op, name: opName}, rej.Reason, rej.Arg)
	}
	return nil
}
