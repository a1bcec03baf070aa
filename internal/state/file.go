package state

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// File is the durable single-process Store: replay records, refresh
// fences and grace entries in one bbolt file (an embedded B+tree
// database, each write committed with fsync before it returns), so a
// sidecar restarted inside a grant's TTL still refuses its replay and
// still knows the pair a credential was rotated to. Refresh locks live in
// memory: the file is held by one process (bbolt's flock), and a lock
// outlives no process. Several replicas share Redis instead.
type File struct {
	db       *bbolt.DB
	path     string
	max      int
	maxGrace int
	now      func() time.Time

	mu    sync.Mutex
	locks map[string]memLock
	count int // nonce records in the file, expired ones included

	limits *memLimits // rate limits and back-offs, in memory (limit_memory.go)
}

// Buckets of the file.
var (
	bucketNonces = []byte("nonces") // nonce → until (8 bytes, Unix ns) + owner token
	bucketFences = []byte("fences") // key → fence (8) + last lock (8, Unix ns)
	bucketGrace  = []byte("grace")  // key → fence (8) + until (8, Unix ns) + value
)

// FileOptions tune OpenFile; zero values pick the defaults.
type FileOptions struct {
	// ReplayCacheSize bounds the live nonces held; default
	// grant.DefaultReplayCacheSize. At it, RecordNonce is api.ErrFull.
	ReplayCacheSize int
	// MaxGrace bounds the grace entries; default DefaultMaxGrace.
	MaxGrace int
	// Now is the clock for locks and grace entries; default time.Now.
	Now func() time.Time
	// LockTimeout bounds the wait for another process to release the
	// file; default 2 s, then OpenFile fails with ErrFileBusy.
	LockTimeout time.Duration
}

// ErrFileBusy: another process holds the state file (a second sidecar
// with the same key on this machine: replicas must share Redis).
var ErrFileBusy = errors.New("state: another process holds the state file")

// errCorrupt is the cause of a failure on a state file whose pages bbolt
// finds broken (its page checks panic; update and view make that an
// error).
var errCorrupt = errors.New("the state file is corrupt")

// update runs fn in a read-write transaction of db, and view in a
// read-only one: a panic of bbolt's page checks on a corrupt file (bbolt
// rolls the transaction back first) is errCorrupt, never a crash of the
// process, so callers fail closed on it.
func update(db *bbolt.DB, fn func(*bbolt.Tx) error) (err error) {
	defer recoverCorrupt(&err)
	return db.Update(fn)
}

func view(db *bbolt.DB, fn func(*bbolt.Tx) error) (err error) {
	defer recoverCorrupt(&err)
	return db.View(fn)
}

func recoverCorrupt(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: %v", errCorrupt, r)
	}
}

// OpenFile opens (creating it, 0600, in a 0700 directory) the state file
// at path. It refuses a symbolic link, a file or directory others may
// write, and a file another process holds (ErrFileBusy).
func OpenFile(path string, o FileOptions) (*File, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state: the state directory %s cannot be created: %w", dir, err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("state: the state directory %s: %w", dir, err)
	} else if fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("state: the state directory %s is writable by others (mode %04o); chmod 700 it", dir, fi.Mode().Perm())
	}
	if fi, err := os.Lstat(path); err == nil {
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return nil, fmt.Errorf("state: the state file %s is a symbolic link; point --state-dir at the real directory", path)
		case fi.Mode().Perm()&0o077 != 0:
			return nil, fmt.Errorf("state: the state file %s is readable or writable by others (mode %04o); chmod 600 it", path, fi.Mode().Perm())
		}
	}
	timeout := o.LockTimeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: timeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s (another sidecar with this key runs on this machine; replicas share --redis-url)", ErrFileBusy, path)
	}
	if err != nil {
		return nil, fmt.Errorf("state: the state file %s cannot be opened: %w", path, err)
	}
	f := &File{db: db, path: path, max: o.ReplayCacheSize, maxGrace: o.MaxGrace, now: o.Now, locks: map[string]memLock{}, limits: newMemLimits()}
	if f.max <= 0 {
		f.max = grant.DefaultReplayCacheSize
	}
	if f.maxGrace <= 0 {
		f.maxGrace = DefaultMaxGrace
	}
	if f.now == nil {
		f.now = time.Now
	}
	err = update(db, func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketNonces, bucketFences, bucketGrace} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		f.count = tx.Bucket(bucketNonces).Stats().KeyN
		return nil
	})
	if err != nil {
		db.Close()
		if errors.Is(err, errCorrupt) {
			return nil, fmt.Errorf("state: the state file %s is corrupt (%v): move it aside and restart (the grants it recorded may run once more inside their TTL) or restore it", path, err)
		}
		return nil, fmt.Errorf("state: the state file %s cannot be used: %w", path, err)
	}
	return f, nil
}

