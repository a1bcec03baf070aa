package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// Kinds of record.
const (
	// KindOp is one op or one refusal of an op.
	KindOp = "op"
	// KindOpen is written when a replica opens its chain (a start).
	KindOpen = "open"
	// KindSeal signs the chain head: Prev, the digest of the record
	// before it, with every record before that through the chain.
	KindSeal = "seal"
)

// Genesis is the Prev of a chain's first record: 64 zeros.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// MaxRecordBytes bounds one record line; a longer line is not a record.
const MaxRecordBytes = 64 << 10

// Record is one line of the log. Encoded by encoding/json in field order,
// with omitempty: a record has one canonical encoding, and DecodeRecord
// accepts only that.
type Record struct {
	// Seq is the record's position in its replica's chain, from 1.
	Seq uint64 `json:"seq"`
	// Prev is the lowercase hex SHA-256 of the previous record's line
	// (without its newline), Genesis for the first.
	Prev string `json:"prev"`
	// Time is when the record was written, RFC 3339 with nanoseconds, UTC.
	Time string `json:"time"`
	// Replica names the chain (the directory the files are in).
	Replica string `json:"replica"`
	// Kind is KindOp, KindOpen or KindSeal.
	Kind string `json:"kind"`

	// Source is where an op came from: "ops" (POST /v1/ops), "research"
	// (a research session's tool call) or "run" (Server.RunOp).
	Source string `json:"source,omitempty"`
	// Bot is a digest of the bot's public key (16 hex characters).
	Bot string `json:"bot,omitempty"`
	// Grant is a digest of the grant's nonce (16 hex characters), as the
	// sidecar's logs name it.
	Grant string `json:"grant,omitempty"`
	// Service and Op name the op as requested (clipped to 64 bytes).
	Service string `json:"service,omitempty"`
	Op      string `json:"op,omitempty"`
	// ArgsSHA256 is the args' canonical SHA-256 (the grant's
	// args_sha256 binding), when the args were a strict JSON object.
	ArgsSHA256 string `json:"args_sha256,omitempty"`
	// Target is the request target as sent (path and query), with every
	// secret arg's value replaced by "[redacted]"; empty when nothing was
	// sent or the operator turned targets off.
	Target string `json:"target,omitempty"`
	// Status is the provider's HTTP status, when it answered.
	Status int `json:"status,omitempty"`
	// Applied is a failed write's "yes", "maybe" or "no".
	Applied string `json:"applied,omitempty"`
	// Bytes is the size of the data returned to the caller.
	Bytes int64 `json:"bytes,omitempty"`
	// Code is the refusal or failure code; empty for an op that ran.
	Code string `json:"code,omitempty"`
	// Limit names the budget or rate that refused the op.
	Limit string `json:"limit,omitempty"`

	// Note says why the chain was opened (KindOpen): the program's
	// version, and whether a partial last line was cut.
	Note string `json:"note,omitempty"`
	// Key is the sealing public key, standard base64 (KindSeal).
	Key string `json:"key,omitempty"`
	// Sig is the Ed25519 signature of the seal, standard base64: over
	// SealContext and the record's encoding with Sig empty.
	Sig string `json:"sig,omitempty"`
}

// SealContext prefixes what a seal signs, so a seal's signature means
// nothing elsewhere.
const SealContext = "pinned-audit-seal-v1\n"

// Encode returns the record's canonical line, without the newline.
func (r *Record) Encode() ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxRecordBytes {
		return nil, fmt.Errorf("audit: a record of %d bytes is over %d", len(b), MaxRecordBytes)
	}
	return b, nil
}

// Digest is the lowercase hex SHA-256 of a record line (no newline).
func Digest(line []byte) string {
	s := sha256.Sum256(line)
	return hex.EncodeToString(s[:])
}

// errNotCanonical: the line decodes, but is not the record's one encoding.
var errNotCanonical = errors.New("audit: the line is not a record's canonical encoding")

// DecodeRecord parses one line (without its newline). It accepts only a
// record's canonical encoding: one JSON object of known members, in
// order, with no space, exactly as Encode writes it. Anything else is an
// error, so a changed byte never passes as the same record.
func DecodeRecord(line []byte) (*Record, error) {
	if len(line) > MaxRecordBytes {
		return nil, fmt.Errorf("audit: a line of %d bytes is over %d", len(line), MaxRecordBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var r Record
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("audit: not a record: %w", err)
	}
	again, err := json.Marshal(&r)
	if err != nil || !bytes.Equal(again, line) {
		return nil, errNotCanonical
	}
	return &r, nil
}

// signed is what a seal's signature covers: SealContext, then the
// record's encoding with Sig empty.
func (r *Record) signed() ([]byte, error) {
	c := *r
	c.Sig = ""
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, err
	}
	return append([]byte(SealContext), b...), nil
}

// fmtSig encodes a signature as a seal's Sig.
func fmtSig(sig []byte) string { return base64.StdEncoding.EncodeToString(sig) }
