package sidecar

import (
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/audit"
)

// BenchmarkAuditOverhead runs the same read op end to end (HTTP, grant,
// replay record, sandbox, loopback HTTPS fake) through a sidecar without
// an audit trail and through one with it (fsync at seals, the default),
// alternating, and reports each p50 and the p50 of the per-op
// difference: what the audit record adds to an op.
func BenchmarkAuditOverhead(b *testing.B) {
	l, err := audit.Open(b.TempDir(), audit.Options{Replica: "bench", Key: auditKey(), SealInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	plain := newTestEnv(b, nil)
	aud := newTestEnv(b, func(c *Config) { c.Audit = l })
	alternateP50(b, plain, aud, "plain-p50-ns", "audit-p50-ns")
}
