package state

import (
	"context"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"
)

// TestLimiterContract: every store takes ops from a bucket of rate and
// burst, refuses past it with how long to wait, refills with time, keeps
// buckets apart, and keeps the latest back-off of a credential.
func TestLimiterContract(t *testing.T) {
	ctx := context.Background()
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			l, ok := st.new(t).(api.Limiter)
			if !ok {
				t.Fatalf("%s is no api.Limiter", st.name)
			}
			rate := api.Rate{PerSecond: 5, Burst: 3}
			now := time.Now()
			for i := range 3 {
				if ok, _, err := l.Take(ctx, "bot", rate, now); err != nil || !ok {
					t.Fatalf("op %d of the burst: %v %v", i, ok, err)
				}
			}
			ok, wait, err := l.Take(ctx, "bot", rate, now)
			if err != nil || ok || wait <= 0 || wait > 250*time.Millisecond {
				t.Fatalf("past the burst: ok %v, wait %v, %v (want refused, wait in (0, 200ms])", ok, wait, err)
			}
			if ok, _, err := l.Take(ctx, "other", rate, now); err != nil || !ok {
				t.Fatalf("another key: %v %v", ok, err)
			}
			if ok, _, _ := l.Take(ctx, "bot", api.Rate{}, now); !ok {
				t.Fatal("a zero rate refused")
			}
			// After the wait (a store on its own clock included), one more.
			time.Sleep(wait + 20*time.Millisecond)
			if ok, _, err := l.Take(ctx, "bot", rate, now.Add(wait+20*time.Millisecond)); err != nil || !ok {
				t.Fatalf("after the wait: %v %v", ok, err)
			}

			until := now.Add(2 * time.Second).Truncate(time.Millisecond)
			if err := l.BackOff(ctx, "cred", until); err != nil {
				t.Fatal(err)
			}
			if err := l.BackOff(ctx, "cred", now.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			got, err := l.BackedOff(ctx, "cred", now)
			if err != nil || !got.Equal(until) {
				t.Fatalf("backed off until %v (%v), want %v: an earlier back-off must not shorten a later one", got, err, until)
			}
			if got, _ := l.BackedOff(ctx, "cred", until.Add(time.Millisecond)); !got.IsZero() {
				t.Fatalf("a past back-off: %v", got)
			}
			if got, _ := l.BackedOff(ctx, "other-cred", now); !got.IsZero() {
				t.Fatalf("another credential: %v", got)
			}
		})
	}
}

func TestGCRA(t *testing.T) {
	now := time.Unix(1000, 0)
	rate := api.Rate{PerSecond: 10, Burst: 10}
	var tat time.Time
	allowed := 0
	// 200 ops over 2 s, evenly: 10 at once, then 10 a second.
	for i := range 200 {
		at := now.Add(time.Duration(i) * 10 * time.Millisecond)
		next, ok, _ := gcra(tat, at, rate)
		if ok {
			allowed++
			tat = next
		}
	}
	if allowed < 28 || allowed > 30 {
		t.Fatalf("%d allowed, want 28 to 30 (a burst of 10, then 10/s for 2 s)", allowed)
	}
}

// TestBudgetContract: every store keeps a budget's ops and bytes, refuses
// past a cap without adding, keeps budgets apart, and forgets one when
// it expires.
func TestBudgetContract(t *testing.T) {
	ctx := context.Background()
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			l := st.new(t).(api.Limiter)
			c := api.Cap{Ops: 3, Bytes: 1000}
			exp := time.Now().Add(time.Minute)
			for i := range 3 {
				if ok, err := l.Spend(ctx, "day", 1, 0, c, exp); err != nil || !ok {
					t.Fatalf("op %d under the cap: %v %v", i, ok, err)
				}
			}
			if ok, err := l.Spend(ctx, "day", 1, 0, c, exp); err != nil || ok {
				t.Fatalf("past the ops cap: %v %v", ok, err)
			}
			// Bytes: added after the op, unchecked; the next op checks them.
			bc := api.Cap{Bytes: 1000}
			if ok, _ := l.Spend(ctx, "bytes", 1, 0, bc, exp); !ok {
				t.Fatal("first op")
			}
			if ok, _ := l.Spend(ctx, "bytes", 0, 1500, api.Cap{}, exp); !ok {
				t.Fatal("adding bytes")
			}
			if ok, _ := l.Spend(ctx, "bytes", 1, 0, bc, exp); ok {
				t.Fatal("an op past the bytes cap")
			}
			if ok, _ := l.Spend(ctx, "other", 1, 0, c, exp); !ok {
				t.Fatal("another budget")
			}
			short := time.Now().Add(150 * time.Millisecond)
			if ok, _ := l.Spend(ctx, "short", 1, 0, api.Cap{Ops: 1}, short); !ok {
				t.Fatal("short budget")
			}
			time.Sleep(300 * time.Millisecond)
			if ok, err := l.Spend(ctx, "short", 1, 0, api.Cap{Ops: 1}, time.Now().Add(time.Minute)); err != nil || !ok {
				t.Fatalf("an expired budget is not forgotten: %v %v", ok, err)
			}
		})
	}
}
