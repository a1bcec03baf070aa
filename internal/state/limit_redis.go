package state

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/elevenmessenger/pinned/sidecar/api"
)

var (
	// GCRA in one round trip, on the server's clock (TIME), so replicas
	// with skewed clocks share one bucket. KEYS[1] holds the theoretical
	// arrival time in µs; ARGV[1] is the emission interval and ARGV[2]
	// the burst times it, both µs. Returns {1, 0} when allowed, else {0,
	// µs to wait}.
	takeGCRA = redis.NewScript(`local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local nxt = tat + tonumber(ARGV[1])
local allow = nxt - tonumber(ARGV[2])
if now < allow then return {0, allow - now} end
redis.call('SET', KEYS[1], string.format('%.0f', nxt), 'PX', math.ceil((nxt - now) / 1000) + 1)
return {1, 0}`)
	// set KEYS[1] to ARGV[1] (a deadline in ms) expiring then, unless it
	// holds a later one.
	backOff = redis.NewScript(`local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if cur >= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[1])
return 1`)
)

// spendBudget: KEYS[1] is a hash {o: ops, b: bytes}; ARGV[1], ARGV[2]
// the ops and bytes to add, ARGV[3], ARGV[4] the caps (0: none), ARGV[5]
// how long to keep it (ms; a longer expiry already set stays). Returns 1
// when added, 0 when a cap refused it.
var spendBudget = redis.NewScript(`local o = tonumber(redis.call('HGET', KEYS[1], 'o') or '0')
local b = tonumber(redis.call('HGET', KEYS[1], 'b') or '0')
local co, cb = tonumber(ARGV[3]), tonumber(ARGV[4])
if (co > 0 and o + tonumber(ARGV[1]) > co) or (cb > 0 and b >= cb) then return 0 end
redis.call('HINCRBY', KEYS[1], 'o', ARGV[1])
redis.call('HINCRBY', KEYS[1], 'b', ARGV[2])
local keep = tonumber(ARGV[5])
if redis.call('PTTL', KEYS[1]) < keep then redis.call('PEXPIRE', KEYS[1], keep) end
return 1`)

func (r *Redis) budgetKey(key string) string { return r.prefix + "c:" + hashKey(key) }

// Spend adds to a budget every replica shares (api.Limiter).
func (r *Redis) Spend(ctx context.Context, key string, ops, bytes int64, c api.Cap, expires time.Time) (bool, error) {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	keep := max(time.Until(expires).Milliseconds(), 1)
	n, err := spendBudget.Run(ctx, r.c, []string{r.budgetKey(key)}, ops, bytes, c.Ops, c.Bytes, keep).Int()
	if err != nil {
		return false, unavailable("spend", err)
	}
	return n == 1, nil
}

func (r *Redis) limitKey(key string) string   { return r.prefix + "l:" + hashKey(key) }
func (r *Redis) backoffKey(key string) string { return r.prefix + "b:" + hashKey(key) }

// Take takes one op from key's bucket, shared by every replica on this
// Redis (api.Limiter).
func (r *Redis) Take(ctx context.Context, key string, rate api.Rate, _ time.Time) (bool, time.Duration, error) {
	if rate.PerSecond <= 0 {
		return true, 0, nil
	}
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	interval := math.Max(1, 1e6/rate.PerSecond)
	burst := float64(max(rate.Burst, 1))
	res, err := takeGCRA.Run(ctx, r.c, []string{r.limitKey(key)},
		strconv.FormatFloat(interval, 'f', 0, 64), strconv.FormatFloat(interval*burst, 'f', 0, 64)).Int64Slice()
	if err != nil || len(res) != 2 {
		return false, 0, unavailable("take", err)
	}
	if res[0] == 1 {
		return true, 0, nil
	}
	return false, time.Duration(res[1]) * time.Microsecond, nil
}

// BackOff records a credential's back-off for every replica (api.Limiter).
func (r *Redis) BackOff(ctx context.Context, key string, until time.Time) error {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	return unavailable("back_off", backOff.Run(ctx, r.c, []string{r.backoffKey(key)}, strconv.FormatInt(until.UnixMilli(), 10)).Err())
}

// BackedOff returns a credential's back-off (api.Limiter).
func (r *Redis) BackedOff(ctx context.Context, key string, now time.Time) (time.Time, error) {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	v, err := r.c.Get(ctx, r.backoffKey(key)).Int64()
	if err == redis.Nil {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, unavailable("backed_off", err)
	}
	if u := time.UnixMilli(v); u.After(now) {
		return u, nil
	}
	return time.Time{}, nil
}
