package rotate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/elevenmessenger/pinned/internal/state"
	"github.com/elevenmessenger/pinned/secret"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeRefresher rotates like a provider with single-use refresh tokens:
// a token refreshes once; presenting it again is invalid_grant.
type fakeRefresher struct {
	mu    sync.Mutex
	live  map[string]bool
	calls atomic.Int64
	delay time.Duration
	fail  error                           // returned instead, when set
	block func(ctx context.Context) error // when set, called instead
	now   func() time.Time
	next  int
	hook  func(service, rt string) (api.Pair, error) // when set, answers
}

func newFakeRefresher(live ...string) *fakeRefresher {
	f := &fakeRefresher{live: map[string]bool{}, now: time.Now}
	for _, l := range live {
		f.live[l] = true
	}
	return f
}

func (f *fakeRefresher) Refresh(ctx context.Context, service string, srt secret.Secret) (api.Pair, error) {
	rt := string(srt)
	f.calls.Add(1)
	if f.block != nil {
		return api.Pair{}, f.block(ctx)
	}
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return api.Pair{}, ctx.Err()
		}
	}
	if f.fail != nil {
		return api.Pair{}, f.fail
	}
	if f.hook != nil {
		return f.hook(service, rt)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.live[rt] {
		return api.Pair{}, &api.RefreshError{Kind: api.RefreshReconnect, Code: "invalid_grant", Err: errors.New("refresh token used")}
	}
	delete(f.live, rt)
	f.next++
	fresh := api.Pair{Access: secret.Secret("at-" + strconv.Itoa(f.next)), Refresh: secret.Secret("rt-" + strconv.Itoa(f.next)), ExpiresAt: f.now().Add(8 * time.Hour)}
	f.live[string(fresh.Refresh)] = true
	return fresh, nil
}

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestStale(t *testing.T) {
	clk := &testClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	r := New(newFakeRefresher(), Options{Now: clk.Now})
	tests := []struct {
		name string
		p    api.Pair
		want bool
	}{
		{name: "far from expiry", p: api.Pair{Access: "a", Refresh: "r", ExpiresAt: clk.t.Add(time.Hour)}, want: false},
		{name: "just outside the margin", p: api.Pair{Access: "a", Refresh: "r", ExpiresAt: clk.t.Add(DefaultMargin + time.Second)}, want: false},
		{name: "at the margin", p: api.Pair{Access: "a", Refresh: "r", ExpiresAt: clk.t.Add(DefaultMargin)}, want: true},
		{name: "inside the margin", p: api.Pair{Access: "a", Refresh: "r", ExpiresAt: clk.t.Add(10 * time.Second)}, want: true},
		{name: "expired", p: api.Pair{Access: "a", Refresh: "r", ExpiresAt: clk.t.Add(-time.Hour)}, want: true},
		{name: "unknown expiry is not refreshed blindly", p: api.Pair{Access: "a", Refresh: "r"}, want: false},
		{name: "expired without a refresh token cannot rotate", p: api.Pair{Access: "a", ExpiresAt: clk.t.Add(-time.Hour)}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Stale(tt.p); got != tt.want {
				t.Fatalf("Stale = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSingleFlightAndGrace: 50 goroutines with one expired pair cause one
// refresh and all get the same fresh pair; a second wave arriving with the
// old pair within the grace window causes none; after the window the old
// token is tried again (and is dead).
func TestSingleFlightAndGrace(t *testing.T) {
	clk := &testClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	ref := newFakeRefresher("rt-0")
	ref.delay = 50 * time.Millisecond
	ref.now = clk.Now
	r := New(ref, Options{Now: clk.Now})
	old := api.Pair{Access: "at-0", Refresh: "rt-0", ExpiresAt: clk.t.Add(-time.Minute)}

	wave := func(n int, p api.Pair) []api.Pair {
		var wg sync.WaitGroup
		out := make([]api.Pair, n)
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, rotated, err := r.Before(context.Background(), "github", p)
				if err == nil && !rotated {
					err = errors.New("not rotated")
				}
				out[i], errs[i] = got, err
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("caller %d: %v", i, err)
			}
		}
		return out
	}

	first := wave(50, old)
	for i, p := range first {
		if p != first[0] || p.Access != "at-1" || p.Refresh != "rt-1" {
			t.Fatalf("caller %d got %v", i, p)
		}
	}
	if n := ref.calls.Load(); n != 1 {
		t.Fatalf("%d refreshes for 50 callers, want exactly 1", n)
	}

	clk.Advance(DefaultGrace - time.Second)
	second := wave(50, old)
	for _, p := range second {
		if p != first[0] {
			t.Fatalf("second wave got %v", p)
		}
	}
	if n := ref.calls.Load(); n != 1 {
		t.Fatalf("the second wave refreshed (%d calls), want none", n)
	}
	if s := r.Stats(); s.Refreshes != 1 || s.GraceHits < 50 {
		t.Errorf("stats %+v", s)
	}

	// The fresh pair itself is not superseded: Before keeps it.
	if got, rotated, err := r.Before(context.Background(), "github", first[0]); err != nil || rotated || got != first[0] {
		t.Fatalf("fresh pair: %v %v %v", got, rotated, err)
	}
	// Another service with the same refresh token string is another
	// credential.
	if _, ok, _ := r.Superseded(context.Background(), "linear", old); ok {
		t.Fatal("the grace cache crosses services")
	}

	clk.Advance(2 * time.Second) // past the grace window
	_, _, err := r.Before(context.Background(), "github", old)
	if !errors.Is(err, api.ErrReconnectRequired) || errors.Is(err, api.ErrRetryable) {
		t.Fatalf("the dead old token after the window: %v", err)
	}
	if n := ref.calls.Load(); n != 2 {
		t.Fatalf("%d calls", n)
	}
}

// TestGraceChain: A→B then B→C; an op still holding A gets C.
func TestGraceChain(t *testing.T) {
	ref := newFakeRefresher("rt-0")
	r := New(ref, Options{})
	a := api.Pair{Access: "at-0", Refresh: "rt-0"}
	b, err := r.Rotate(context.Background(), "github", a)
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Rotate(context.Background(), "github", b)
	if err != nil || c == b {
		t.Fatal(err)
	}
	got, err := r.Rotate(context.Background(), "github", a)
	if err != nil || got != c || ref.calls.Load() != 2 {
		t.Fatalf("holding A after A→B→C: %v %v (%d calls)", got, err, ref.calls.Load())
	}
}

// TestNonRotatingProvider: a provider that keeps the refresh token (the
// broker hands back the same one). The grace cache must not answer a 401
// on the fresh access token with that same token again.
func TestNonRotatingProvider(t *testing.T) {
	ref := newFakeRefresher()
	n := 0
	ref.hook = func(_, rt string) (api.Pair, error) {
		n++
		return api.Pair{Access: secret.Secret(fmt.Sprintf("at-%d", n)), Refresh: ""}, nil // no new refresh token
	}
	r := New(ref, Options{})
	p0 := api.Pair{Access: "at-0", Refresh: "keep"}
	p1, err := r.Rotate(context.Background(), "hubspot", p0)
	if err != nil || p1.Access != "at-1" || p1.Refresh != "keep" {
		t.Fatalf("%v %v", p1, err)
	}
	// An op with the old access token gets p1 from the grace cache.
	if got, err := r.Rotate(context.Background(), "hubspot", p0); err != nil || got != p1 || ref.calls.Load() != 1 {
		t.Fatalf("old pair: %v %v", got, err)
	}
	// A surprise 401 on p1 itself refreshes again rather than looping on p1.
	if got, err := r.Rotate(context.Background(), "hubspot", p1); err != nil || got.Access != "at-2" {
		t.Fatalf("401 on the fresh pair: %v %v", got, err)
	}
}

func TestRefreshErrors(t *testing.T) {
	tests := []struct {
		name      string
		ref       func() *fakeRefresher
		opts      Options
		ctx       func() (context.Context, context.CancelFunc)
		p         api.Pair
		reconnect bool
		retryable bool
		is        error
	}{
		{name: "invalid_grant is reconnect", ref: func() *fakeRefresher { return newFakeRefresher() },
			p: api.Pair{Access: "a", Refresh: "dead"}, reconnect: true},
		{name: "refresher timeout is retryable", ref: func() *fakeRefresher {
			f := newFakeRefresher()
			f.block = func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
			return f
		}, opts: Options{Timeout: 50 * time.Millisecond}, p: api.Pair{Access: "a", Refresh: "r"}, retryable: true},
		{name: "caller gives up: retryable", ref: func() *fakeRefresher {
			f := newFakeRefresher("r")
			f.delay = 100 * time.Millisecond
			return f
		}, ctx: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 30*time.Millisecond)
		},
			p: api.Pair{Access: "a", Refresh: "r"}, retryable: true},
		{name: "5xx is retryable", ref: func() *fakeRefresher {
			f := newFakeRefresher()
			f.fail = &api.RefreshError{Kind: api.RefreshRetryable, Code: "provider_unavailable", Status: 502}
			return f
		}, p: api.Pair{Access: "a", Refresh: "r"}, retryable: true},
		{name: "an unclassified error is retryable", ref: func() *fakeRefresher {
			f := newFakeRefresher()
			f.fail = errors.New("connection reset")
			return f
		}, p: api.Pair{Access: "a", Refresh: "r"}, retryable: true},
		{name: "misconfiguration is neither", ref: func() *fakeRefresher {
			f := newFakeRefresher()
			f.fail = &api.RefreshError{Kind: api.RefreshFailed, Code: "unauthorized", Status: 401}
			return f
		}, p: api.Pair{Access: "a", Refresh: "r"}},
		{name: "no refresh token", ref: func() *fakeRefresher { return newFakeRefresher() },
			p: api.Pair{Access: "a"}, is: ErrNoRefreshToken},
		{name: "empty answer", ref: func() *fakeRefresher {
			f := newFakeRefresher()
			f.hook = func(string, string) (api.Pair, error) { return api.Pair{}, nil }
			return f
		}, p: api.Pair{Access: "a", Refresh: "r"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := tt.ref()
			r := New(ref, tt.opts)
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			_, err := r.Rotate(ctx, "github", tt.p)
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, api.ErrReconnectRequired) != tt.reconnect || errors.Is(err, api.ErrRetryable) != tt.retryable {
				t.Fatalf("%v: reconnect=%v retryable=%v", err, errors.Is(err, api.ErrReconnectRequired), errors.Is(err, api.ErrRetryable))
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("%v, want %v", err, tt.is)
			}
		})
	}
}

