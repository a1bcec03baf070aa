package audit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"
)

// Defaults of Options.
const (
	// DefaultMaxFileBytes is the size past which the log moves to a new
	// file: 64 MiB.
	DefaultMaxFileBytes = 64 << 20
	// DefaultSealEvery seals the chain after this many records.
	DefaultSealEvery = 1000
	// DefaultSealInterval seals the chain this often when records were
	// written since the last seal.
	DefaultSealInterval = 10 * time.Second
)

// Fsync policies of Options.Fsync.
const (
	// FsyncSeal syncs the file at every seal, rotation and Close: a crash
	// of the machine (not of the process) may lose the records written
	// since the last seal. The default.
	FsyncSeal = "seal"
	// FsyncAlways syncs after every record.
	FsyncAlways = "always"
)

// Options configures Open. Replica and Key are required.
type Options struct {
	// Replica names this replica's chain: 1 to 64 of A-Z a-z 0-9 . _ -,
	// not starting with a dot. Each replica writes its own directory.
	Replica string
	// Key seals the chain.
	Key ed25519.PrivateKey
	// MaxFileBytes: a record that would take a file past it goes to the
	// next file (the chain carries on). Default DefaultMaxFileBytes.
	MaxFileBytes int64
	// SealEvery and SealInterval: when to seal (defaults above). The log
	// also seals at each rotation and at Close.
	SealEvery    int
	SealInterval time.Duration
	// Fsync is FsyncSeal (default) or FsyncAlways.
	Fsync string
	// Note goes in the chain's open record (the program's version).
	Note string
	// Now is the clock; default time.Now.
	Now func() time.Time
}

