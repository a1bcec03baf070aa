package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/elevenmessenger/pinned/internal/testing/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var testKey = bytes.Repeat([]byte{7}, StateKeySize)

// stores returns the stores the contract runs against: the in-memory one
// and one on a real Redis of the test's own.
func stores(t *testing.T) []struct {
	name string
	new  func(t *testing.T) api.Store
} {
	return []struct {
		name string
		new  func(t *testing.T) api.Store
	}{
		{"memory", func(t *testing.T) api.Store { return NewMemory(MemoryOptions{}) }},
		{"file", func(t *testing.T) api.Store {
			f, err := OpenFile(filepath.Join(t.TempDir(), "state", "sidecar.db"), FileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		}},
		{"redis", func(t *testing.T) api.Store {
			srv := redistest.Start(t)
			return newRedisStore(t, RedisOptions{URL: srv.URL()})
		}},
		{"redis_acl_user", func(t *testing.T) api.Store {
			// The ACL of docs/OPERATING.md ("Several replicas"): only the
			// commands the store needs, only keys under its prefix.
			srv := redistest.Start(t)
			acl := append([]string{"ACL", "SETUSER", "pinned", "reset", "on", ">acl-test-password-0123456789", "~pinned:*", "resetchannels", "-@all"}, strings.Fields(aclCommands)...)
			if r, err := srv.Do(acl...); err != nil || r != "+OK" {
				t.Fatalf("ACL SETUSER: %q %v", r, err)
			}
			return newRedisStore(t, RedisOptions{URL: "redis://pinned@" + srv.Addr(), Password: "acl-test-password-0123456789"})
		}},
	}
}

// aclCommands are the ACL rules of docs/OPERATING.md (TestOperatingDocACL
// keeps the two in step).
const aclCommands = "+ping +set +get +hget +evalsha +eval +del +incr +pexpire +hset +time +hincrby +pttl"

func newRedisStore(t *testing.T, o RedisOptions) *Redis {
	t.Helper()
	if o.StateKey == nil {
		o.StateKey = testKey
	}
	r, err := NewRedis(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// TestStoreContract: both stores keep the same promises.
func TestStoreContract(t *testing.T) {
	ctx := context.Background()
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			s := st.new(t)
			if err := s.Ping(ctx); err != nil {
				t.Fatal(err)
			}
			t.Run("replay", func(t *testing.T) {
				now := time.Now()
				until := now.Add(time.Minute)
				n1, err := s.RecordNonce(ctx, "nonce-a", until, now)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.RecordNonce(ctx, "nonce-a", until, now); !errors.Is(err, api.ErrReplayed) {
					t.Fatalf("second record: %v, want api.ErrReplayed", err)
				}
				if _, err := s.RecordNonce(ctx, "nonce-b", until, now); err != nil {
					t.Fatalf("another nonce: %v", err)
				}
				if err := s.ForgetNonce(ctx, n1); err != nil {
					t.Fatal(err)
				}
				n2, err := s.RecordNonce(ctx, "nonce-a", until, now)
				if err != nil {
					t.Fatalf("record after forget: %v", err)
				}
				_ = n2
				if s.Kind() == "redis" {
					// A stale receipt (n1's record is gone) must not forget
					// the record made after it.
					if err := s.ForgetNonce(ctx, n1); err != nil {
						t.Fatal(err)
					}
					if _, err := s.RecordNonce(ctx, "nonce-a", until, now); !errors.Is(err, api.ErrReplayed) {
						t.Fatalf("a stale receipt forgot a newer record: %v", err)
					}
				}
			})
			t.Run("replay_expires", func(t *testing.T) {
				now := time.Now()
				if _, err := s.RecordNonce(ctx, "nonce-short", now.Add(150*time.Millisecond), now); err != nil {
					t.Fatal(err)
				}
				time.Sleep(300 * time.Millisecond)
				if _, err := s.RecordNonce(ctx, "nonce-short", time.Now().Add(time.Minute), time.Now()); err != nil {
					t.Fatalf("an expired record still refuses: %v", err)
				}
			})
			t.Run("replay_race", func(t *testing.T) {
				var ok, replayed atomic.Int64
				var wg sync.WaitGroup
				now := time.Now()
				for range 20 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						switch _, err := s.RecordNonce(ctx, "nonce-race", now.Add(time.Minute), now); {
						case err == nil:
							ok.Add(1)
						case errors.Is(err, api.ErrReplayed):
							replayed.Add(1)
						default:
							t.Error(err)
						}
					}()
				}
				wg.Wait()
				if ok.Load() != 1 || replayed.Load() != 19 {
					t.Fatalf("%d recorded, %d replayed; want 1 and 19", ok.Load(), replayed.Load())
				}
			})
			t.Run("lock", func(t *testing.T) {
				l1, ok, err := s.TryLock(ctx, "cred-1", time.Minute)
				if err != nil || !ok || l1.Token == "" || l1.Fence < 1 {
					t.Fatalf("first lock: %+v %v %v", l1, ok, err)
				}
				if _, ok, err := s.TryLock(ctx, "cred-1", time.Minute); err != nil || ok {
					t.Fatalf("a held lock was taken again: %v %v", ok, err)
				}
				if _, ok, _ := s.TryLock(ctx, "cred-2", time.Minute); !ok {
					t.Fatal("another credential's lock is not free")
				}
				forged := l1
				forged.Token = "not-the-owner"
				if err := s.Unlock(ctx, forged); err != nil {
					t.Fatal(err)
				}
				if _, ok, _ := s.TryLock(ctx, "cred-1", time.Minute); ok {
					t.Fatal("a non-owner released the lock")
				}
				if err := s.Unlock(ctx, l1); err != nil {
					t.Fatal(err)
				}
				l2, ok, err := s.TryLock(ctx, "cred-1", 150*time.Millisecond)
				if err != nil || !ok || l2.Fence <= l1.Fence {
					t.Fatalf("lock after release: %+v %v %v (fence must grow past %d)", l2, ok, err, l1.Fence)
				}
				time.Sleep(300 * time.Millisecond)
				l3, ok, err := s.TryLock(ctx, "cred-1", time.Minute)
				if err != nil || !ok || l3.Fence <= l2.Fence {
					t.Fatalf("an expired lock is still held: %+v %v %v", l3, ok, err)
				}
				// The expired holder's release does not free the new lock.
				if err := s.Unlock(ctx, l2); err != nil {
					t.Fatal(err)
				}
				if _, ok, _ := s.TryLock(ctx, "cred-1", time.Minute); ok {
					t.Fatal("an expired holder released its successor's lock")
				}
			})
			t.Run("grace", func(t *testing.T) {
				if _, ok, err := s.Grace(ctx, "cred-g"); err != nil || ok {
					t.Fatalf("empty grace: %v %v", ok, err)
				}
				old, _, _ := s.TryLock(ctx, "cred-g", 50*time.Millisecond)
				time.Sleep(100 * time.Millisecond) // the old holder is paused past its TTL
				cur, ok, _ := s.TryLock(ctx, "cred-g", time.Minute)
				if !ok {
					t.Fatal("the lock did not expire")
				}
				if stored, err := s.PutGrace(ctx, cur, []byte("pair-from-current"), time.Minute); err != nil || !stored {
					t.Fatalf("put: %v %v", stored, err)
				}
				if stored, err := s.PutGrace(ctx, old, []byte("pair-from-paused"), time.Minute); err != nil || stored {
					t.Fatalf("the paused holder overwrote the newer pair: %v %v", stored, err)
				}
				v, ok, err := s.Grace(ctx, "cred-g")
				if err != nil || !ok || string(v) != "pair-from-current" {
					t.Fatalf("grace: %q %v %v", v, ok, err)
				}
				// The current holder may replace its own entry; a later one too.
				if err := s.Unlock(ctx, cur); err != nil {
					t.Fatal(err)
				}
				next, _, _ := s.TryLock(ctx, "cred-g", time.Minute)
				if stored, _ := s.PutGrace(ctx, next, []byte("pair-from-next"), 150*time.Millisecond); !stored {
					t.Fatal("a later holder could not store")
				}
				if v, _, _ := s.Grace(ctx, "cred-g"); string(v) != "pair-from-next" {
					t.Fatalf("grace %q", v)
				}
				time.Sleep(300 * time.Millisecond)
				if _, ok, _ := s.Grace(ctx, "cred-g"); ok {
					t.Fatal("the grace entry outlived its TTL")
				}
			})
		})
	}
}

