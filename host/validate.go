package host

import (
	"encoding/json"

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
// It returns nil when the args pass, else an *Error with
// api.CodeUnknownOp or api.CodeBadArgs (Arg and Message as Run would give
// them), or api.CodeSandboxError if the op cannot be prepared at all.
func ValidateArgs(m *registry.Manifest, opName string, args json.RawMessage, maxArgsBytes int) error {
	p, herr := prepareOp(m, opName)
	if herr != nil {
		return herr
	}
	if maxArgsBytes <= 0 {
		maxArgsBytes = DefaultMaxArgsBytes
	}
	if _, _, herr := p.bindArgs(args, maxArgsBytes); herr != nil {
		return herr
	}
	return nil
}
