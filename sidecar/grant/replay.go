package grant

import (
	"container/heap"
	"crypto/sha256"
	"sync"
	"time"
)

// DefaultReplayCacheSize is the default bound on the nonces a ReplayCache
// holds at once (about 100 bytes each: some 10 MB when full).
const DefaultReplayCacheSize = 100000

// Errors of ReplayCache.Record.
const (
	// ErrReplayed: the nonce was already recorded and has not expired.
	ErrReplayed = constError("grant: nonce already used")
	// ErrCacheFull: the cache holds its maximum of live nonces. The caller
	// MUST refuse the grant (fail closed) rather than run it unrecorded;
	// nonces leave the cache as their grants expire.
	ErrCacheFull = constError("grant: replay cache full")
)

// ReplayCache remembers the nonces of grants already used, in memory,
// each until its grant's expiry plus ClockSkew — after that the grant is
// refused as expired anyway, so the nonce is forgotten. It is bounded in
// size: when it holds its maximum of live nonces it refuses new ones
// (ErrCacheFull) instead of evicting one, because an evicted nonce could
// be replayed. It is safe for concurrent use.
//
// Nonces are kept as their SHA-256, so every entry has the same size
// whatever the grant carried.
type ReplayCache struct {
	mu    sync.Mutex
	max   int
	byKey map[[32]byte]*replayEntry
	order replayHeap // by expiry, soonest first
}

type replayEntry struct {
	key   [32]byte
	until time.Time
	index int // in order
}

// NewReplayCache returns a cache holding at most max live nonces; max <= 0
// means DefaultReplayCacheSize.
func NewReplayCache(max int) *ReplayCache {
	if max <= 0 {
		max = DefaultReplayCacheSize
	}
	return &ReplayCache{max: max, byKey: map[[32]byte]*replayEntry{}}
}

// Record remembers nonce until the given time (a grant's ExpiresAt plus
// ClockSkew). It returns ErrReplayed when the nonce is already remembered
// and ErrCacheFull when the cache holds its maximum of live nonces; in
// both cases nothing changes. now is the current time: entries whose time
// has passed are forgotten first.
func (c *ReplayCache) Record(nonce string, until, now time.Time) error {
	key := sha256.Sum256([]byte(nonce))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expire(now)
	if _, ok := c.byKey[key]; ok {
		return ErrReplayed
	}
	if len(c.byKey) >= c.max {
		return ErrCacheFull
	}
	e := &replayEntry{key: key, until: until}
	c.byKey[key] = e
	heap.Push(&c.order, e)
	return nil
}

// Forget removes a nonce recorded by Record, so its grant may be used
// again. The sidecar calls it only when an op failed before anything left
// the sandbox (bad args), so the bot can correct the args and retry.
func (c *ReplayCache) Forget(nonce string) {
	key := sha256.Sum256([]byte(nonce))
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		heap.Remove(&c.order, e.index)
		delete(c.byKey, key)
	}
}

// Len returns the number of nonces held (expired ones included until the
// next Record).
func (c *ReplayCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byKey)
}

// Max returns the cache's bound.
func (c *ReplayCache) Max() int { return c.max }

// expire forgets every entry whose time is before now. c.mu is held.
func (c *ReplayCache) expire(now time.Time) {
	for len(c.order) > 0 && c.order[0].until.Before(now) {
		e := heap.Pop(&c.order).(*replayEntry)
		delete(c.byKey, e.key)
	}
}

// replayHeap is a min-heap of entries by until (container/heap).
type replayHeap []*replayEntry

func (h replayHeap) Len() int           { return len(h) }
func (h replayHeap) Less(i, j int) bool { return h[i].until.Before(h[j].until) }
func (h replayHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *replayHeap) Push(x any) {
	e := x.(*replayEntry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *replayHeap) Pop() any {
	old := *h
	n := len(old)
	e := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return e
}
