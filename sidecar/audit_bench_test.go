package sidecar

import (
	"net/http"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/audit"
	"github.com/elevenmessenger/pinned/sidecar/grant"
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
	run := func(env *testEnv, sealed string) time.Duration {
		start := time.Now()
		if r := benchOp(b, env, sealed); r != http.StatusOK {
			b.Fatalf("op: %d", r)
		}
		return time.Since(start)
	}
	plainLat := make([]time.Duration, 0, b.N)
	audLat := make([]time.Duration, 0, b.N)
	diff := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		if i%1000 == 0 {
			plain.fake.Reset()
		}
		gp := plain.seal(b, grant.Grant{Access: grant.AccessRead})
		ga := aud.seal(b, grant.Grant{Access: grant.AccessRead})
		var p, a time.Duration
		if i%2 == 0 {
			p, a = run(plain, gp), run(aud, ga)
		} else {
			a, p = run(aud, ga), run(plain, gp)
		}
		plainLat, audLat, diff = append(plainLat, p), append(audLat, a), append(diff, a-p)
	}
	reportP50(b, plainLat, "plain-p50-ns")
	reportP50(b, audLat, "audit-p50-ns")
	reportP50(b, diff, "added-p50-ns")
}