// TestRedisGraceSealed: a grace entry is never in Redis in the clear, is
// bound to its key, and does not open under another state key.
func TestRedisGraceSealed(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	s := newRedisStore(t, RedisOptions{URL: srv.URL(), Prefix: "bot1:"})
	l, _, err := s.TryLock(ctx, "cred-s", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte(`{"access":"gho_secret_access_token","refresh":"ghr_secret_refresh_token"}`)
	if ok, err := s.PutGrace(ctx, l, secret, time.Minute); err != nil || !ok {
		t.Fatal(ok, err)
	}
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, DisableIdentity: true})
	defer raw.Close()
	keys, err := raw.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "bot1:") {
			t.Errorf("key %q is outside the prefix", k)
		}
	}
	gk := "bot1:r:{cred-s}:grace"
	v, err := raw.HGet(ctx, gk, "v").Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(v, []byte("secret")) || len(v) < len(secret)+16 {
		t.Fatalf("the grace entry is not sealed: %q", v)
	}
	// Moved to another credential's key, it does not open.
	if err := raw.HSet(ctx, "bot1:r:{cred-t}:grace", "f", 1, "v", v).Err(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Grace(ctx, "cred-t"); !errors.Is(err, api.ErrUnavailable) {
		t.Fatalf("a moved entry: %v, want api.ErrUnavailable", err)
	}
	other := newRedisStore(t, RedisOptions{URL: srv.URL(), Prefix: "bot1:", StateKey: bytes.Repeat([]byte{8}, StateKeySize)})
	if _, _, err := other.Grace(ctx, "cred-s"); !errors.Is(err, api.ErrUnavailable) {
		t.Fatalf("another state key: %v, want api.ErrUnavailable", err)
	}
	// The nonce is stored as its hash only, until exactly the given time
	// (PXAT, rounded up to the millisecond, never down).
	until := time.Now().Add(time.Minute).Truncate(time.Millisecond).Add(500 * time.Microsecond)
	if _, err := s.RecordNonce(ctx, "nonce-in-the-clear?", until, time.Now()); err != nil {
		t.Fatal(err)
	}
	keys, _ = raw.Keys(ctx, "bot1:n:*").Result()
	if len(keys) != 1 || strings.Contains(keys[0], "clear") || len(keys[0]) != len("bot1:n:")+64 {
		t.Fatalf("nonce keys %q", keys)
	}
	if at := raw.PExpireTime(ctx, keys[0]).Val(); at != time.Duration(until.UnixMilli()+1)*time.Millisecond {
		t.Fatalf("the record expires at %d ms, want %d", at.Milliseconds(), until.UnixMilli()+1)
	}
}

