package main

import (
	"errors"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/registry"
)

// checkArgs validates args for an op of m as the host does before any
// guest runs (host.ValidateArgs: the host's own argument rules and
// request binding, with its bad_args wording; no sandbox is built). It
// returns "" when the args pass, else that message, e.g. `op
// github.create_issue has no arg "x" (args: body, owner, repo, title)`.
// The error is for an op that cannot be checked at all.
func checkArgs(m *registry.Manifest, opName string, _ *registry.Op, args []byte) (string, error) {
	err := host.ValidateArgs(m, opName, args, 0)
	var he *host.Error
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &he) && he.Code == api.CodeBadArgs:
		return he.Message, nil
	}
	return "", err
}
