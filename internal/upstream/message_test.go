package upstream

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestRedactCredential(t *testing.T) {
	const secret = "sk_test_51HxAbCdEfGh0123456789wxyz"
	tests := []struct{ name, msg, want string }{
		{"no echo", "No such customer: cus_123", "No such customer: cus_123"},
		{"whole secret", "bad key " + secret + " given", "bad key [redacted] given"},
		{"8 characters of it", "key ending AbCdEfGh0 is wrong", "key ending [redacted] is wrong"},
		{"masked, prefix", "Invalid API Key provided: sk_test_****wxyz", "Invalid API Key provided: [redacted]"},
		{"masked, suffix only, quoted", "key '****wxyz'.", "key [redacted]"},
		{"masked, another credential", "key pk_live_****0000 revoked", "key pk_live_****0000 revoked"},
		{"7 characters are not an echo", "code 0123456 failed", "code 0123456 failed"},
		{"a star alone is not an echo", "rate * limit", "rate * limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Redact(tt.msg, secret); got != tt.want {
				t.Fatalf("Redact(%q) = %q, want %q", tt.msg, got, tt.want)
			}
		})
	}
}

// FuzzErrorDetails: on any body the details lookup never panics and, once
// capped as errorMessage caps it, is valid UTF-8 without control
// characters and within MaxMessageBytes.
func FuzzErrorDetails(f *testing.F) {
	f.Add([]byte(`{"message":"Validation failed","errors":{"registrant_id":["is invalid"]}}`), "errors")
	f.Add([]byte(`{"errors":[{"resource":"Issue","code":"missing_field","field":"title"}]}`), "errors")
	f.Add([]byte(`{"errors":{"a":[[[[[[[[[[[["deep"]]]]]]]]]]]]}}`), "errors")
	f.Fuzz(func(t *testing.T, doc []byte, path string) {
		d := capMessage("m (" + errorDetails(doc, strings.Split(path, ".")) + ")")
		if len(d) > MaxMessageBytes || !utf8.ValidString(d) {
			t.Fatalf("capped details %q", d)
		}
		for _, r := range d {
			if unicode.IsControl(r) {
				t.Fatalf("control character in %q", d)
			}
		}
	})
}
