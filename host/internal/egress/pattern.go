package egress

import (
	"regexp"
	"sync"

	"github.com/elevenmessenger/pinned/internal/argrules"
)

// patterns holds compiled arg patterns by their text: ops share patterns
// (a domain name, an owner), and a binding is built per op. Patterns come
// from the registry only, so the cache is bounded by it (and by
// maxPatterns anyway).
var (
	patternMu sync.Mutex
	patterns  = map[string]*regexp.Regexp{}
)

const maxPatterns = 512

// compilePattern is the host's argrules.Compiler: the pattern in Go's
// RE2 syntax (regexp.Compile; the registry's loader refused any other),
// shared by every binding that declares the same text.
func compilePattern(expr string) (argrules.Matcher, error) {
	patternMu.Lock()
	re := patterns[expr]
	patternMu.Unlock()
	if re != nil {
		return re, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	patternMu.Lock()
	if len(patterns) < maxPatterns {
		patterns[expr] = re
	}
	patternMu.Unlock()
	return re, nil
}
