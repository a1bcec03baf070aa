// Package audit is the tamper-evident audit trail of ops: an append-only
// log of JSON records, one per line, hash-chained per replica (each record
// carries the SHA-256 of the line before it), sealed from time to time by
// an Ed25519 signature over the chain head, and rotated by size with the
// chain carried across files. Verify reads a log back and names the first
// edited, removed, reordered or inserted record, or says the chain is whole.
//
// The format is docs/OPERATING.md's "Audit and evidence"; RATIONALE.md
// says why it is JSON lines, SHA-256 and Ed25519.
//
// It imports the standard library and sidecar/api (the Auditor contract
// it implements) only.
package audit
