package main

import (
	"io"
	"os"

	"golang.org/x/term"

	"github.com/elevenmessenger/pinned/internal/jsonenc"
)

// console is the process's stdin and whether a person is at it. Tests
// replace it (they run without a terminal).
var console = struct {
	in         io.Reader
	isTerminal func() bool
}{
	in:         os.Stdin,
	isTerminal: func() bool { return term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stderr.Fd())) },
}

func stdinReader() io.Reader { return console.in }

// marshalJSON is the CLI's JSON writer: plain UTF-8, no HTML escaping.
func marshalJSON(v any) ([]byte, error) { return jsonenc.Marshal(v) }
