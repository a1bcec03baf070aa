package state

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"golang.org/x/crypto/chacha20poly1305"
)

// Defaults of RedisOptions.
const (
	// DefaultRedisPrefix starts every key the sidecar writes.
	DefaultRedisPrefix = "pinned:"
	// DefaultRedisTimeout bounds one store operation (a command or a
	// script), connecting included; past it the op fails closed.
	DefaultRedisTimeout = 500 * time.Millisecond
	// DefaultRedisPoolSize is the connection pool's size.
	DefaultRedisPoolSize = 64
)

// StateKeySize is the size of the key grace entries are sealed with.
const StateKeySize = chacha20poly1305.KeySize

// RedisOptions configure NewRedis.
type RedisOptions struct {
	// URL is redis://[user@]host:port[/db], rediss://... (TLS) or
	// unix:///path/to/socket[?db=N]. It must not carry a password: pass
	// Password (read from a file or the environment).
	URL string
	// Password authenticates (the ACL user's, or requirepass).
	Password string
	// RootCAs, when set, are the CAs a rediss:// server's certificate must
	// chain to (default: the system's).
	RootCAs *x509.CertPool
	// StateKey seals grace entries (XChaCha20-Poly1305); every replica of
	// a bot MUST hold the same one. Required, StateKeySize bytes.
	StateKey []byte
	// Prefix starts every key; default DefaultRedisPrefix. Replicas of one
	// bot share it; different bots on one Redis use different ones.
	Prefix string
	// Timeout bounds one operation; default DefaultRedisTimeout.
	Timeout time.Duration
	// PoolSize is the number of connections; default DefaultRedisPoolSize.
	PoolSize int
}

// Redis is the Store of several replicas: one Redis (or a Sentinel-managed
// primary behind one address) that every replica of a bot uses.
//
// Keys (P is the prefix, h a SHA-256 in hex):
//
//	P n:h(nonce)        a replay record: a random owner token, PXAT the grant's expiry + skew
//	P r:{k}:lock        a refresh lock: the holder's random token, PX the lock TTL
//	P r:{k}:fence       the fence counter of credential k, PX FenceLife
//	P r:{k}:grace       hash {f: fence, v: sealed pair}, PX the grace TTL
//	P v:h(key)          a short-lived value (values.go): sealed, PX its TTL
//
// where k is the caller's credential key (rotate: a hash of the service
// and refresh token). The commands used are SET, GET, HGET, EVALSHA and
// EVAL (running GET, SET, DEL, INCR, PEXPIRE, HGET and HSET) and PING.
type Redis struct {
	c       *redis.Client
	aead    cipher.AEAD
	prefix  string
	timeout time.Duration
	// cleanups are the background deletes of records whose SET timed out
	// (Close waits for them).
	cleanups sync.WaitGroup
	closed   atomic.Bool
	// abandoned holds, by record key, the owner token of a SET that timed
	// out (the op was refused, never run) until its clean-up is done: a
	// retry of the grant on this replica takes such a record over.
	abandoned sync.Map
}