var replicaRe = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$`)

// CheckReplica returns an error when name cannot name a replica's chain.
func CheckReplica(name string) error {
	if !replicaRe.MatchString(name) {
		return fmt.Errorf("audit: replica name %q: use 1 to 64 of A-Z a-z 0-9 . _ - (not starting with a dot)", name)
	}
	return nil
}

// fileRe is a chain file's name; the number orders the files.
var fileRe = regexp.MustCompile(`^audit-([0-9]{6,})\.jsonl$`)

func fileName(n int) string { return fmt.Sprintf("audit-%06d.jsonl", n) }

// Log is one replica's open chain. It is safe for concurrent use.
type Log struct {
	opt  Options
	dir  string
	pub  string // base64 of the public key
	stop chan struct{}
	done chan struct{}

	mu        sync.Mutex
	f         *os.File
	lock      *os.File // held while the log is open (lockDir)
	fileN     int
	size      int64
	seq       uint64
	head      string // digest of the last line
	sinceSeal int
	err       error // sticky: once a write failed, nothing more is written
	closed    bool
}

// Open opens (or starts) the chain of opt.Replica under dir, in
// dir/<replica>/audit-NNNNNN.jsonl, and appends an open record. An
// existing chain is continued from its last record; a partial last line
// (a crash mid-write) is cut, and the open record says how many bytes.
// A last line that is not a record is an error: verify the log and move
// it aside.
func Open(dir string, opt Options) (*Log, error) {
	if err := CheckReplica(opt.Replica); err != nil {
		return nil, err
	}
	if len(opt.Key) != ed25519.PrivateKeySize {
		return nil, errors.New("audit: a sealing key (Ed25519) is required")
	}
	if opt.MaxFileBytes <= 0 {
		opt.MaxFileBytes = DefaultMaxFileBytes
	}
	if opt.SealEvery <= 0 {
		opt.SealEvery = DefaultSealEvery
	}
	if opt.SealInterval <= 0 {
		opt.SealInterval = DefaultSealInterval
	}
	switch opt.Fsync {
	case "":
		opt.Fsync = FsyncSeal
	case FsyncSeal, FsyncAlways:
	default:
		return nil, fmt.Errorf("audit: fsync policy %q: use %s or %s", opt.Fsync, FsyncSeal, FsyncAlways)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	l := &Log{opt: opt, dir: filepath.Join(dir, opt.Replica), head: Genesis,
		pub: base64.StdEncoding.EncodeToString(opt.Key.Public().(ed25519.PublicKey))}
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	lock, err := lockDir(l.dir)
	if err != nil {
		return nil, err
	}
	l.lock = lock
	note, err := l.resume()
	if err != nil {
		lock.Close()
		return nil, err
	}
	var parts []string
	for _, p := range []string{opt.Note, note} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	note = strings.Join(parts, "; ")
	if _, err := l.append(&Record{Kind: KindOpen, Note: note}); err != nil {
		l.f.Close()
		lock.Close()
		return nil, err
	}
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go l.sealer()
	return l, nil
}

// Files lists the chain files of dir (one replica's directory), oldest
// first.
func Files(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type nf struct {
		n    int
		name string
	}
	var fs []nf
	for _, e := range ents {
		m := fileRe.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		n, err := strconv.Atoi(m[1])
		if err != nil {
			continue
		}
		fs = append(fs, nf{n, e.Name()})
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].n < fs[j].n })
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = filepath.Join(dir, f.name)
	}
	return out, nil
}

// resume finds the chain's last record and opens the file to append to.
func (l *Log) resume() (note string, err error) {
	files, err := Files(l.dir)
	if err != nil {
		return "", fmt.Errorf("audit: %w", err)
	}
	if len(files) == 0 {
		l.fileN = 1
		return "", l.openFile()
	}
	for i := len(files) - 1; i >= 0; i-- {
		n, _ := strconv.Atoi(fileRe.FindStringSubmatch(filepath.Base(files[i]))[1])
		last, cut, err := lastLine(files[i])
		if err != nil {
			return "", err
		}
		if cut > 0 {
			note = fmt.Sprintf("cut a partial last line of %d bytes from %s", cut, filepath.Base(files[i]))
		}
		if i == len(files)-1 {
			l.fileN = n
		}
		if last == nil {
			continue // an empty file: the chain goes on from the one before
		}
		r, err := DecodeRecord(last)
		if err != nil || r.Replica != l.opt.Replica {
			return "", fmt.Errorf("audit: the last record of %s is damaged; run pinned audit verify and move the directory aside to start a new chain", files[i])
		}
		l.seq, l.head = r.Seq, Digest(last)
		break
	}
	return note, l.openFile()
}

// lastLine returns the last complete line of path and cuts a partial
// one after it (cut is its size).
func lastLine(path string) (last []byte, cut int64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("audit: %w", err)
	}
	end := bytes.LastIndexByte(b, '\n') + 1
	if end < len(b) {
		cut = int64(len(b) - end)
		if err := os.Truncate(path, int64(end)); err != nil {
			return nil, 0, fmt.Errorf("audit: cutting a partial line: %w", err)
		}
		b = b[:end]
	}
	if len(b) == 0 {
		return nil, cut, nil
	}
	b = b[:len(b)-1]
	return b[bytes.LastIndexByte(b, '\n')+1:], cut, nil
}

func (l *Log) openFile() error {
	f, err := os.OpenFile(filepath.Join(l.dir, fileName(l.fileN)), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit: %w", err)
	}
	l.f, l.size = f, st.Size()
	return nil
}

// Ready reports whether records can be written (api.Auditor).
func (l *Log) Ready() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ready()
}

func (l *Log) ready() error {
	if l.closed {
		return errors.New("audit: the log is closed")
	}
	return l.err
}

// Append writes one op record and returns its receipt (api.Auditor).
func (l *Log) Append(_ context.Context, e api.AuditEvent) (api.Receipt, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.ready(); err != nil {
		return api.Receipt{}, err
	}
	r := &Record{Kind: KindOp, Source: e.Source, Bot: e.Bot, Grant: e.Grant, Service: e.Service, Op: e.Op,
		ArgsSHA256: e.ArgsSHA256, Target: e.Target, Status: e.Status, Applied: e.Applied, Bytes: e.Bytes,
		Code: e.Code, Limit: e.Limit}
	d, err := l.append(r)
	if err != nil {
		return api.Receipt{}, err
	}
	rc := api.Receipt{Replica: l.opt.Replica, Seq: r.Seq, Digest: d}
	if l.sinceSeal >= l.opt.SealEvery {
		if err := l.seal(); err != nil {
			return api.Receipt{}, err
		}
	}
	return rc, nil
}

// append chains r after the head and writes it; l.mu is held. A failed
// write makes the log refuse every later record (the chain would fork).
func (l *Log) append(r *Record) (string, error) {
	r.Seq, r.Prev = l.seq+1, l.head
	r.Replica = l.opt.Replica
	r.Time = l.opt.Now().UTC().Format(time.RFC3339Nano)
	if r.Kind == KindSeal {
		r.Key = l.pub
		msg, err := r.signed()
		if err != nil {
			return "", err
		}
		r.Sig = base64.StdEncoding.EncodeToString(ed25519.Sign(l.opt.Key, msg))
	}
	b, err := r.Encode()
	if err != nil {
		return "", err // this record only: nothing was written
	}
	if l.size > 0 && l.size+int64(len(b))+1 > l.opt.MaxFileBytes && r.Kind != KindSeal {
		if err := l.rotate(); err != nil {
			return "", err
		}
		r.Seq, r.Prev = l.seq+1, l.head
		if b, err = r.Encode(); err != nil {
			return "", err
		}
	}
	n, err := l.f.Write(append(b, '\n'))
	l.size += int64(n)
	if err == nil && l.opt.Fsync == FsyncAlways {
		err = l.f.Sync()
	}
	if err != nil {
		l.err = fmt.Errorf("audit: writing the log: %w", err)
		return "", l.err
	}
	d := Digest(b)
	l.seq, l.head = r.Seq, d
	if r.Kind == KindSeal {
		l.sinceSeal = 0
	} else {
		l.sinceSeal++
	}
	return d, nil
}

// seal appends a seal of the head and syncs the file; l.mu is held.
func (l *Log) seal() error {
	if _, err := l.append(&Record{Kind: KindSeal}); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		l.err = fmt.Errorf("audit: syncing the log: %w", err)
		return l.err
	}
	return nil
}

// rotate seals the current file, closes it and opens the next; l.mu is
// held.
func (l *Log) rotate() error {
	if err := l.seal(); err != nil {
		return err
	}
	if err := l.f.Close(); err != nil {
		l.err = fmt.Errorf("audit: closing the log file: %w", err)
		return l.err
	}
	l.fileN++
	if err := l.openFile(); err != nil {
		l.err = err
		return err
	}
	return nil
}

// Seal seals the chain head now, when records were written since the
// last seal.
func (l *Log) Seal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.ready(); err != nil {
		return err
	}
	if l.sinceSeal == 0 {
		return nil
	}
	return l.seal()
}

func (l *Log) sealer() {
	defer close(l.done)
	t := time.NewTicker(l.opt.SealInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			_ = l.Seal() // a failure is sticky: Ready reports it
		}
	}
}

// Head returns the seq and digest of the chain's last record.
func (l *Log) Head() (uint64, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq, l.head
}

// Close seals the chain, syncs and closes the file. The log ends on a
// seal, so Verify finds it whole.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	close(l.stop)
	l.mu.Unlock()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	if l.err == nil && l.sinceSeal > 0 {
		err = l.seal()
	}
	l.closed = true
	if cerr := l.f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	l.lock.Close()
	if err == nil {
		err = l.err
	}
	return err
}

// readLines reads a file's lines; a last line without its newline is
// returned with partial set.
func readLines(r io.Reader) (lines [][]byte, partial bool, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if line[len(line)-1] == '\n' {
				lines = append(lines, line[:len(line)-1])
			} else {
				lines = append(lines, line)
				partial = true
			}
		}
		if err == io.EOF {
			return lines, partial, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
}
