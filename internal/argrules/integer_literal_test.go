package argrules

import (
	"testing"

	"github.com/elevenmessenger/pinned/internal/abi"
	"github.com/elevenmessenger/pinned/internal/jsonv"
)

// TestIntegerArgOnlyExactLiteral: an integer arg is an integer only if the
// caller's literal says one exactly. Before the fix float64 rounding made
// 100.0000000000000000001 the integer 100 and 1e-400 the integer 0, so
// the host rendered (and bound the guest to) a value the caller's text
// does not say. Exact spellings of an integer (1.0, 1e2, 2.715e3) stay
// integers.
func TestIntegerArgOnlyExactLiteral(t *testing.T) {
	spec, err := jsonv.Parse([]byte(`{"n":{"type":"integer"}}`))
	if err != nil {
		t.Fatal(err)
	}
	args, err := DecodeAll(&spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, raw string
		reason    int32
		text      string
	}{
		{"plain", `{"n":100}`, 0, "100"},
		{"minus zero", `{"n":-0}`, 0, "0"},
		{"a zero fraction", `{"n":100.000}`, 0, "100"},
		{"an exponent", `{"n":1e2}`, 0, "100"},
		{"a fraction and an exponent", `{"n":2.715e3}`, 0, "2715"},
		{"a negative exponent", `{"n":1500e-1}`, 0, "150"},
		{"zero with a tiny exponent", `{"n":0e-400}`, 0, "0"},
		{"17 digits that round to 100", `{"n":100.0000000000000000001}`, abi.RejectType, ""},
		{"a tiny exponent that rounds to 0", `{"n":1e-400}`, abi.RejectType, ""},
		{"a fraction after the exponent", `{"n":1.25e1}`, abi.RejectType, ""},
		{"a fraction", `{"n":1.5}`, abi.RejectType, ""},
		{"past 2^53", `{"n":9007199254740993}`, abi.RejectType, ""},
		{"past 2^53, exponent form", `{"n":9.007199254740993e15}`, abi.RejectType, ""},
		{"a huge exponent", `{"n":1e400}`, abi.RejectType, ""},
		{"a string", `{"n":"5"}`, abi.RejectType, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vals, rej := Validate(args, []byte(tt.raw))
			if tt.reason != 0 {
				if rej == nil || rej.Reason != tt.reason || rej.Arg != "n" {
					t.Fatalf("got %+v %+v, want reason %d", vals, rej, tt.reason)
				}
				return
			}
			if rej != nil {
				t.Fatalf("rejected: %+v", rej)
			}
			if got := vals[0].Text(); got != tt.text || !vals[0].IsInt {
				t.Fatalf("got %q (int %v), want %q", got, vals[0].IsInt, tt.text)
			}
		})
	}
}
