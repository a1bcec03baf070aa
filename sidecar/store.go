package sidecar

import (
	"context"
	"errors"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"
)

// instrumented times every call to the state store and counts its
// failures (pinned_sidecar_state_duration_seconds,
// pinned_sidecar_state_errors_total), by operation. ErrReplayed and
// ErrFull are answers, not failures.
type instrumented struct {
	next api.Store
	m    *metrics
}

func (s instrumented) observe(op string, start time.Time, err error) {
	s.m.stateDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil && errors.Is(err, api.ErrUnavailable) {
		s.m.stateErrors.WithLabelValues(op).Inc()
	}
}

func (s instrumented) RecordNonce(ctx context.Context, nonce string, until, now time.Time) (api.Nonce, error) {
	start := time.Now()
	n, err := s.next.RecordNonce(ctx, nonce, until, now)
	s.observe("record", start, err)
	return n, err
}

func (s instrumented) ForgetNonce(ctx context.Context, n api.Nonce) error {
	start := time.Now()
	err := s.next.ForgetNonce(ctx, n)
	s.observe("forget", start, err)
	return err
}

func (s instrumented) TryLock(ctx context.Context, key string, ttl time.Duration) (api.Lock, bool, error) {
	start := time.Now()
	l, ok, err := s.next.TryLock(ctx, key, ttl)
	s.observe("lock", start, err)
	return l, ok, err
}

func (s instrumented) Unlock(ctx context.Context, l api.Lock) error {
	start := time.Now()
	err := s.next.Unlock(ctx, l)
	s.observe("unlock", start, err)
	return err
}

func (s instrumented) Grace(ctx context.Context, key string) ([]byte, bool, error) {
	start := time.Now()
	v, ok, err := s.next.Grace(ctx, key)
	s.observe("grace", start, err)
	return v, ok, err
}

func (s instrumented) PutGrace(ctx context.Context, l api.Lock, value []byte, ttl time.Duration) (bool, error) {
	start := time.Now()
	ok, err := s.next.PutGrace(ctx, l, value, ttl)
	s.observe("put_grace", start, err)
	return ok, err
}

func (s instrumented) Ping(ctx context.Context) error {
	start := time.Now()
	err := s.next.Ping(ctx)
	s.observe("ping", start, err)
	return err
}

func (s instrumented) Kind() string { return s.next.Kind() }

func (s instrumented) Close() error { return s.next.Close() }

// forget removes an op's nonce record: its grant was refused without
// being spent, so the bot may retry it. Detached from the caller (who may
// have gone away). When the store cannot answer, the record stays and
// the grant is spent: fail closed, logged.
func (s *Server) forget(ctx context.Context, rec *api.Nonce) {
	if rec == nil {
		return
	}
	if err := s.store.ForgetNonce(context.WithoutCancel(ctx), *rec); err != nil {
		s.log.Warn().Str("event", "state").Str("op", "forget").AnErr("cause", err).
			Msg("the grant's nonce could not be forgotten: the grant stays spent")
	}
}
