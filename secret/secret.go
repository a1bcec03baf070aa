// Package secret holds the one type for credential values (access and
// refresh tokens, API keys) as they pass through the host, the grants and
// the token rotation: [Secret], which prints, formats and marshals as
// "[redacted]" so a value logged or printed by mistake does not leak.
// Code that must send the value converts explicitly: string(s).
//
// It imports only the standard library, and nothing of the project's.
package secret

import (
	"fmt"
	"io"
)

// Redacted is what a Secret shows instead of its value.
const Redacted = "[redacted]"

// Secret is a credential value. Its String, GoString, Format and
// MarshalText methods give [Redacted] (so fmt with any verb, encoding/json,
// and loggers that use them never see the value); string(s) is the value.
type Secret string

func (Secret) String() string               { return Redacted }
func (Secret) GoString() string             { return Redacted }
func (Secret) MarshalText() ([]byte, error) { return []byte(Redacted), nil }
func (Secret) Format(f fmt.State, _ rune)   { _, _ = io.WriteString(f, Redacted) }
