package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// DefaultMaxGrace bounds the in-memory grace cache (entries).
const DefaultMaxGrace = 10000

// MemoryOptions tune NewMemory; zero values pick the defaults.
type MemoryOptions struct {
	// ReplayCacheSize bounds the live nonces held; default
	// grant.DefaultReplayCacheSize. At it, RecordNonce is api.ErrFull.
	ReplayCacheSize int
	// MaxGrace bounds the grace entries; default DefaultMaxGrace. At it
	// the entry closest to expiry is dropped.
	MaxGrace int
	// Now is the clock for locks and grace entries; default time.Now.
	Now func() time.Time
}

// Memory is the in-process Store: one sidecar's state, lost on restart.
// It never fails with api.ErrUnavailable.
type Memory struct {
	replay   *grant.ReplayCache
	maxGrace int
	now      func() time.Time

	mu     sync.Mutex
	locks  map[string]memLock
	fences map[string]memFence
	grace  map[string]memGrace

	limits *memLimits // rate limits and back-offs (limit_memory.go)

	standing map[string]standingRec // standing grant series (standing.go), under mu

	values memValues // short-lived values (values.go)
}

type memFence struct {
	n    int64
	last time.Time // the last TryLock that took it
}

type memLock struct {
	token string
	until time.Time
}

type memGrace struct {
	fence int64
	value []byte
	until time.Time
}

// NewMemory returns an in-memory store.
func NewMemory(o MemoryOptions) *Memory {
	m := &Memory{
		replay:   grant.NewReplayCache(o.ReplayCacheSize),
		maxGrace: o.MaxGrace,
		now:      o.Now,
		locks:    map[string]memLock{},
		fences:   map[string]memFence{},
		grace:    map[string]memGrace{},
		limits:   newMemLimits(),
		values:   memValues{m: map[string]memValue{}},
	}
	if m.maxGrace <= 0 {
		m.maxGrace = DefaultMaxGrace
	}
	if m.now == nil {
		m.now = time.Now
	}
	return m
}

// Kind is "memory".
func (m *Memory) Kind() string { return "memory" }

// ReplayLen is the number of nonces held (expired ones until the next
// record) and ReplayMax the bound, for the sidecar's gauges.
func (m *Memory) ReplayLen() int { return m.replay.Len() }

// ReplayMax is the replay cache's bound.
func (m *Memory) ReplayMax() int { return m.replay.Max() }

// GraceLen is the number of grace entries held (expired ones included
// until the next PutGrace at the bound).
func (m *Memory) GraceLen() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.grace)
}

// RecordNonce implements Store.
func (m *Memory) RecordNonce(_ context.Context, nonce string, until, now time.Time) (api.Nonce, error) {
	switch err := m.replay.Record(nonce, until, now); {
	case err == nil:
		return api.Nonce{Key: nonce}, nil
	case errors.Is(err, grant.ErrReplayed):
		return api.Nonce{}, api.ErrReplayed
	default:
		return api.Nonce{}, api.ErrFull
	}
}

// ForgetNonce implements Store. In one process a nonce recorded and not
// expired can only be the caller's own record.
func (m *Memory) ForgetNonce(_ context.Context, n api.Nonce) error {
	if n.Key != "" {
		m.replay.Forget(n.Key)
	}
	return nil
}

// TryLock implements Store.
func (m *Memory) TryLock(_ context.Context, key string, ttl time.Duration) (api.Lock, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if l, ok := m.locks[key]; ok && now.Before(l.until) {
		return api.Lock{}, false, nil
	}
	tok := randomToken()
	m.locks[key] = memLock{token: tok, until: now.Add(ttl)}
	f := m.fences[key]
	f.n++
	f.last = now
	m.fences[key] = f
	return api.Lock{Key: key, Token: tok, Fence: f.n}, true, nil
}

// Unlock implements Store.
func (m *Memory) Unlock(_ context.Context, l api.Lock) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.locks[l.Key]; ok && cur.token == l.Token {
		delete(m.locks, l.Key)
	}
	return nil
}

// Grace implements Store.
func (m *Memory) Grace(_ context.Context, key string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.grace[key]
	if !ok || !m.now().Before(e.until) {
		return nil, false, nil
	}
	return e.value, true, nil
}

// PutGrace implements Store.
func (m *Memory) PutGrace(_ context.Context, l api.Lock, value []byte, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if cur, ok := m.grace[l.Key]; ok && now.Before(cur.until) && cur.fence >= l.Fence {
		return false, nil
	}
	if _, ok := m.grace[l.Key]; !ok && len(m.grace) >= m.maxGrace {
		oldestK, oldest := "", time.Time{}
		for k, e := range m.grace {
			if !now.Before(e.until) {
				delete(m.grace, k)
			} else if oldestK == "" || e.until.Before(oldest) {
				oldestK, oldest = k, e.until
			}
		}
		if len(m.grace) >= m.maxGrace {
			delete(m.grace, oldestK)
		}
	}
	m.grace[l.Key] = memGrace{fence: l.Fence, value: append([]byte(nil), value...), until: now.Add(ttl)}
	// Fences (and stale locks) of credentials long gone are dropped, as
	// Redis expires them.
	for k, f := range m.fences {
		if !now.Before(f.last.Add(FenceLife)) {
			delete(m.fences, k)
			delete(m.locks, k)
		}
	}
	return true, nil
}

// Ping implements Store: always nil.
func (m *Memory) Ping(context.Context) error { return nil }

// Close implements Store: nothing to release.
func (m *Memory) Close() error { return nil }

// randomToken is 16 random bytes, hex.
func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}
