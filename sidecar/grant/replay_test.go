package grant

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestReplayCache(t *testing.T) {
	now := t0
	tests := []struct {
		name string
		size int
		run  func(t *testing.T, c *ReplayCache)
	}{
		{name: "second use is a replay", run: func(t *testing.T, c *ReplayCache) {
			if err := c.Record("nonce-a", now.Add(time.Minute), now); err != nil {
				t.Fatal(err)
			}
			if err := c.Record("nonce-a", now.Add(time.Hour), now.Add(30*time.Second)); err != ErrReplayed {
				t.Fatalf("second Record = %v, want ErrReplayed", err)
			}
			if c.Len() != 1 {
				t.Fatalf("Len = %d, want 1", c.Len())
			}
		}},
		{name: "kept until its time, then forgotten", run: func(t *testing.T, c *ReplayCache) {
			until := now.Add(time.Minute)
			if err := c.Record("nonce-a", until, now); err != nil {
				t.Fatal(err)
			}
			if err := c.Record("nonce-a", until, until); err != ErrReplayed {
				t.Fatalf("Record at its expiry = %v, want ErrReplayed (kept until then)", err)
			}
			if err := c.Record("nonce-a", until.Add(time.Minute), until.Add(time.Nanosecond)); err != nil {
				t.Fatalf("Record after expiry = %v, want nil (forgotten)", err)
			}
		}},
		{name: "full of live entries refuses", run: func(t *testing.T, c *ReplayCache) {
			for i := range 3 {
				if err := c.Record(fmt.Sprint("n", i), now.Add(time.Duration(i+1)*time.Minute), now); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Record("n3", now.Add(time.Hour), now); err != ErrCacheFull {
				t.Fatalf("Record into a full cache = %v, want ErrCacheFull", err)
			}
			// The refused nonce was not recorded, and nothing was evicted.
			if err := c.Record("n0", now.Add(time.Hour), now); err != ErrReplayed {
				t.Fatalf("n0 = %v, want ErrReplayed (never evicted)", err)
			}
			// Once the soonest expires there is room again.
			if err := c.Record("n3", now.Add(time.Hour), now.Add(61*time.Second)); err != nil {
				t.Fatalf("Record after one expiry = %v", err)
			}
			if c.Len() != 3 {
				t.Fatalf("Len = %d, want 3", c.Len())
			}
		}},
		{name: "forget allows reuse", run: func(t *testing.T, c *ReplayCache) {
			for range 10 { // Record/Forget cycles do not grow the cache
				if err := c.Record("nonce-a", now.Add(time.Minute), now); err != nil {
					t.Fatal(err)
				}
				c.Forget("nonce-a")
			}
			if c.Len() != 0 || len(c.order) != 0 {
				t.Fatalf("after forgetting: %d entries, heap %d", c.Len(), len(c.order))
			}
			c.Forget("never recorded")
		}},
		{name: "out of order expiries", size: 5, run: func(t *testing.T, c *ReplayCache) {
			for i, d := range []time.Duration{5, 1, 4, 2, 3} {
				if err := c.Record(fmt.Sprint("n", i), now.Add(d*time.Minute), now); err != nil {
					t.Fatal(err)
				}
			}
			c.Forget("n2") // the 4-minute one
			if err := c.Record("x", now.Add(time.Hour), now.Add(150*time.Second)); err != nil {
				t.Fatal(err)
			}
			// Left: n0 (5m), n4 (3m), x.
			if c.Len() != 3 {
				t.Fatalf("Len = %d, want 3", c.Len())
			}
			for _, n := range []string{"n0", "n4", "x"} {
				if err := c.Record(n, now.Add(time.Hour), now.Add(150*time.Second)); err != ErrReplayed {
					t.Fatalf("%s = %v, want ErrReplayed", n, err)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size := tt.size
			if size == 0 {
				size = 3
			}
			tt.run(t, NewReplayCache(size))
		})
	}
	if NewReplayCache(0).Max() != DefaultReplayCacheSize {
		t.Fatalf("default size %d, want %d", NewReplayCache(0).Max(), DefaultReplayCacheSize)
	}
}

// TestReplayCacheConcurrent races many goroutines recording the same and
// distinct nonces: each nonce is accepted exactly once.
func TestReplayCacheConcurrent(t *testing.T) {
	c := NewReplayCache(1000)
	var accepted atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				if c.Record(fmt.Sprint("n", i), t0.Add(time.Hour), t0) == nil {
					accepted.Add(1)
				}
				if i%10 == 0 {
					c.Forget(fmt.Sprint("other", g, i))
				}
			}
		}()
	}
	wg.Wait()
	if accepted.Load() != 100 || c.Len() != 100 {
		t.Fatalf("accepted %d, held %d; want 100 and 100", accepted.Load(), c.Len())
	}
}
