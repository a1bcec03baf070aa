package audit

import (
	"context"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"
)

// BenchmarkAppend is one op record appended to the chain (encode, hash,
// one write; a seal every DefaultSealEvery records), with each fsync
// policy. "seal" syncs only at seals; "always" after every record.
func BenchmarkAppend(b *testing.B) {
	for _, policy := range []string{FsyncSeal, FsyncAlways} {
		b.Run(policy, func(b *testing.B) {
			l, err := Open(b.TempDir(), Options{Replica: "bench", Key: testKey(), Fsync: policy, SealInterval: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			ev := api.AuditEvent{Source: "ops", Bot: "b0b0b0b0b0b0b0b0", Grant: "0123456789abcdef", Service: "github", Op: "list_repos",
				ArgsSHA256: "77e158765f4d065f49065153f7bf9db9312239b75c237128621e77377a9642a2", Target: "/user/repos?per_page=30&sort=pushed", Status: 200, Bytes: 4096}
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := l.Append(ctx, ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSeal is one seal: an Ed25519 signature and a record (no fsync
// counted: the policy is "always" off).
func BenchmarkSeal(b *testing.B) {
	l, err := Open(b.TempDir(), Options{Replica: "bench", Key: testKey(), SealInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l.mu.Lock()
		_, err := l.append(&Record{Kind: KindSeal})
		l.mu.Unlock()
		if err != nil {
			b.Fatal(err)
		}
	}
}
