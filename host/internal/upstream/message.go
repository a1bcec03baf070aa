package upstream

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/elevenmessenger/pinned/host/api"

	"github.com/elevenmessenger/pinned/host/internal/pick"
	"github.com/elevenmessenger/pinned/internal/display"
)

// graphQLError reports a 200 answer that carries a non-empty errors array.
func graphQLError(raw []byte, op *Op) (string, bool) {
	if present, _, _ := pick.GraphQLErrors(raw); !present {
		return "", false
	}
	if msg, ok := pick.FindString(raw, op.errMsg); ok && msg != "" {
		return capMessage(msg), true
	}
	return "the provider answered with GraphQL errors", true
}

// errorEnvelope reports a 2xx answer that is the provider's error
// envelope: the pick kept nothing of it (out is {} or null) and the
// manifest's error_message path holds a message.
func errorEnvelope(op *Op, out, raw []byte) (string, bool) {
	if string(out) != "{}" && string(out) != "null" {
		return "", false
	}
	msg, ok := pick.FindString(raw, op.errMsg)
	if msg = capMessage(msg); !ok || msg == "" {
		return "", false
	}
	return msg, true
}

// errorMessage projects the human message of an error body through the
// manifest's error_message path, followed by the field-level details at
// its error_details path in parentheses ("Validation failed
// (registrant_id: is invalid)"), capped together at api.MaxMessageBytes.
// The raw body never comes back.
func errorMessage(op *Op, raw []byte, status int) string {
	msg, _ := pick.FindString(raw, op.errMsg)
	if msg = capMessage(msg); msg == "" {
		if msg = http.StatusText(status); msg == "" {
			msg = "HTTP " + strconv.Itoa(status)
		}
	}
	if op.m.ErrorDetails != "" {
		if d := errorDetails(raw, splitPath(op.m.ErrorDetails)); d != "" {
			msg += " (" + d + ")"
		}
	}
	return capMessage(msg)
}

// errorDetails renders the value at path of an error body as
// "key: text; key: text": every string, number or boolean in it after the
// nearest object key above it (object keys sorted), for example
// {"registrant_id": ["is invalid"], "name": ["is too long"]} →
// "name: is too long; registrant_id: is invalid", and GitHub's
// [{"resource": "Issue", "field": "title", "code": "missing_field"}] →
// "code: missing_field; field: title; resource: Issue". "" when there is
// nothing there or it is over maxDetailsBytes; the caller caps the text.
func errorDetails(raw []byte, path []string) string {
	v, ok := pick.FindValue(raw, path)
	if !ok || len(v) > maxDetailsBytes {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var tree any
	if dec.Decode(&tree) != nil {
		return ""
	}
	key := ""
	if len(path) > 0 {
		key = path[len(path)-1]
	}
	var parts []string
	var walk func(v any, key string, depth int)
	walk = func(v any, key string, depth int) {
		if depth > pick.MaxDepth || len(parts) >= 64 {
			return
		}
		var text string
		switch t := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(t)) {
				walk(t[k], k, depth+1)
			}
			return
		case []any:
			for _, e := range t {
				walk(e, key, depth+1)
			}
			return
		case string:
			text = strings.TrimSpace(t)
		case json.Number:
			text = t.String()
		case bool:
			text = strconv.FormatBool(t)
		default:
			return
		}
		if text != "" {
			parts = append(parts, key+": "+text)
		}
	}
	walk(tree, key, 0)
	return strings.Join(parts, "; ")
}

// maxDetailsBytes bounds the error details value decoded for the message:
// past it the details are left out (the message still comes back).
const maxDetailsBytes = 64 << 10

// redactedWord replaces a word of an upstream message that echoes the
// credential.
const redactedWord = "[redacted]"

// redactWindow is the run of credential characters Redact removes.
const redactWindow = 8

// Redact replaces every word (a run of characters that are not white
// space, control or invisible format characters) of an upstream message
// that echoes the op's credential. The message goes to the caller, which
// must never see the credential, so it is read the way a person would
// rejoin pieces: the words are joined with those characters removed
// ("ghp_fak e_pinne", "ghp_fak\u200be_pinne" are "ghp_fake_pinne"), and
// every word that holds part of a run of 8 consecutive characters of the
// credential (the whole credential when shorter) is replaced, as is a
// masked echo — a word with '*' that starts with the credential's first 4
// characters or ends with its last 4 (Stripe answers a bad key with
// "Invalid API Key provided: sk_test_****abcd").
//
// The guarantee (TestRedactCredential, FuzzRedact): the result, with
// white space, control and invisible characters removed, holds no run of
// 8 consecutive characters of the credential, and no masked echo.
func Redact(msg, secret string) string {
	if len(secret) < 4 || msg == "" {
		return msg
	}
	words := strings.FieldsFunc(msg, hidden)
	redact := make([]bool, len(words))
	changed := false
	for i, w := range words {
		if strings.Contains(w, "*") {
			t := strings.Trim(w, `"'.,;:()[]{}<>`)
			if strings.HasPrefix(t, secret[:4]) || strings.HasSuffix(t, secret[len(secret)-4:]) {
				redact[i], changed = true, true
			}
		}
	}
	// The words joined, and which word each byte came from.
	var joined strings.Builder
	owner := make([]int, 0, len(msg))
	for i, w := range words {
		joined.WriteString(w)
		for range len(w) {
			owner = append(owner, i)
		}
	}
	text := joined.String()
	n := min(redactWindow, len(secret))
	for k := 0; k+n <= len(secret); k++ {
		f := secret[k : k+n]
		for off := 0; off+n <= len(text); {
			at := strings.Index(text[off:], f)
			if at < 0 {
				break
			}
			at += off
			for b := at; b < at+n; b++ {
				redact[owner[b]], changed = true, true
			}
			off = at + 1
		}
	}
	if !changed {
		return msg
	}
	for i := range words {
		if redact[i] {
			words[i] = redactedWord
		}
	}
	return strings.Join(words, " ")
}

// capMessage renders upstream text as a message (internal/display: every
// rune that is not visible text becomes a space) capped at api.MaxMessageBytes
// on a UTF-8 boundary, marking a cut with "…". The message is upstream
// text a terminal or a chat client will show.
func capMessage(s string) string { return display.Message(s, api.MaxMessageBytes) }