// Scripts: each is atomic on the server.
var (
	// compare-and-delete: KEYS[1] is deleted only when it holds ARGV[1].
	delIfOwner = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
	// take the lock KEYS[1] with token ARGV[1] for ARGV[2] ms; on success
	// bump the fence KEYS[2] (kept ARGV[3] ms) and return it, else 0.
	takeLock = redis.NewScript(`if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local f = redis.call('INCR', KEYS[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return f
end
return 0`)
	// take over KEYS[1] when it holds ARGV[1] (an abandoned record of
	// ours): set it to ARGV[2], expiring at ARGV[3] (ms); 1 if taken.
	takeOver = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PXAT', ARGV[3])
  return 1
end
return 0`)
	// store the grace entry KEYS[1] = {f: ARGV[1], v: ARGV[2]} for ARGV[3]
	// ms unless the stored fence is at or above ARGV[1]; 1 if stored.
	putGrace = redis.NewScript(`local cur = redis.call('HGET', KEYS[1], 'f')
if cur and tonumber(cur) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'f', ARGV[1], 'v', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`)
)

// quietClient silences go-redis's own (process-wide) logger, which would
// print pool errors on stderr beside the sidecar's JSON log: every failure
// is returned to the caller, which logs it.
var quietClient sync.Once

type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}

// NewRedis connects to the Redis at o.URL. It does not wait for Redis to
// answer (a replica starts while Redis is away and is not ready until it
// answers); call Ping for that.
func NewRedis(o RedisOptions) (*Redis, error) {
	if len(o.StateKey) != StateKeySize {
		return nil, fmt.Errorf("state: the state key must be %d bytes, not %d", StateKeySize, len(o.StateKey))
	}
	opt, err := ParseRedisURL(o.URL)
	if err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultRedisTimeout
	}
	if o.PoolSize <= 0 {
		o.PoolSize = DefaultRedisPoolSize
	}
	if o.Prefix == "" {
		o.Prefix = DefaultRedisPrefix
	}
	opt.Password = o.Password
	if opt.TLSConfig != nil && o.RootCAs != nil {
		opt.TLSConfig.RootCAs = o.RootCAs
	}
	// Every bound is the op's: no retries (a retried SET NX whose first
	// reply was lost would answer "replayed"), no waiting past Timeout.
	opt.Protocol = 2 // RESP2: no HELLO, no push notifications
	opt.DisableIdentity = true
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	opt.MaxRetries = -1
	opt.DialTimeout = o.Timeout
	opt.ReadTimeout = o.Timeout
	opt.WriteTimeout = o.Timeout
	opt.PoolTimeout = o.Timeout
	opt.ContextTimeoutEnabled = true
	opt.PoolSize = o.PoolSize
	opt.MinIdleConns = 0
	quietClient.Do(func() { redis.SetLogger(discardLogger{}) })
	aead, err := chacha20poly1305.NewX(o.StateKey)
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	return &Redis{c: redis.NewClient(opt), aead: aead, prefix: o.Prefix, timeout: o.Timeout}, nil
}

// ParseRedisURL checks a Redis URL and returns its client options:
// redis://, rediss:// (TLS 1.2+) or unix://, with no password in it.
func ParseRedisURL(raw string) (*redis.Options, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, errors.New("state: the Redis URL does not parse; want redis://host:port, rediss://host:port or unix:///path")
	}
	switch u.Scheme {
	case "redis", "rediss", "unix":
	default:
		return nil, fmt.Errorf("state: Redis URL scheme %q: want redis, rediss (TLS) or unix", u.Scheme)
	}
	if _, ok := u.User.Password(); ok {
		return nil, errors.New("state: the Redis URL carries a password; remove it and pass the password from a file or the environment (it would show in ps)")
	}
	opt, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("state: Redis URL: %w", err)
	}
	if opt.TLSConfig != nil {
		opt.TLSConfig.MinVersion = tls.VersionTLS12
	}
	return opt, nil
}

// Kind is "redis".
func (r *Redis) Kind() string { return "redis" }

func (r *Redis) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.timeout)
}

func hashKey(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func (r *Redis) nonceKey(nonce string) string { return r.prefix + "n:" + hashKey(nonce) }
func (r *Redis) credKey(k, what string) string {
	return r.prefix + "r:{" + k + "}:" + what
}

// RecordNonce implements Store: SET P n:h(nonce) <owner> NX PXAT until.
func (r *Redis) RecordNonce(ctx context.Context, nonce string, until, _ time.Time) (api.Nonce, error) {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	n, pxat := r.newNonce(nonce, until)
	return r.recorded(ctx, n, pxat, r.c.Do(ctx, "SET", n.Key, n.Token, "NX", "PXAT", pxat).Err())
}

// RecordNonceBackedOff implements api.RecordChecker: RecordNonce's SET
// and BackedOff's GET in one pipeline, one round trip.
func (r *Redis) RecordNonceBackedOff(ctx context.Context, nonce string, until, now time.Time, backoffKey string) (api.Nonce, time.Time, error) {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	n, pxat := r.newNonce(nonce, until)
	pipe := r.c.Pipeline()
	set := pipe.Do(ctx, "SET", n.Key, n.Token, "NX", "PXAT", pxat)
	get := pipe.Get(ctx, r.backoffKey(backoffKey))
	_, _ = pipe.Exec(ctx) // each command's own error is read below
	n, err := r.recorded(ctx, n, pxat, set.Err())
	if err != nil {
		return api.Nonce{}, time.Time{}, err
	}
	v, gerr := get.Int64()
	switch {
	case gerr == redis.Nil:
		return n, time.Time{}, nil
	case gerr != nil:
		// The nonce is recorded but the back-off is unknown: the caller
		// fails closed, and forgets the record as for any refusal.
		return n, time.Time{}, unavailable("backed_off", gerr)
	}
	if u := time.UnixMilli(v); u.After(now) {
		return n, u, nil
	}
	return n, time.Time{}, nil
}

// newNonce is the record of nonce and its expiry (PXAT in whole
// milliseconds, rounded up: never a millisecond early).
func (r *Redis) newNonce(nonce string, until time.Time) (api.Nonce, int64) {
	n := api.Nonce{Key: r.nonceKey(nonce), Token: randomToken()}
	pxat := until.UnixMilli()
	if until.After(time.UnixMilli(pxat)) {
		pxat++
	}
	return n, pxat
}

// recorded reads the answer err of n's SET NX PXAT pxat.
func (r *Redis) recorded(ctx context.Context, n api.Nonce, pxat int64, err error) (api.Nonce, error) {
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, redis.Nil):
		// Taken. If by a SET of ours that timed out (its op was refused and
		// never ran), the record is this retry's.
		if old, ok := r.abandoned.Load(n.Key); ok {
			took, terr := takeOver.Run(ctx, r.c, []string{n.Key}, old.(string), n.Token, pxat).Int64()
			if terr != nil {
				return api.Nonce{}, unavailable("record", terr)
			}
			if took == 1 {
				r.abandoned.CompareAndDelete(n.Key, old)
				return n, nil
			}
		}
		return api.Nonce{}, api.ErrReplayed
	}
	var reply redis.Error
	if !errors.As(err, &reply) && !r.closed.Load() {
		// No answer in time: the SET may still land. Remember it as
		// abandoned (a retry here takes it over), and delete it again
		// (ours only) once it would have landed, so a retry on another
		// replica is not refused as replayed either. Best effort: a Redis
		// that is down keeps nothing.
		r.abandoned.Store(n.Key, n.Token)
		r.cleanups.Add(1)
		go func() {
			defer r.cleanups.Done()
			time.Sleep(r.timeout)
			ctx, cancel := context.WithTimeout(context.Background(), 2*r.timeout)
			defer cancel()
			_ = delIfOwner.Run(ctx, r.c, []string{n.Key}, n.Token).Err()
			r.abandoned.CompareAndDelete(n.Key, n.Token)
		}()
	}
	return api.Nonce{}, unavailable("record", err)
}

// ForgetNonce implements Store: compare-and-delete on the owner token.
func (r *Redis) ForgetNonce(ctx context.Context, n api.Nonce) error {
	if n.Key == "" {
		return nil
	}
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	return unavailable("forget", delIfOwner.Run(ctx, r.c, []string{n.Key}, n.Token).Err())
}

// TryLock implements Store.
func (r *Redis) TryLock(ctx context.Context, key string, ttl time.Duration) (api.Lock, bool, error) {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	tok := randomToken()
	f, err := takeLock.Run(ctx, r.c, []string{r.credKey(key, "lock"), r.credKey(key, "fence")},
		tok, ttl.Milliseconds(), (ttl + FenceLife).Milliseconds()).Int64()
	if err != nil {
		return api.Lock{}, false, unavailable("lock", err)
	}
	if f == 0 {
		return api.Lock{}, false, nil
	}
	return api.Lock{Key: key, Token: tok, Fence: f}, true, nil
}

// Unlock implements Store.
func (r *Redis) Unlock(ctx context.Context, l api.Lock) error {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	return unavailable("unlock", delIfOwner.Run(ctx, r.c, []string{r.credKey(l.Key, "lock")}, l.Token).Err())
}

// Grace implements Store; an entry that does not open under the state key
// (another key, tampered, moved to another credential) is an error.
func (r *Redis) Grace(ctx context.Context, key string) ([]byte, bool, error) {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	gk := r.credKey(key, "grace")
	sealed, err := r.c.HGet(ctx, gk, "v").Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, unavailable("grace", err)
	}
	ns := r.aead.NonceSize()
	if len(sealed) < ns {
		return nil, false, unavailable("grace", errors.New("a grace entry is too short"))
	}
	v, err := r.aead.Open(nil, sealed[:ns], sealed[ns:], []byte(gk))
	if err != nil {
		return nil, false, unavailable("grace", errors.New("a grace entry does not open with the state key (replicas with different --state-key-file?)"))
	}
	return v, true, nil
}

// PutGrace implements Store: the value is sealed with the state key, the
// entry's Redis key as additional data.
func (r *Redis) PutGrace(ctx context.Context, l api.Lock, value []byte, ttl time.Duration) (bool, error) {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	gk := r.credKey(l.Key, "grace")
	nonce := make([]byte, r.aead.NonceSize(), r.aead.NonceSize()+len(value)+r.aead.Overhead())
	_, _ = rand.Read(nonce)
	sealed := r.aead.Seal(nonce, nonce, value, []byte(gk))
	n, err := putGrace.Run(ctx, r.c, []string{gk}, strconv.FormatInt(l.Fence, 10), sealed, ttl.Milliseconds()).Int64()
	if err != nil {
		return false, unavailable("put_grace", err)
	}
	return n == 1, nil
}

// Ping implements Store.
func (r *Redis) Ping(ctx context.Context) error {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	return unavailable("ping", r.c.Ping(ctx).Err())
}

// EvictionPolicy returns Redis's maxmemory-policy, when the user may read
// it (CONFIG GET): any policy but noeviction can evict a replay record
// (every key has a TTL) and so let a grant run twice.
func (r *Redis) EvictionPolicy(ctx context.Context) (string, error) {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	m, err := r.c.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		return "", err
	}
	return m["maxmemory-policy"], nil
}

// Close implements Store: it waits for the background clean-ups (each
// bounded by twice Timeout after Timeout), then closes the connections.
func (r *Redis) Close() error {
	r.closed.Store(true)
	r.cleanups.Wait()
	return r.c.Close()
}
