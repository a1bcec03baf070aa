package display

import "testing"

// TestDisplayTextOneRule: the confirm sentence and upstream error messages
// apply one rule to hostile text (Classify): nothing that is not
// visible text reaches a person as is. Before, error messages let U+2028,
// zero-width spaces and other format characters through.
func TestDisplayTextOneRule(t *testing.T) {
	tests := []struct {
		name, in      string
		confirm, errm string
	}{
		{name: "plain", in: "fix bug #12", confirm: "fix bug #12", errm: "fix bug #12"},
		{name: "bidi override", in: "pay\u202eevil", confirm: "payevil", errm: "pay evil"},
		{name: "bidi isolate", in: "a\u2066b\u2069c", confirm: "abc", errm: "a b c"},
		{name: "zero-width space", in: "ghp\u200bx", confirm: "ghpx", errm: "ghp x"},
		{name: "line breaks", in: "a\nb\u2028c", confirm: "a⏎b⏎c", errm: "a b c"},
		{name: "escape and C1", in: "a\x1b[31mb\u0085c", confirm: "a [31mb c", errm: "a [31mb c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// 200 runes and 1 KiB: the host's confirm value and error
			// message caps.
			if got := Value(tt.in, 200); got != tt.confirm {
				t.Errorf("Value(%q) = %q, want %q", tt.in, got, tt.confirm)
			}
			if got := Message(tt.in, 1<<10); got != tt.errm {
				t.Errorf("Message(%q) = %q, want %q", tt.in, got, tt.errm)
			}
		})
	}
}
