package host

import (
	"regexp"
	"testing"
)

// TestWarmArgs: every op's warm-up args pass the op's own checks
// (bindArgs), and an op with a required arg gets one: its warm-up renders
// a request, as a caller's op does, instead of stopping at a missing arg.
// With empty args 91 of the registry's 153 ops stopped there, and the
// pages their render paths write stayed out of the pool's write class
// (docs/RATIONALE.md, "Why is the write class learned one op at a time?").
func TestWarmArgs(t *testing.T) {
	env := newEnv(t, nil)
	for _, id := range env.eng.ids {
		for _, name := range env.eng.services[id].OpNames() {
			t.Run(id+"."+name, func(t *testing.T) {
				pp, herr := env.eng.prepare(id, name)
				if herr != nil {
					t.Fatal(herr)
				}
				args := warmArgs(pp)
				if _, _, herr := pp.bindArgs(args, DefaultMaxArgsBytes); herr != nil {
					t.Fatalf("warm-up args %s: %v", args, herr)
				}
				for arg, a := range pp.op.Args {
					if a.Required && string(args) == "{}" {
						t.Fatalf("required arg %q has no warm-up value", arg)
					}
				}
			})
		}
	}
}

// TestSamplePattern: the sample of each pattern matches it.
func TestSamplePattern(t *testing.T) {
	for _, tc := range []struct {
		name, pattern string
	}{
		{"literal", `^abc$`},
		{"class and repeat", `^[0-9]{3,5}$`},
		{"negated class", `^[^/\\]+$`},
		{"negated whitespace and @", `^[^@\s]+@[^@\s]+\.[^@\s]+$`},
		{"alternation", `^(open|closed|all)$`},
		{"optional part", `^v?[0-9]+(\.[0-9]+)*$`},
		{"any character", `^.{2}x$`},
		{"uppercase only", `^[A-Z][A-Z0-9_]*$`},
		{"hex", `^[0-9a-f]{40}$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := samplePattern(tc.pattern)
			if !ok {
				t.Fatal("no sample")
			}
			if !regexp.MustCompile(tc.pattern).MatchString(s) {
				t.Fatalf("sample %q does not match %s", s, tc.pattern)
			}
		})
	}
}