// Kind is "file".
func (f *File) Kind() string { return "file" }

// Path is the state file's path.
func (f *File) Path() string { return f.path }

// ReplayLen is the number of nonce records held (expired ones until the
// bound is reached), for the sidecar's gauges.
func (f *File) ReplayLen() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.count
}

// ReplayMax is the replay cache's bound.
func (f *File) ReplayMax() int { return f.max }

func putTimes(b []byte, a int64, t time.Time) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(a))
	return binary.BigEndian.AppendUint64(b, uint64(t.UnixNano()))
}

func unixNano(b []byte) time.Time { return time.Unix(0, int64(binary.BigEndian.Uint64(b))) }

// RecordNonce implements Store; the record is on disk when it returns.
func (f *File) RecordNonce(_ context.Context, nonce string, until, now time.Time) (api.Nonce, error) {
	tok := randomToken()
	f.mu.Lock()
	defer f.mu.Unlock()
	var rerr error
	err := update(f.db, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketNonces)
		if v := b.Get([]byte(nonce)); len(v) >= 8 && now.Before(unixNano(v)) {
			rerr = api.ErrReplayed
			return nil
		}
		if b.Get([]byte(nonce)) == nil && f.count >= f.max {
			c := b.Cursor()
			for k, v := c.First(); k != nil; {
				if len(v) < 8 || !now.Before(unixNano(v)) {
					kc := append([]byte(nil), k...)
					if err := c.Delete(); err != nil {
						return err
					}
					f.count--
					k, v = c.Seek(kc) // the next key: Delete leaves the cursor unreliable
					continue
				}
				k, v = c.Next()
			}
			if f.count >= f.max {
				rerr = api.ErrFull
				return nil
			}
		}
		if b.Get([]byte(nonce)) == nil {
			f.count++
		}
		v := binary.BigEndian.AppendUint64(nil, uint64(until.UnixNano()))
		return b.Put([]byte(nonce), append(v, tok...))
	})
	if err != nil {
		f.count = f.recount()
		return api.Nonce{}, unavailable("record", err)
	}
	if rerr != nil {
		return api.Nonce{}, rerr
	}
	return api.Nonce{Key: nonce, Token: tok}, nil
}

// recount reads the number of nonce records after a failed write.
func (f *File) recount() int {
	n := f.count
	_ = view(f.db, func(tx *bbolt.Tx) error {
		n = tx.Bucket(bucketNonces).Stats().KeyN
		return nil
	})
	return n
}

// ForgetNonce implements Store: only n's own record is removed.
func (f *File) ForgetNonce(_ context.Context, n api.Nonce) error {
	if n.Key == "" {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	err := update(f.db, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketNonces)
		if v := b.Get([]byte(n.Key)); len(v) >= 8 && string(v[8:]) == n.Token {
			f.count--
			return b.Delete([]byte(n.Key))
		}
		return nil
	})
	return unavailable("forget", err)
}

