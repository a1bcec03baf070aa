package api

import "context"

// Auditor keeps the audit trail of a sidecar's ops (Config.Audit):
// pinned's is internal/audit, a hash-chained, sealed log per replica.
// Every method is safe for concurrent use.
type Auditor interface {
	// Ready reports whether a record can be written now; the sidecar
	// refuses an op before sending anything when it cannot.
	Ready() error
	// Append writes one record and returns its receipt. An error means
	// the record may not be kept: the sidecar withholds the op's result.
	Append(ctx context.Context, e AuditEvent) (Receipt, error)
}

// AuditEvent is what the sidecar records of one op or refusal. It never
// holds an argument value other than in Target, whose secret args are
// redacted, and never a credential.
type AuditEvent struct {
	// Source is "ops" (POST /v1/ops), "research" or "run" (RunOp).
	Source string
	// Bot is a digest of the bot's public key; Grant of the grant's nonce.
	Bot   string
	Grant string
	// Service and Op are the op as requested.
	Service string
	Op      string
	// ArgsSHA256 is the args' canonical SHA-256 (grant.ArgsSHA256).
	ArgsSHA256 string
	// Target is the request target as sent, secret args redacted.
	Target string
	// Status is the provider's HTTP status; Applied a failed write's
	// "yes", "maybe" or "no".
	Status  int
	Applied string
	// Bytes is the size of the data returned.
	Bytes int64
	// Code is the refusal or failure code ("" for success); Limit the
	// budget or rate that refused it.
	Code  string
	Limit string
}

// Receipt proves an op's record: the record's SHA-256 (lowercase hex) and
// its position in its replica's chain. A member's client keeps it to
// find the record later, and `pinned audit verify` proves the chain.
type Receipt struct {
	Replica string `json:"replica"`
	Seq     uint64 `json:"seq"`
	Digest  string `json:"digest"`
}