// TestRedisUnavailable: with Redis gone every operation fails with
// api.ErrUnavailable within the bound, and works again once Redis is back.
func TestRedisUnavailable(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	s := newRedisStore(t, RedisOptions{URL: srv.URL(), Timeout: 200 * time.Millisecond})
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	ops := []struct {
		name string
		run  func() error
	}{
		{"ping", func() error { return s.Ping(ctx) }},
		{"record", func() error { _, err := s.RecordNonce(ctx, "n", time.Now().Add(time.Minute), time.Now()); return err }},
		{"forget", func() error { return s.ForgetNonce(ctx, api.Nonce{Key: "k", Token: "t"}) }},
		{"lock", func() error { _, _, err := s.TryLock(ctx, "c", time.Second); return err }},
		{"unlock", func() error { return s.Unlock(ctx, api.Lock{Key: "c", Token: "t"}) }},
		{"grace", func() error { _, _, err := s.Grace(ctx, "c"); return err }},
		{"put_grace", func() error {
			_, err := s.PutGrace(ctx, api.Lock{Key: "c", Fence: 1}, []byte("x"), time.Second)
			return err
		}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			start := time.Now()
			err := op.run()
			if !errors.Is(err, api.ErrUnavailable) {
				t.Fatalf("%v, want api.ErrUnavailable", err)
			}
			// The store's timeout is 200ms; a busy machine gets slack.
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("took %s, past the bound", d)
			}
			if strings.Contains(err.Error(), "nonce-") {
				t.Fatalf("the error names the nonce: %v", err)
			}
		})
	}
	srv.Restart()
	deadline := time.Now().Add(5 * time.Second)
	for s.Ping(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the store did not recover after Redis came back")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestParseRedisURL(t *testing.T) {
	tests := []struct {
		name, url, wantErr string
		tls                bool
		network            string
	}{
		{name: "tcp", url: "redis://127.0.0.1:6379/0", network: "tcp"},
		{name: "user", url: "redis://pinned@redis.internal:6379", network: "tcp"},
		{name: "tls", url: "rediss://redis.internal:6380", tls: true, network: "tcp"},
		{name: "unix", url: "unix:///run/redis/redis.sock", network: "unix"},
		{name: "password", url: "redis://pinned:hunter2@127.0.0.1:6379", wantErr: "carries a password"},
		{name: "password_only", url: "redis://:hunter2@127.0.0.1:6379", wantErr: "carries a password"},
		{name: "scheme", url: "http://127.0.0.1:6379", wantErr: "want redis, rediss"},
		{name: "garbage", url: "::", wantErr: "does not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := ParseRedisURL(tt.url)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Fatal("the error repeats the password")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (o.TLSConfig != nil) != tt.tls || o.Network != tt.network {
				t.Fatalf("tls %v network %q", o.TLSConfig != nil, o.Network)
			}
		})
	}
}

