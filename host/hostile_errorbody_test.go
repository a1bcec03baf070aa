package host

import (
	"bytes"
	"net/http"
	"runtime"
	"testing"
	"time"
)

// TestErrorBodyNotAmplified (found by the red team; it guards the fix): rule 6 bounds what an op may take
// and the threat model lists hostile provider responses ("bombs"). The
// decoded body is capped at 4 MiB, but errorMessage (every non-2xx body),
// graphQLRateLimited (every GraphQL response, success included) and
// graphQLError (every GraphQL 2xx body containing "errors") each build a
// full jsonv tree of the whole body just to read one string. A flat array
// of small numbers makes that tree ~180x the body: one op allocates
// hundreds of MiB, a few concurrent ops can exhaust the process. The
// streaming projector (pick.go) shows how to read the same string in
// constant memory.
func TestErrorBodyNotAmplified(t *testing.T) {
	env := newEnv(t, nil)
	body := append([]byte(`{"message":"x","errors":[`), bytes.Repeat([]byte("0,"), (DefaultMaxResponseBytes-64)/2)...)
	body = append(body, `0]}`...)
	for _, tc := range []struct {
		service, op, args string
		status            int
	}{
		{"github", "get_viewer", `{}`, 500},
		{"linear", "get_viewer", `{}`, 200},
	} {
		t.Run(tc.service, func(t *testing.T) {
			env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				w.Write(body)
				return true
			})
			defer env.fake.SetHandler(nil)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			stop, peak := make(chan struct{}), make(chan uint64)
			go func() { // sample the live heap while the op runs
				var m runtime.MemStats
				var max uint64
				for {
					select {
					case <-stop:
						peak <- max
						return
					case <-time.After(2 * time.Millisecond):
					}
					runtime.ReadMemStats(&m)
					if m.HeapAlloc > max {
						max = m.HeapAlloc
					}
				}
			}()
			_, herr := env.run(tc.service, tc.op, tc.args)
			close(stop)
			live := <-peak - before.HeapAlloc
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s.%s: %d-byte answer (%v): the op allocated %d MiB, peak live heap +%d MiB", tc.service, tc.op, len(body), herr, alloc>>20, live>>20)
			if alloc > 64<<20 {
				t.Errorf("one op with a %d-byte upstream body allocated %d MiB of host memory (x%d)", len(body), alloc>>20, alloc/uint64(len(body)))
			}
		})
	}
}
