package grant

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/elevenmessenger/pinned/internal/jsonv"
)

// ErrArgs is returned by CanonicalArgs for args that are not a strict JSON
// object.
const ErrArgs = constError("grant: args are not a JSON object (strict: unique keys, valid UTF-8)")

// CanonicalArgs returns the canonical form of an op's args, the bytes
// whose SHA-256 a grant's args_sha256 binds ([ArgsSHA256]). A member's
// client MUST reproduce it byte for byte:
//
//  1. Empty input (or only JSON white space) is the empty object "{}", as
//     the host treats absent args.
//  2. The input MUST be one JSON object (RFC 8259) with unique keys at
//     every level and valid UTF-8; anything else (null, an array, a
//     duplicate key, trailing data, nesting deeper than 64) is ErrArgs.
//  3. It is re-encoded with no insignificant white space; object members
//     sorted by key, comparing the keys' UTF-8 bytes; array order kept.
//  4. Numbers are kept exactly as written ("30" stays "30", "30.0" stays
//     "30.0", "1e2" stays "1e2"): the hash binds the text the member saw.
//  5. Strings (keys and values) are written as Go's encoding/json writes
//     them with HTML escaping off: `"` and `\` as \" and \\; U+0008, U+000C,
//     U+000A, U+000D, U+0009 as \b, \f, \n, \r, \t; other code points
//     below U+0020 as \u00XX with lower-case hex; U+2028 and U+2029 as
//     \u2028 and \u2029; everything else — including <, >, &, U+007F and
//     all other non-ASCII — as its raw UTF-8 bytes. An escaped lone
//     surrogate in the input (\ud800) decodes to U+FFFD.
//  6. true, false and null are written as such.
//
// For example {"title": "Hi <b>", "owner":"pinned-tester", "n": 1.0}
// becomes {"n":1.0,"owner":"pinned-tester","title":"Hi <b>"}.
func CanonicalArgs(raw []byte) ([]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return []byte("{}"), nil
	}
	v, err := jsonv.Parse(raw)
	if err != nil || v.Kind != jsonv.Object {
		return nil, ErrArgs
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, ErrArgs
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, ErrArgs
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ArgsSHA256 returns the lower-case hex SHA-256 of CanonicalArgs(raw): the
// value of a grant's args_sha256 that binds these args.
func ArgsSHA256(raw []byte) (string, error) {
	_, sum, err := CanonicalArgsSHA256(raw)
	return sum, err
}

// CanonicalArgsSHA256 returns CanonicalArgs(raw) and its ArgsSHA256,
// canonicalizing once: the bytes to run and the args_sha256 that binds
// them.
func CanonicalArgsSHA256(raw []byte) (canonical []byte, sum string, err error) {
	c, err := CanonicalArgs(raw)
	if err != nil {
		return nil, "", err
	}
	h := sha256.Sum256(c)
	return c, hex.EncodeToString(h[:]), nil
}
