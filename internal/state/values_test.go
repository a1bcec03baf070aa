package state

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/testing/redistest"
)

// valueStore is the short-lived values' contract (values.go).
type valueStore interface {
	PutValue(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error)
	Value(ctx context.Context, key string) ([]byte, bool, error)
	TakeValue(ctx context.Context, key string) ([]byte, bool, error)
}

// TestValues: a value is written once, read by anyone, taken by one
// taker only, and gone after its TTL — in memory and on a real Redis,
// where two clients play two replicas.
func TestValues(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		new  func(t *testing.T) (a, b valueStore)
	}{
		{"memory", func(t *testing.T) (valueStore, valueStore) { m := NewMemory(MemoryOptions{}); return m, m }},
		{"redis", func(t *testing.T) (valueStore, valueStore) {
			srv := redistest.Start(t)
			return newRedisStore(t, RedisOptions{URL: srv.URL()}), newRedisStore(t, RedisOptions{URL: srv.URL()})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := tc.new(t)
			if ok, err := a.PutValue(ctx, "k1", []byte("first"), time.Minute); err != nil || !ok {
				t.Fatalf("put: %v %v", ok, err)
			}
			if ok, err := b.PutValue(ctx, "k1", []byte("second"), time.Minute); err != nil || ok {
				t.Fatalf("a second put over a live value: stored=%v %v, want false", ok, err)
			}
			if v, ok, err := b.Value(ctx, "k1"); err != nil || !ok || string(v) != "first" {
				t.Fatalf("value at the other replica: %q %v %v", v, ok, err)
			}
			if v, ok, err := a.Value(ctx, "nope"); err != nil || ok || v != nil {
				t.Fatalf("missing value: %q %v %v", v, ok, err)
			}

			// Of many concurrent takers on both replicas, exactly one gets it.
			if ok, err := a.PutValue(ctx, "code", []byte("grant"), time.Minute); err != nil || !ok {
				t.Fatal(ok, err)
			}
			var got atomic.Int32
			var wg sync.WaitGroup
			for i := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s := a
					if i%2 == 1 {
						s = b
					}
					v, ok, err := s.TakeValue(ctx, "code")
					if err != nil {
						t.Error(err)
					}
					if ok {
						if string(v) != "grant" {
							t.Errorf("took %q", v)
						}
						got.Add(1)
					}
				}()
			}
			wg.Wait()
			if got.Load() != 1 {
				t.Fatalf("%d takers got the value, want 1", got.Load())
			}

			if ok, err := a.PutValue(ctx, "short", []byte("x"), 100*time.Millisecond); err != nil || !ok {
				t.Fatal(ok, err)
			}
			time.Sleep(300 * time.Millisecond)
			if _, ok, err := b.Value(ctx, "short"); err != nil || ok {
				t.Fatalf("an expired value is still read: %v %v", ok, err)
			}
			if _, ok, err := b.TakeValue(ctx, "short"); err != nil || ok {
				t.Fatalf("an expired value is still taken: %v %v", ok, err)
			}
			if ok, err := b.PutValue(ctx, "short", []byte("y"), time.Minute); err != nil || !ok {
				t.Fatalf("put after expiry: %v %v", ok, err)
			}
		})
	}
}

// TestRedisValueSealed: a value altered in Redis, or moved to another
// key, does not open (an error, never another value).
func TestRedisValueSealed(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	r := newRedisStore(t, RedisOptions{URL: srv.URL()})
	if _, err := r.PutValue(ctx, "a", []byte("approve"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PutValue(ctx, "b", []byte("decline"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if raw, err := r.c.Get(ctx, r.valueKey("a")).Result(); err != nil || len(raw) < 10 || strings.Contains(raw, "approve") {
		t.Fatalf("stored value %q %v: want sealed bytes", raw, err)
	}
	// Move b's sealed value under a's key.
	if err := r.c.Eval(ctx, "return redis.call('SET', KEYS[1], redis.call('GET', KEYS[2]))", []string{r.valueKey("a"), r.valueKey("b")}).Err(); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := r.Value(ctx, "a"); err == nil || ok {
		t.Fatalf("a moved value opened: %q %v %v", v, ok, err)
	}
	other := newRedisStore(t, RedisOptions{URL: srv.URL(), StateKey: make([]byte, StateKeySize)})
	if v, ok, err := other.Value(ctx, "b"); err == nil || ok {
		t.Fatalf("a value opened under another state key: %q %v %v", v, ok, err)
	}
}