// TestDetachedRefreshLands: the caller gives up, the refresh completes
// anyway, and the next caller gets the fresh pair without a second
// refresh (the single-use token is not burned twice).
func TestDetachedRefreshLands(t *testing.T) {
	inner := newFakeRefresher("r")
	release := make(chan struct{})
	blocking := &blockingRefresher{inner: inner, release: release}
	r := New(blocking, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	p := api.Pair{Access: "a", Refresh: "r"}
	if _, err := r.Rotate(ctx, "github", p); !errors.Is(err, api.ErrRetryable) {
		t.Fatalf("the impatient caller: %v", err)
	}
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if fresh, ok, _ := r.Superseded(context.Background(), "github", p); ok {
			got, err := r.Rotate(context.Background(), "github", p)
			if err != nil || got != fresh || inner.calls.Load() != 1 {
				t.Fatalf("%v %v (%d calls)", got, err, inner.calls.Load())
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the detached refresh never landed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type blockingRefresher struct {
	inner   api.Refresher
	release chan struct{}
}

func (b *blockingRefresher) Refresh(ctx context.Context, service string, rt secret.Secret) (api.Pair, error) {
	select {
	case <-b.release:
	case <-ctx.Done():
		return api.Pair{}, ctx.Err()
	}
	return b.inner.Refresh(ctx, service, rt)
}

func TestGraceCacheBounded(t *testing.T) {
	clk := &testClock{t: time.Now()}
	ref := newFakeRefresher()
	ref.hook = func(_, rt string) (api.Pair, error) {
		return api.Pair{Access: secret.Secret("a-" + rt), Refresh: secret.Secret("n-" + rt)}, nil
	}
	r := New(ref, Options{MaxCached: 10, Now: clk.Now})
	mem := r.store.(*state.Memory)
	for i := range 25 {
		clk.Advance(time.Millisecond)
		if _, err := r.Rotate(context.Background(), "github", api.Pair{Access: "x", Refresh: secret.Secret(fmt.Sprint("r", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if n := mem.GraceLen(); n > 10 {
		t.Fatalf("%d entries, bound 10", n)
	}
	if _, ok, _ := r.Superseded(context.Background(), "github", api.Pair{Access: "x", Refresh: "r24"}); !ok {
		t.Fatal("the newest entry was evicted")
	}
}

func TestNothingSecretLoggedOrPrinted(t *testing.T) {
	var buf bytes.Buffer
	log := zerolog.New(&buf)
	ref := newFakeRefresher("rt-secret-0")
	r := New(ref, Options{Logger: &log})
	p := api.Pair{Access: "at-secret-0", Refresh: "rt-secret-0", ExpiresAt: time.Now().Add(-time.Hour)}
	fresh, _, err := r.Before(context.Background(), "github", p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(ref, Options{Logger: &log}).Rotate(context.Background(), "github", p) // dead: logged as a failure
	if !errors.Is(err, api.ErrReconnectRequired) {
		t.Fatal(err)
	}
	out := buf.String() + fmt.Sprint(p, fresh) + fmt.Sprintf("%+v %#v %s", p, fresh, err)
	if !bytes.Contains(buf.Bytes(), []byte("token refresh")) {
		t.Fatalf("no log line: %s", out)
	}
	for _, s := range []string{"at-secret-0", "rt-secret-0", string(fresh.Access), string(fresh.Refresh)} {
		if bytes.Contains([]byte(out), []byte(s)) {
			t.Errorf("%q leaked: %s", s, out)
		}
	}
}

// TestUnknownExpiry: a pair without an expiry is used as is before the
// call (no blind refresh) and refreshed once after a surprise 401.
func TestUnknownExpiry(t *testing.T) {
	ref := newFakeRefresher("rt-0")
	r := New(ref, Options{})
	p := api.Pair{Access: "at-0", Refresh: "rt-0"} // ExpiresAt zero: unknown
	tests := []struct {
		name      string
		run       func() (api.Pair, bool, error)
		wantCalls int64
		rotated   bool
	}{
		{name: "before the call: used as is", run: func() (api.Pair, bool, error) { return r.Before(context.Background(), "stripe", p) }},
		{name: "after a 401: refreshed", run: func() (api.Pair, bool, error) {
			got, err := r.Rotate(context.Background(), "stripe", p)
			return got, true, err
		}, wantCalls: 1, rotated: true},
		{name: "the next op with the old pair gets the fresh one", run: func() (api.Pair, bool, error) { return r.Before(context.Background(), "stripe", p) },
			wantCalls: 1, rotated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rotated, err := tt.run()
			if err != nil || rotated != tt.rotated || ref.calls.Load() != tt.wantCalls {
				t.Fatalf("%v rotated=%v err=%v calls=%d", got, rotated, err, ref.calls.Load())
			}
			if rotated && got.Access != "at-1" {
				t.Fatalf("got %v", got)
			}
		})
	}
}

func TestExpiryFormat(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want time.Time
		ok   bool
	}{
		{name: "unknown", in: "", ok: true},
		{name: "utc", in: "2026-05-01T20:00:00Z", want: time.Date(2026, 5, 1, 20, 0, 0, 0, time.UTC), ok: true},
		{name: "offset", in: "2026-05-01T22:00:00+02:00", want: time.Date(2026, 5, 1, 20, 0, 0, 0, time.UTC), ok: true},
		{name: "garbage", in: "tomorrow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseExpiry(tt.in)
			if (err == nil) != tt.ok || !got.Equal(tt.want) {
				t.Fatalf("%v %v", got, err)
			}
			if tt.ok && tt.in != "" && FormatExpiry(got) != "2026-05-01T20:00:00Z" {
				t.Fatalf("format %q", FormatExpiry(got))
			}
		})
	}
	if FormatExpiry(time.Time{}) != "" {
		t.Fatal("zero time must format as unknown")
	}
}
