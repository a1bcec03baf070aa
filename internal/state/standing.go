package state

import (
	"context"
	"encoding/binary"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.etcd.io/bbolt"

	"github.com/elevenmessenger/pinned/sidecar/api"
)

// maxStanding bounds the live standing series an in-process store holds;
// past it, expired ones are swept, and if none expired UseStanding of a
// new series is api.ErrFull (a revocation is always kept).
const maxStanding = 100_000

// standingRec is a standing grant series' record: the scope it was first
// used with, whether it is revoked, and until when it is kept.
type standingRec struct {
	scope   string
	revoked bool
	until   time.Time
}

// use is UseStanding on one record (found: ok), shared by the stores
// that hold records themselves: the error to answer and the record to
// keep (nil: keep nothing new).
func (r standingRec) use(ok bool, scope string, until, now time.Time) (*standingRec, error) {
	if !ok || !now.Before(r.until) {
		return &standingRec{scope: scope, until: until}, nil
	}
	if r.revoked {
		return nil, api.ErrRevoked
	}
	if r.scope != scope {
		return nil, api.ErrScopeChanged
	}
	if until.After(r.until) {
		r.until = until
	}
	return &r, nil
}

// revoke is RevokeStanding on one record.
func (r standingRec) revoke(ok bool, until, now time.Time) standingRec {
	if !ok || !now.Before(r.until) {
		return standingRec{revoked: true, until: until}
	}
	r.revoked = true
	if until.After(r.until) {
		r.until = until
	}
	return r
}

// UseStanding implements api.Standing, in this process.
func (m *Memory) UseStanding(_ context.Context, series, scope string, until, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.standing == nil {
		m.standing = map[string]standingRec{}
	}
	cur, ok := m.standing[series]
	next, err := cur.use(ok, scope, until, now)
	if err != nil {
		return err
	}
	if !ok && len(m.standing) >= maxStanding {
		for k, r := range m.standing {
			if !now.Before(r.until) {
				delete(m.standing, k)
			}
		}
		if len(m.standing) >= maxStanding {
			return api.ErrFull
		}
	}
	m.standing[series] = *next
	return nil
}

// RevokeStanding implements api.Standing, in this process.
func (m *Memory) RevokeStanding(_ context.Context, series string, until, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.standing == nil {
		m.standing = map[string]standingRec{}
	}
	cur, ok := m.standing[series]
	m.standing[series] = cur.revoke(ok, until, now)
	return nil
}

// bucketStanding holds standing series in the file: series → until (8
// bytes, Unix ns) + revoked (1) + scope.
var bucketStanding = []byte("standing")

func decodeStanding(v []byte) (standingRec, bool) {
	if len(v) < 9 {
		return standingRec{}, false
	}
	return standingRec{until: unixNano(v), revoked: v[8] == 1, scope: string(v[9:])}, true
}

func encodeStanding(r standingRec) []byte {
	v := binary.BigEndian.AppendUint64(nil, uint64(r.until.UnixNano()))
	if r.revoked {
		v = append(v, 1)
	} else {
		v = append(v, 0)
	}
	return append(v, r.scope...)
}

// standingTx runs fn on series' record in the file, storing what it
// returns (nil: nothing).
func (f *File) standingTx(series string, fn func(cur standingRec, ok bool) (*standingRec, error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ferr error
	err := update(f.db, func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketStanding)
		if err != nil {
			return err
		}
		cur, ok := decodeStanding(b.Get([]byte(series)))
		next, err := fn(cur, ok)
		if err != nil {
			ferr = err
			return nil
		}
		if next == nil {
			return nil
		}
		if !ok && b.Stats().KeyN >= maxStanding {
			now := f.now()
			c := b.Cursor()
			for k, v := c.First(); k != nil; {
				if r, ok := decodeStanding(v); !ok || !now.Before(r.until) {
					kc := append([]byte(nil), k...)
					if err := c.Delete(); err != nil {
						return err
					}
					k, v = c.Seek(kc)
					continue
				}
				k, v = c.Next()
			}
			if b.Stats().KeyN >= maxStanding && !next.revoked {
				ferr = api.ErrFull
				return nil
			}
		}
		return b.Put([]byte(series), encodeStanding(*next))
	})
	if err != nil {
		return unavailable("standing", err)
	}
	return ferr
}

// UseStanding implements api.Standing; the record is on disk when it
// returns, so a restart keeps a revocation.
func (f *File) UseStanding(_ context.Context, series, scope string, until, now time.Time) error {
	return f.standingTx(series, func(cur standingRec, ok bool) (*standingRec, error) {
		return cur.use(ok, scope, until, now)
	})
}

// RevokeStanding implements api.Standing, on disk when it returns.
func (f *File) RevokeStanding(_ context.Context, series string, until, now time.Time) error {
	return f.standingTx(series, func(cur standingRec, ok bool) (*standingRec, error) {
		r := cur.revoke(ok, until, now)
		return &r, nil
	})
}

var (
	// useStanding: KEYS[1] is a hash {s: scope, r: "1" when revoked};
	// ARGV[1] the scope, ARGV[2] how long to keep it (ms; a longer
	// expiry stays). Returns 0 when admitted, 1 revoked, 2 another scope.
	useStanding = redis.NewScript(`if redis.call('HGET', KEYS[1], 'r') == '1' then return 1 end
local s = redis.call('HGET', KEYS[1], 's')
if s and s ~= ARGV[1] then return 2 end
if not s then redis.call('HSET', KEYS[1], 's', ARGV[1]) end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`)
	// revokeStanding: marks KEYS[1] revoked, kept at least ARGV[1] ms.
	revokeStanding = redis.NewScript(`redis.call('HSET', KEYS[1], 'r', '1')
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 0`)
)

func (r *Redis) standingKey(series string) string { return r.prefix + "s:" + hashKey(series) }

// UseStanding implements api.Standing for every replica on this Redis.
func (r *Redis) UseStanding(ctx context.Context, series, scope string, until, now time.Time) error {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	keep := max(until.Sub(now).Milliseconds(), 1)
	n, err := useStanding.Run(ctx, r.c, []string{r.standingKey(series)}, scope, strconv.FormatInt(keep, 10)).Int()
	switch {
	case err != nil:
		return unavailable("use_standing", err)
	case n == 1:
		return api.ErrRevoked
	case n == 2:
		return api.ErrScopeChanged
	}
	return nil
}

// RevokeStanding implements api.Standing for every replica on this Redis.
func (r *Redis) RevokeStanding(ctx context.Context, series string, until, now time.Time) error {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	keep := max(until.Sub(now).Milliseconds(), 1)
	return unavailable("revoke_standing", revokeStanding.Run(ctx, r.c, []string{r.standingKey(series)}, strconv.FormatInt(keep, 10)).Err())
}

var (
	_ api.Standing = (*Memory)(nil)
	_ api.Standing = (*File)(nil)
	_ api.Standing = (*Redis)(nil)
)