// TryLock implements Store. The lock is the process's; its fence is
// on disk, so it keeps growing across restarts.
func (f *File) TryLock(_ context.Context, key string, ttl time.Duration) (api.Lock, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	if l, ok := f.locks[key]; ok && now.Before(l.until) {
		return api.Lock{}, false, nil
	}
	var fence int64
	err := update(f.db, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketFences)
		if v := b.Get([]byte(key)); len(v) == 16 {
			fence = int64(binary.BigEndian.Uint64(v))
		}
		fence++
		return b.Put([]byte(key), putTimes(nil, fence, now))
	})
	if err != nil {
		return api.Lock{}, false, unavailable("lock", err)
	}
	tok := randomToken()
	f.locks[key] = memLock{token: tok, until: now.Add(ttl)}
	return api.Lock{Key: key, Token: tok, Fence: fence}, true, nil
}

// Unlock implements Store.
func (f *File) Unlock(_ context.Context, l api.Lock) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur, ok := f.locks[l.Key]; ok && cur.token == l.Token {
		delete(f.locks, l.Key)
	}
	return nil
}

// Grace implements Store.
func (f *File) Grace(_ context.Context, key string) ([]byte, bool, error) {
	var out []byte
	err := view(f.db, func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketGrace).Get([]byte(key))
		if len(v) >= 16 && f.now().Before(unixNano(v[8:16])) {
			out = append([]byte(nil), v[16:]...)
		}
		return nil
	})
	if err != nil {
		return nil, false, unavailable("grace", err)
	}
	return out, out != nil, nil
}

// PutGrace implements Store; the entry is on disk when it returns.
func (f *File) PutGrace(_ context.Context, l api.Lock, value []byte, ttl time.Duration) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	stored := false
	err := update(f.db, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketGrace)
		if cur := b.Get([]byte(l.Key)); len(cur) >= 16 && now.Before(unixNano(cur[8:16])) && int64(binary.BigEndian.Uint64(cur)) >= l.Fence {
			return nil
		}
		if b.Get([]byte(l.Key)) == nil && b.Stats().KeyN >= f.maxGrace {
			// Expired entries go; at the bound still, the one closest
			// to expiry.
			var oldestK []byte
			var oldest time.Time
			c := b.Cursor()
			for k, v := c.First(); k != nil; {
				if len(v) < 16 || !now.Before(unixNano(v[8:16])) {
					kc := append([]byte(nil), k...)
					if err := c.Delete(); err != nil {
						return err
					}
					k, v = c.Seek(kc)
					continue
				}
				if oldestK == nil || unixNano(v[8:16]).Before(oldest) {
					oldestK, oldest = append([]byte(nil), k...), unixNano(v[8:16])
				}
				k, v = c.Next()
			}
			if b.Stats().KeyN >= f.maxGrace && oldestK != nil {
				if err := b.Delete(oldestK); err != nil {
					return err
				}
			}
		}
		stored = true
		if err := b.Put([]byte(l.Key), append(putTimes(nil, l.Fence, now.Add(ttl)), value...)); err != nil {
			return err
		}
		// Fences of credentials long gone are dropped, as Redis expires
		// them.
		fb := tx.Bucket(bucketFences)
		c := fb.Cursor()
		for k, v := c.First(); k != nil; {
			if len(v) == 16 && !now.Before(unixNano(v[8:]).Add(FenceLife)) {
				kc := append([]byte(nil), k...)
				if err := c.Delete(); err != nil {
					return err
				}
				delete(f.locks, string(kc))
				k, v = c.Seek(kc)
				continue
			}
			k, v = c.Next()
		}
		return nil
	})
	if err != nil {
		return false, unavailable("put_grace", err)
	}
	return stored, nil
}

// Ping implements Store: the file answers a read.
func (f *File) Ping(context.Context) error {
	return unavailable("ping", view(f.db, func(*bbolt.Tx) error { return nil }))
}

// Close implements Store: it releases the file.
func (f *File) Close() error { return f.db.Close() }
