package research

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The fence: every tool_result of a session is exactly three lines,
//
//	BEGIN-DATA pinned-<32 hex>
//	{"provenance":{"service":…,"op":…,"args":…},"status":200,"data":…,"next":…}
//	END-DATA pinned-<32 hex>
//
// where the token (pinned-<32 hex>) is 128 random bits drawn when the
// session starts and the middle line is one JSON object: the result's
// provenance, then the projected data (and, for an op that pages, next:
// the args of the next page) or the error. Why nothing inside can
// end the fence early or pass for the session's own text:
//
//   - The middle line is JSON: a newline in any string is written \n, so
//     the data cannot start a line of its own, let alone an END-DATA line.
//   - "<", ">" and "&" are written \u003c, \u003e, \u0026 (no fake
//     </tool_result> tag), and every invisible or format character (Unicode
//     Cf: zero-width, bidi controls, tag characters; variation selectors;
//     private use; anything not graphic) is written as a \u escape, so no
//     text inside is hidden from a reader.
//   - The data cannot guess the token: it is drawn fresh for each session
//     and no provider is ever sent it by the sidecar: a tool call whose
//     args hold it (a model persuaded to copy it) is refused
//     fence_collision before it runs. A result that holds it anyway is
//     withheld whole and replaced by the error fence_collision, without
//     its args. "Holds" is judged on the bytes and on every decoded JSON
//     string and key, case-insensitively, so a JSON escape
//     ("\u0070inned-…") or upper-cased hex does not slip past.

// Fence is one session's fence.
type Fence struct {
	token string
}

// NewFence draws a session token from random (nil: crypto/rand).
func NewFence(random io.Reader) (*Fence, error) {
	if random == nil {
		random = rand.Reader
	}
	var b [16]byte
	if _, err := io.ReadFull(random, b[:]); err != nil {
		return nil, fmt.Errorf("research: fence token: %w", err)
	}
	return &Fence{token: "pinned-" + hex.EncodeToString(b[:])}, nil
}

// Token is the session's fence token.
func (f *Fence) Token() string { return f.token }

// Provenance says where a result came from: the service and op that ran
// and the args it ran with, or the tool name the model used when it is no
// op of the palette.
type Provenance struct {
	Service string          `json:"service,omitempty"`
	Op      string          `json:"op,omitempty"`
	Tool    string          `json:"tool,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	// ArgsBytes, on an error result whose args are over
	// MaxErrorArgsBytes, is their size: the args are left out.
	ArgsBytes int `json:"args_bytes,omitempty"`
}

// MaxErrorArgsBytes bounds the args an error result repeats: the model
// sent them, and a refusal that repeats a 300 KB input would take the
// session's result budget (and end it) for nothing.
const MaxErrorArgsBytes = 1 << 10

// ToolError is a tool call's failure as the model sees it: one of the
// sidecar's stable codes and its caller-safe message.
type ToolError struct {
	Code           string `json:"code"`
	Message        string `json:"message"`
	UpstreamStatus int    `json:"upstream_status,omitempty"`
}

type fenced struct {
	Provenance Provenance      `json:"provenance"`
	Status     int             `json:"status,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	Next       json.RawMessage `json:"next,omitempty"`
	Error      *ToolError      `json:"error,omitempty"`
}

// Wrap renders one result in the fence: data (the projected result) or
// te. The bool reports whether the text is the withheld-result error
// (fence_collision) instead.
func (f *Fence) Wrap(p Provenance, status int, data json.RawMessage, te *ToolError) (string, bool) {
	return f.WrapNext(p, status, data, nil, te)
}

// WrapNext is Wrap with the args of the result's next page (host.Result.Next),
// which the model passes back to read it.
func (f *Fence) WrapNext(p Provenance, status int, data, next json.RawMessage, te *ToolError) (string, bool) {
	if len(next) > 0 && !json.Valid(next) {
		next = nil
	}
	if te != nil && len(p.Args) > MaxErrorArgsBytes {
		p.Args, p.ArgsBytes = nil, len(p.Args)
	}
	body := f.body(fenced{Provenance: p, Status: status, Data: data, Next: next, Error: te})
	if body == nil || f.Held(body) {
		body = f.body(fenced{
			Provenance: Provenance{Service: p.Service, Op: p.Op},
			Error: &ToolError{Code: CodeFenceCollision,
				Message: "the result held this session's fence token (or could not be encoded) and was withheld"},
		})
		if f.Held(body) { // unreachable: service and op are registry names
			body = []byte(`{"error":{"code":"` + CodeFenceCollision + `","message":"withheld"}}`)
		}
		return f.frame(body), true
	}
	return f.frame(body), false
}

// Held reports whether b holds the session's token: in its bytes or in
// any string or key of it decoded as JSON, ignoring case.
func (f *Fence) Held(b []byte) bool {
	tok := []byte(f.token)
	if bytes.Contains(bytes.ToLower(b), tok) {
		return true
	}
	if !bytes.Contains(b, []byte(`\`)) {
		return false // no escape: the decoded strings are the bytes
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	for {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		if s, ok := t.(string); ok && strings.Contains(strings.ToLower(s), f.token) {
			return true
		}
	}
}

func (f *Fence) frame(body []byte) string {
	return "BEGIN-DATA " + f.token + "\n" + string(body) + "\nEND-DATA " + f.token
}

func (f *Fence) body(v fenced) []byte {
	if len(v.Data) > 0 && !json.Valid(v.Data) {
		return nil
	}
	if len(v.Provenance.Args) > 0 && !json.Valid(v.Provenance.Args) {
		v.Provenance.Args = nil
	}
	b, err := json.Marshal(v) // escapes <, >, & and U+2028/9; compacts RawMessage
	if err != nil {
		return nil
	}
	return escapeInvisible(b)
}

// escapeInvisible rewrites every rune of b that is not plainly visible as
// a JSON \u escape. b is JSON whose only non-ASCII bytes are inside
// strings (encoding/json writes nothing else), so the result is the same
// JSON value. Invalid UTF-8 (encoding/json already replaced it) is kept as
// U+FFFD.
func escapeInvisible(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r < utf8.RuneSelf || visible(r) {
			if out != nil {
				out = append(out, b[i:i+n]...)
			}
			i += n
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(b)+32), b[:i]...)
		}
		if r > 0xFFFF {
			r1, r2 := utf16Pair(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += n
	}
	if out == nil {
		return b
	}
	return out
}

// visible reports whether a non-ASCII rune is shown as itself: graphic,
// not a format character (Cf: zero-width, bidi, tags), not a variation
// selector, not private use.
func visible(r rune) bool {
	switch {
	case r == utf8.RuneError:
		return true
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Co, r), unicode.Is(unicode.Variation_Selector, r):
		return false
	case r == 0x115F || r == 0x1160 || r == 0x3164 || r == 0xFFA0: // Hangul fillers render blank
		return false
	}
	return unicode.IsGraphic(r) && !unicode.IsSpace(r)
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xD800 + (r>>10)&0x3FF, 0xDC00 + r&0x3FF
}
