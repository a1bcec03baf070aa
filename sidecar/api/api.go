// Package api is the vocabulary a sidecar shares with the program that
// builds one and with its internal parts: the Store replicas share, the
// Refresher that rotates OAuth pairs, the Model behind research sessions
// with a session's Limits and Steps, and the Flows a member allows
// between services. sidecar.Config takes these interfaces; pinned's own
// implementations (internal/state, internal/rotate, the Claude client)
// satisfy them, and a program may bring its own.
//
// It imports the standard library and package secret only.
package api

// constError is an error that is a constant, so no package can replace
// it (nothing exported is mutable).
type constError string

func (e constError) Error() string { return string(e) }