// TestOperatingDocACL: the ACL docs/OPERATING.md gives operators is the
// one TestStoreContract/redis_acl_user runs the store under.
func TestOperatingDocACL(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "OPERATING.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := "ACL SETUSER pinned on >PASSWORD ~pinned:* resetchannels -@all " + aclCommands + "\n"
	if !strings.Contains(string(doc), want) {
		t.Fatalf("docs/OPERATING.md lacks the tested ACL line %q", want)
	}
}

// TestRedisUnixSocket: unix:// URLs reach a Redis on a socket.
func TestRedisUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "redis.sock")
	srv := redistest.StartArgs(t, "--unixsocket", sock, "--unixsocketperm", "700")
	_ = srv
	s := newRedisStore(t, RedisOptions{URL: "unix://" + sock})
	ctx := context.Background()
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordNonce(ctx, "nonce-over-a-socket", time.Now().Add(time.Minute), time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordNonce(ctx, "nonce-over-a-socket", time.Now().Add(time.Minute), time.Now()); !errors.Is(err, api.ErrReplayed) {
		t.Fatalf("%v, want api.ErrReplayed", err)
	}
}

// TestRedisTimedOutRecord: a SET that timed out (the op was refused with
// unavailable) but landed late does not spend the grant: a retry on the
// same replica takes the record over, and on another replica the record
// is gone once the clean-up ran.
func TestRedisTimedOutRecord(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	const timeout = 300 * time.Millisecond
	s1 := newRedisStore(t, RedisOptions{URL: srv.URL(), Timeout: timeout})
	s2 := newRedisStore(t, RedisOptions{URL: srv.URL(), Timeout: timeout})
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, DisableIdentity: true})
	defer raw.Close()
	for _, s := range []*Redis{s1, s2} { // connections up before the pause
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	}
	late := func(nonce string) {
		t.Helper()
		srv.Pause()
		_, err := s1.RecordNonce(ctx, nonce, time.Now().Add(time.Minute), time.Now())
		srv.Resume()
		if !errors.Is(err, api.ErrUnavailable) {
			t.Fatalf("record against a frozen Redis: %v", err)
		}
		// The SET was in Redis's socket buffer: it lands now.
		deadline := time.Now().Add(timeout / 2)
		for raw.Exists(ctx, s1.nonceKey(nonce)).Val() != 1 {
			if time.Now().After(deadline) {
				t.Skip("the timed-out SET did not land; nothing to clean up")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	late("nonce-late-same-replica")
	if _, err := s2.RecordNonce(ctx, "nonce-late-same-replica", time.Now().Add(time.Minute), time.Now()); !errors.Is(err, api.ErrReplayed) {
		t.Fatalf("another replica while the late record stands: %v, want api.ErrReplayed", err)
	}
	n, err := s1.RecordNonce(ctx, "nonce-late-same-replica", time.Now().Add(time.Minute), time.Now())
	if err != nil {
		t.Fatalf("the retry on the same replica: %v, want it to take its abandoned record over", err)
	}
	time.Sleep(2 * timeout) // the clean-up must not delete the retry's record
	if _, err := s2.RecordNonce(ctx, "nonce-late-same-replica", time.Now().Add(time.Minute), time.Now()); !errors.Is(err, api.ErrReplayed) {
		t.Fatalf("after the clean-up the retry's record is gone: %v", err)
	}
	_ = n

	late("nonce-late-other-replica")
	time.Sleep(3 * timeout) // the clean-up ran
	if _, err := s2.RecordNonce(ctx, "nonce-late-other-replica", time.Now().Add(time.Minute), time.Now()); err != nil {
		t.Fatalf("a retry on another replica after the clean-up: %v", err)
	}
}

// TestRedisRecordNonceBackedOff: the one-round-trip record records as
// RecordNonce does (a second use of the nonce is ErrReplayed, the record
// can be forgotten) and reads the back-off BackOff set, only while it
// lasts.
func TestRedisRecordNonceBackedOff(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	s := newRedisStore(t, RedisOptions{URL: srv.URL()})
	now := time.Now()
	tests := []struct {
		name    string
		backoff time.Time // zero: none set
		want    bool      // a back-off is reported
	}{
		{"no back-off", time.Time{}, false},
		{"backing off", now.Add(time.Minute), true},
		{"back-off over", now.Add(-time.Minute), false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cred := fmt.Sprintf("cred:%d", i)
			if !tt.backoff.IsZero() {
				if err := s.BackOff(ctx, cred, tt.backoff); err != nil {
					t.Fatal(err)
				}
			}
			nonce := fmt.Sprintf("nonce-%d", i)
			n, until, err := s.RecordNonceBackedOff(ctx, nonce, now.Add(time.Minute), now, cred)
			if err != nil {
				t.Fatal(err)
			}
			if got := !until.IsZero(); got != tt.want {
				t.Fatalf("backed off until %v, want a back-off: %v", until, tt.want)
			}
			if tt.want && until.UnixMilli() != tt.backoff.UnixMilli() {
				t.Fatalf("backed off until %v, want %v", until, tt.backoff)
			}
			if _, _, err := s.RecordNonceBackedOff(ctx, nonce, now.Add(time.Minute), now, cred); !errors.Is(err, api.ErrReplayed) {
				t.Fatalf("second record: %v, want ErrReplayed", err)
			}
			if _, err := s.RecordNonce(ctx, nonce, now.Add(time.Minute), now); !errors.Is(err, api.ErrReplayed) {
				t.Fatalf("RecordNonce after it: %v, want ErrReplayed", err)
			}
			if err := s.ForgetNonce(ctx, n); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.RecordNonceBackedOff(ctx, nonce, now.Add(time.Minute), now, cred); err != nil {
				t.Fatalf("record after forget: %v", err)
			}
		})
	}
}
