package upstream

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/elevenmessenger/pinned/host/api"
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
		// Short pieces a reader rejoins: the 401 body.
		{"pieces split by spaces", "token sk_test _51HxAb CdEfGh 012345 6789wx yz", "token [redacted] [redacted] [redacted] [redacted] [redacted] [redacted]"},
		{"pieces joined by U+200B", "token sk_test\u200b_51HxAb\u200bCdEfGh", "token [redacted] [redacted] [redacted]"},
		{"pieces joined by tabs and a BOM", "k=sk_te\tst_51\ufeffHx end", "[redacted] [redacted] [redacted] end"},
		{"two pieces of 4", "sk_t est_", "[redacted] [redacted]"},
		{"pieces of 3 across a visible comma", "sk_,tes,t_5", "sk_,tes,t_5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Redact(tt.msg, secret); got != tt.want {
				t.Fatalf("Redact(%q) = %q, want %q", tt.msg, got, tt.want)
			}
		})
	}
}

// FuzzRedact proves the guarantee Redact documents: whatever the message
// and however the credential is cut into pieces and joined by white space,
// controls or invisible characters, the result with those removed holds
// no 8 consecutive characters of the credential.
func FuzzRedact(f *testing.F) {
	const secret = "ghp_fake_pinned_github_token_000000000000"
	f.Add("token ", []byte{7, 7, 7, 7, 7, 7}, " given", uint8(0))
	f.Add("", []byte{1, 2, 3}, "", uint8(3))
	f.Add("x", []byte{40}, "y", uint8(1))
	seps := []string{" ", "\u200b", "\t", "\n", "\u2028", "\ufeff", "\u00a0", "\x1b"}
	f.Fuzz(func(t *testing.T, before string, cuts []byte, after string, sep uint8) {
		var b strings.Builder
		b.WriteString(before)
		rest := secret
		for i, c := range cuts {
			if rest == "" {
				break
			}
			n := min(int(c%16)+1, len(rest))
			if i > 0 {
				b.WriteString(seps[int(sep+uint8(i))%len(seps)])
			}
			b.WriteString(rest[:n])
			rest = rest[n:]
		}
		b.WriteString(rest)
		b.WriteString(after)
		for _, msg := range []string{b.String(), capMessage(b.String())} {
			got := normalize(Redact(msg, secret))
			for i := 0; i+redactWindow <= len(secret); i++ {
				if strings.Contains(got, secret[i:i+redactWindow]) {
					t.Fatalf("Redact(%q) = %q keeps %q", msg, Redact(msg, secret), secret[i:i+redactWindow])
				}
			}
		}
	})
}

// FuzzErrorDetails: on any body the details lookup never panics and, once
// capped as errorMessage caps it, is valid UTF-8 without control
// characters and within api.MaxMessageBytes.
func FuzzErrorDetails(f *testing.F) {
	f.Add([]byte(`{"message":"Validation failed","errors":{"registrant_id":["is invalid"]}}`), "errors")
	f.Add([]byte(`{"errors":[{"resource":"Issue","code":"missing_field","field":"title"}]}`), "errors")
	f.Add([]byte(`{"errors":{"a":[[[[[[[[[[[["deep"]]]]]]]]]]]]}}`), "errors")
	f.Fuzz(func(t *testing.T, doc []byte, path string) {
		d := capMessage("m (" + errorDetails(doc, strings.Split(path, ".")) + ")")
		if len(d) > api.MaxMessageBytes || !utf8.ValidString(d) {
			t.Fatalf("capped details %q", d)
		}
		for _, r := range d {
			if unicode.IsControl(r) {
				t.Fatalf("control character in %q", d)
			}
		}
	})
}
