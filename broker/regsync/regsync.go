// Package regsync is the broker's registry sync job: it fetches a signed
// registry snapshot over HTTPS, verifies it with a trusted Ed25519 key
// (package registry/snapshot), refuses a bad signature, a tampered
// manifest or a rolled-back version, and keeps the last good snapshot on
// any failure. What it holds feeds the catalog only: a sidecar executes
// its own embedded snapshot, never a synced one (docs/DESIGN.md, "Trust
// boundaries").
//
// It imports registry and registry/snapshot, zerolog and the Prometheus
// client; package broker serves what it holds at GET /registry.
package regsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"aead.dev/minisign"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/registry/snapshot"
)

// DefaultInterval is how often a snapshot is fetched when Config.Interval
// is zero.
const DefaultInterval = 5 * time.Minute

// fetchTimeout bounds one fetch of the archive and its signature.
const fetchTimeout = 30 * time.Second

// Outcomes of a sync, besides the snapshot.Kind values: the metric's
// outcome label and the log's "reason".
const (
	OutcomeOK         = "ok"          // a new snapshot was verified and is served
	OutcomeUnchanged  = "unchanged"   // the same version and digest as the one held
	OutcomeFetchError = "fetch_error" // the archive or signature could not be fetched (network, status, size)
	OutcomeRolledBack = "rolled_back" // a validly signed snapshot older than the one held, or the same version with other content
)

// Config configures a Syncer.
type Config struct {
	// URL is the https URL of the snapshot archive (snapshot.json); its
	// signature is fetched from URL + ".minisig".
	URL string
	// PublicKey is the trusted key of the registry's publisher.
	PublicKey minisign.PublicKey
	// Interval between fetches; DefaultInterval when zero.
	Interval time.Duration
	// Client fetches; nil means a client with the system roots.
	Client *http.Client
	// Logger logs each sync's outcome (never a body).
	Logger zerolog.Logger
	// Metrics registers the sync's collectors when non-nil (or register
	// [Syncer.Collectors] yourself; package broker does).
	Metrics prometheus.Registerer
}

// Current is a verified snapshot and what is served of it.
type Current struct {
	Snapshot *snapshot.Snapshot
	Registry *registry.Registry
	// Fetched is when it was verified.
	Fetched time.Time
}

// Syncer runs the sync job. It is safe for concurrent use.
type Syncer struct {
	cfg     Config
	current atomic.Pointer[Current]
	mu      sync.Mutex // one sync at a time
	m       *metrics
}

// New checks cfg: the URL must be https (a snapshot is verified, but a
// plain fetch would still let a network attacker withhold updates
// unseen).
func New(cfg Config) (*Syncer, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("regsync: --registry-url %q: want an https URL of a snapshot archive (snapshot.json)", cfg.URL)
	}
	_, _, devText := registry.EmbeddedSnapshot()
	if dev, err := snapshot.ParsePublicKey(devText); err == nil && dev.Equal(cfg.PublicKey) {
		return nil, fmt.Errorf("regsync: --registry-pubkey is the development key that signs the in-tree snapshot (registry/snapshot.pub); its secret key is public, so it proves nothing: give the registry publisher's release key")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Interval < time.Second {
		return nil, fmt.Errorf("regsync: interval %s is under a second", cfg.Interval)
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	return &Syncer{cfg: cfg, m: newMetrics(cfg.Metrics)}, nil
}

// Current returns the last good snapshot, or nil before the first.
func (s *Syncer) Current() *Current { return s.current.Load() }

// Run syncs at once, then every Interval, until ctx is done.
func (s *Syncer) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		_ = s.Sync(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sync fetches and verifies the snapshot once. On success the new
// snapshot is served; on any failure the last good one stays and the
// error says why (its outcome is [Outcome]).
func (s *Syncer) Sync(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.sync(ctx)
	outcome := Outcome(err)
	s.m.syncs.WithLabelValues(outcome).Inc()
	s.m.lastAttempt.SetToCurrentTime()
	log := s.cfg.Logger.Info()
	if err != nil && outcome != OutcomeUnchanged {
		log = s.cfg.Logger.Warn().Str("error", err.Error())
	}
	if c := s.current.Load(); c != nil {
		log = log.Uint64("serving_version", c.Snapshot.Version).Str("serving_digest", c.Snapshot.Digest)
	}
	log.Str("outcome", outcome).Msg("registry sync")
	if outcome == OutcomeUnchanged {
		return nil
	}
	return err
}

// unchanged is Sync's internal "nothing new" signal.
var errUnchanged = errors.New("unchanged")

// rolledBack is a refused older snapshot.
type rolledBack struct{ msg string }

func (e *rolledBack) Error() string { return "registry sync: rolled_back: " + e.msg }

// fetchError is a failed fetch.
type fetchError struct{ err error }

func (e *fetchError) Error() string { return "registry sync: fetch_error: " + e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }

// Outcome names a Sync error for metrics and logs: "ok" for nil, a
// snapshot.Kind ("bad_signature", "tampered", ...), "rolled_back",
// "fetch_error" or "unchanged".
func Outcome(err error) string {
	var rb *rolledBack
	var fe *fetchError
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, errUnchanged):
		return OutcomeUnchanged
	case errors.As(err, &rb):
		return OutcomeRolledBack
	case errors.As(err, &fe):
		return OutcomeFetchError
	case snapshot.KindOf(err) != "":
		return string(snapshot.KindOf(err))
	}
	return OutcomeFetchError
}

func (s *Syncer) sync(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	archive, err := s.get(ctx, s.cfg.URL, snapshot.MaxBytes)
	if err != nil {
		return &fetchError{err}
	}
	sig, err := s.get(ctx, s.cfg.URL+".minisig", 4<<10)
	if err != nil {
		return &fetchError{err}
	}
	snap, err := snapshot.Verify(s.cfg.PublicKey, archive, sig)
	if err != nil {
		return err
	}
	held := s.current.Load()
	if held != nil {
		switch {
		case snap.Version < held.Snapshot.Version:
			return &rolledBack{fmt.Sprintf("version %d (%s) is older than version %d (%s), which is kept", snap.Version, snap.Digest, held.Snapshot.Version, held.Snapshot.Digest)}
		case snap.Version == held.Snapshot.Version && snap.Digest != held.Snapshot.Digest:
			return &rolledBack{fmt.Sprintf("version %d is signed with other content (%s) than the held one (%s); a publisher bumps the version with every change", snap.Version, snap.Digest, held.Snapshot.Digest)}
		case snap.Version == held.Snapshot.Version:
			return errUnchanged
		}
	}
	reg, err := snap.Registry()
	if err != nil {
		return err
	}
	s.current.Store(&Current{Snapshot: snap, Registry: reg, Fetched: time.Now()})
	s.m.version.Set(float64(snap.Version))
	s.m.lastSuccess.SetToCurrentTime()
	s.m.digest.Reset()
	s.m.digest.WithLabelValues(snap.Digest).Set(1)
	return nil
}

// get fetches a URL's body, refusing a non-200 answer or one over limit.
func (s *Syncer) get(ctx context.Context, u string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("GET %s: over %s bytes", u, strconv.FormatInt(limit, 10))
	}
	return b, nil
}
