package host

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
)

// TestResetClosesPageFaultChannel (found by the red team): the reset
// strategy must be exactly as isolating as a fresh instance (docs/
// SECURITY.md rule 6: a guest cannot "keep state from one op to the
// next"). A reset once restored the *contents* of every page an op wrote
// but left those pages private and present, so a later op on the same
// instance could tell which pages an earlier op wrote by timing its own
// copy-on-write faults, with nothing but the guest's millisecond clock —
// it decoded 8 bits of 8. Reset now returns every page to a canonical
// state that does not depend on the op (cowMemory.reset). The hostile guest
// redteam_pagefault sends one bit per round: the sender op ("member A")
// writes region 2k or not; a receiver op ("member B") times writing
// region 2k against an untouched control region and puts its verdict in
// its request, which leaves the sandbox.
//
// The test fails when the receivers decode every bit (see the attempts). With the default
// pool the receiver runs pool-size times per round (instances are reused
// in FIFO order, so one of them lands on the sender's instance) and the
// bit is the OR of their verdicts. With IsolationFresh the same guest
// learns nothing (control).
func TestResetClosesPageFaultChannel(t *testing.T) {
	for _, tc := range []struct {
		name, iso string
		pool      int
	}{
		{"reset/pool=1", IsolationReset, 1},
		{"reset/default_pool", IsolationReset, 0},
		{"fresh", IsolationFresh, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each attempt on a new engine; the test fails only when every
			// attempt decodes every bit (chance: 2^-16), so an honest reset
			// never fails it by luck while a channel fails it every time.
			const attempts = 2
			decodedAll := 0
			for a := 0; a < attempts; a++ {
				if pageFaultAttempt(t, tc.iso, tc.pool) {
					decodedAll++
				}
			}
			if decodedAll == attempts {
				t.Errorf("%s: later ops decoded every bit an earlier op wrote into page residue, %d times out of %d: state carried from op to op", tc.name, decodedAll, attempts)
			}
		})
	}
}

// pageFaultAttempt runs the 8 rounds of the page-fault channel on a new
// engine and reports whether every bit was decoded.
func pageFaultAttempt(t *testing.T, iso string, poolSize int) bool {
	env := newEnv(t, func(c *Config) {
		c.Guest = hostileGuest(t, "redteam_pagefault")
		c.MemoryLimitPages = 1024
		c.PoolSize = poolSize
		c.Isolation = iso
		c.Registry = githubOnly(t) // the channel needs one op; fewer warm-up runs
	})
	if iso == IsolationReset && env.eng.Strategy() != IsolationReset {
		t.Fatalf("strategy %s", env.eng.Strategy())
	}
	receivers := 1
	if iso == IsolationReset {
		receivers = env.eng.sb.Stats().Size
		// Let the background fill finish, so sequential ops cycle
		// through the instances in FIFO order.
		testutil.WaitFor(t, 30*time.Second, "the pool's background fill", func() bool { return env.eng.sb.Stats().Idle == receivers })
	}
	const rounds = 8
	correct := 0
	for r := 0; r < rounds; r++ {
		bit := rand.IntN(2)
		if r < 2 {
			bit = r // at least one of each
		}
		if _, err := env.run("github", "list_issues", `{"attack":"send:`+strconv.Itoa(r)+`:`+strconv.Itoa(bit)+`"}`); err != nil && err.Code != api.CodeUpstreamError {
			t.Fatalf("sender: %v", err)
		}
		got := 0
		for i := 0; i < receivers; i++ {
			if leakFinding(t, env, `{"attack":"probe:`+strconv.Itoa(r)+`"}`) == "one" { // what the guest learned
				got = 1
			}
		}
		if got != bit {
			// One wrong bit settles the attempt: it did not decode them all.
			t.Logf("%s pool=%d: receivers decoded bit %d wrong after %d right (%d receiver ops per bit)", iso, poolSize, r, correct, receivers)
			return false
		}
		correct++
	}
	t.Logf("%s pool=%d: receivers decoded all %d bits (%d receiver ops per bit)", iso, poolSize, rounds, receivers)
	return true
}

// TestResetIsolatesRandomState (found by the red team): a fresh instance
// seeds the Go runtime's random generator from random_get in _initialize;
// a reset instance restores the template's generator state, so every op
// starts from the same sequence (docs/RATIONALE.md: the one thing a reset
// instance does not reproduce; the executor uses no randomness). What must
// hold is isolation: an op's draws never advance the next op's sequence
// (reset: the same first value every time), and fresh instances differ.
func TestResetIsolatesRandomState(t *testing.T) {
	for _, iso := range []string{IsolationReset, IsolationFresh} {
		t.Run(iso, func(t *testing.T) {
			env := newEnv(t, func(c *Config) {
				c.Guest = hostileGuest(t, "redteam_pagefault")
				c.MemoryLimitPages = 1024
				c.Isolation = iso
				c.PoolSize = 1
				c.Registry = githubOnly(t)
			})
			seen := map[string]int{}
			for i := 0; i < 3; i++ {
				seen[leakFinding(t, env, `{"attack":"rand"}`)]++
			}
			t.Logf("%s: first rand.Uint64 of three ops: %v", iso, seen)
			switch {
			case iso == IsolationReset && len(seen) != 1:
				t.Errorf("reset: an op's draws changed the next op's first value: %v", seen)
			case iso == IsolationFresh && len(seen) == 1:
				t.Errorf("fresh: three fresh instances drew the same first value: %v", seen)
			}
		})
	}
}

// leakFinding runs the redteam_pagefault guest with a harness line and
// returns what it reported ("leak=<word>" in the op's log); its request
// must be the honest one and reach the fake.
func leakFinding(t *testing.T, env *testEnv, harness string) string {
	t.Helper()
	env.fake.Reset()
	before := len(env.guestOutput())
	if _, err := env.run("github", "list_issues", harness); err != nil && err.Code != api.CodeUpstreamError {
		t.Fatalf("%s: %v", harness, err)
	}
	if n := len(env.fake.Requests()); n != 1 {
		t.Fatalf("%d requests", n)
	}
	return guestField(t, env.guestOutput()[before:], "leak")
}
