package registry

import (
	"fmt"
	"strings"
)

// Problem is one reason a manifest was refused.
type Problem struct {
	// File is the file name as given to [Parse] (or the name in the FS
	// given to [Load]).
	File string
	// Line and Col locate the offending value in the file: Line counts
	// from 1, Col is the 1-based byte offset within the line (the Go
	// toolchain's convention). Both are 0 when the problem concerns the
	// file as a whole (too large, not UTF-8).
	Line, Col int
	// Op names the op the problem is in; empty for top-level fields.
	Op string
	// Field is the dot path of the offending value, relative to the op
	// when Op is set ("body_json.query", "args.owner.pattern",
	// "pick.fields[2]") and to the document otherwise ("host",
	// "auth.oauth.token_url"). Empty when the problem is the op itself.
	Field string
	// Msg says what is wrong and what would be right.
	Msg string
}

// String formats the problem as "file:line:col: op "name": field: msg",
// leaving out the parts that are empty.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", p.Line, p.Col)
	}
	b.WriteString(": ")
	if p.Op != "" {
		fmt.Fprintf(&b, "op %q: ", p.Op)
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Error is the error [Parse] and [Load] return for a refused manifest or
// registry: every problem found, ordered by file and position. It always
// holds at least one problem.
type Error struct {
	// Problems are every reason found, ordered by file, line and column;
	// Parse reports at most 200 per file.
	Problems []Problem
}

// Error returns the problems, one per line.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}
