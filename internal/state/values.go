package state

import (
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/elevenmessenger/pinned/sidecar/api"
)

// Short-lived values: small records under a key, written once and read or
// taken by any replica — the authorization codes of `pinned mcp`'s OAuth
// server (taken once) and the person's decisions on approval links (read
// by the replica the call comes back to). Memory and Redis hold them;
// Redis seals each value with the state key (XChaCha20-Poly1305, the
// entry's Redis key as additional data), so a value altered or moved in
// Redis does not open.

// DefaultMaxValues bounds the in-memory values (entries).
const DefaultMaxValues = 10000

// memValues is Memory's map of values, expired lazily.
type memValues struct {
	mu sync.Mutex
	m  map[string]memValue
}

type memValue struct {
	value []byte
	until time.Time
}

// PutValue stores value under key for ttl unless a live value is there:
// stored reports which. At DefaultMaxValues live values it is
// api.ErrFull.
func (m *Memory) PutValue(_ context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	v := m.valueMap()
	v.mu.Lock()
	defer v.mu.Unlock()
	now := m.now()
	if cur, ok := v.m[key]; ok && now.Before(cur.until) {
		return false, nil
	}
	if len(v.m) >= DefaultMaxValues {
		for k, e := range v.m {
			if !now.Before(e.until) {
				delete(v.m, k)
			}
		}
		if len(v.m) >= DefaultMaxValues {
			return false, api.ErrFull
		}
	}
	v.m[key] = memValue{value: append([]byte(nil), value...), until: now.Add(ttl)}
	return true, nil
}

// Value returns the live value under key (nil, false when none).
func (m *Memory) Value(_ context.Context, key string) ([]byte, bool, error) {
	v := m.valueMap()
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.m[key]
	if !ok || !m.now().Before(e.until) {
		return nil, false, nil
	}
	return append([]byte(nil), e.value...), true, nil
}

// TakeValue returns the live value under key and deletes it, atomically:
// of two takers, one gets it.
func (m *Memory) TakeValue(_ context.Context, key string) ([]byte, bool, error) {
	v := m.valueMap()
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.m[key]
	delete(v.m, key)
	if !ok || !m.now().Before(e.until) {
		return nil, false, nil
	}
	return e.value, true, nil
}

func (m *Memory) valueMap() *memValues { return &m.values }

// takeValue is GET then DEL of KEYS[1], atomically (GETDEL before Redis
// 6.2).
var takeValue = redis.NewScript(`local v = redis.call('GET', KEYS[1])
if v then redis.call('DEL', KEYS[1]) end
return v`)

func (r *Redis) valueKey(key string) string { return r.prefix + "v:" + hashKey(key) }

// PutValue implements the short-lived values on Redis: SET NX PX of the
// sealed value; stored is false when a live value is there.
func (r *Redis) PutValue(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	vk := r.valueKey(key)
	nonce := make([]byte, r.aead.NonceSize(), r.aead.NonceSize()+len(value)+r.aead.Overhead())
	_, _ = rand.Read(nonce)
	sealed := r.aead.Seal(nonce, nonce, value, []byte(vk))
	err := r.c.Do(ctx, "SET", vk, sealed, "NX", "PX", max(ttl.Milliseconds(), 1)).Err()
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, redis.Nil):
		return false, nil
	}
	return false, unavailable("put_value", err)
}

// Value implements the short-lived values on Redis: GET, opened with the
// state key.
func (r *Redis) Value(ctx context.Context, key string) ([]byte, bool, error) {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	vk := r.valueKey(key)
	sealed, err := r.c.Get(ctx, vk).Bytes()
	return r.openValue("value", vk, sealed, err)
}

// TakeValue implements the short-lived values on Redis: GET and DEL in
// one script, so of two replicas taking one key, one gets the value.
func (r *Redis) TakeValue(ctx context.Context, key string) ([]byte, bool, error) {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	vk := r.valueKey(key)
	res, err := takeValue.Run(ctx, r.c, []string{vk}).Result()
	s, _ := res.(string)
	return r.openValue("take_value", vk, []byte(s), err)
}

// openValue opens a sealed value read from vk (err is the read's).
func (r *Redis) openValue(op, vk string, sealed []byte, err error) ([]byte, bool, error) {
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, unavailable(op, err)
	}
	ns := r.aead.NonceSize()
	if len(sealed) < ns {
		return nil, false, unavailable(op, errors.New("a value is too short"))
	}
	v, err := r.aead.Open(nil, sealed[:ns], sealed[ns:], []byte(vk))
	if err != nil {
		return nil, false, unavailable(op, errors.New("a value does not open with the state key (replicas with different keys?)"))
	}
	return v, true, nil
}
