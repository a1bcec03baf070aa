package sandbox

import (
	"context"
	"errors"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// Stats are the reset pool's counters and sizes; all zero without the
// pool (fresh instances).
type Stats struct {
	// Resets and Discards count the instances put back reset, and those
	// closed instead (trapped, exited, timed out, grew, or a failed reset).
	Resets, Discards int64
	// RestoredPages counts the 4 KiB pages resets copied back or dropped.
	RestoredPages int64
	// Idle is how many instances wait in the template state; InUse how
	// many slots are held (instances running an op or being reset); Size
	// the most that exist at once (Config.PoolSize).
	Idle, InUse, Size int
	// TemplatePages is the template's memory size in 64 KiB pages.
	TemplatePages uint32
}

// Stats reads the pool's counters.
func (r *Runtime) Stats() Stats {
	p := r.pool
	if p == nil {
		return Stats{}
	}
	return Stats{
		Resets: p.resets.Load(), Discards: p.discards.Load(), RestoredPages: p.restoredPages.Load(),
		Idle: len(p.free), InUse: len(p.sem), Size: cap(p.free), TemplatePages: p.tmpl.pages,
	}
}

// Template returns a copy of the template's linear memory and its mutable
// globals' values: what every pooled instance holds before each op.
func (r *Runtime) Template() (memory []byte, globals []uint64, err error) {
	if r.pool == nil {
		return nil, nil, errors.New("sandbox: no reset pool")
	}
	t := r.pool.tmpl
	return append([]byte(nil), t.image.view...), append([]uint64(nil), t.globals...), nil
}

// Lease is one pooled instance taken out of the pool to be looked at
// (tests of the reset, diagnostics): its memory and globals are those an
// op would start from. Return gives it back.
type Lease struct {
	p    *pool
	inst *instance
}

// Lease takes an instance in the template state out of the pool, waiting
// (as an op does) for one to be free; an error without the pool.
func (r *Runtime) Lease(ctx context.Context) (*Lease, error) {
	if r.pool == nil {
		return nil, errors.New("sandbox: no reset pool")
	}
	inst, err := r.pool.get(ctx)
	if err != nil {
		return nil, err
	}
	return &Lease{p: r.pool, inst: inst}, nil
}

// Memory is the instance's linear memory.
func (l *Lease) Memory() api.Memory { return l.inst.mod.Memory() }

// Globals are the current values of the instance's mutable globals, in
// the template's order.
func (l *Lease) Globals() []uint64 {
	out := make([]uint64, len(l.inst.globals))
	for i, g := range l.inst.globals {
		out[i] = g.Get()
	}
	return out
}

// Run runs the guest's run export once for st on this instance, as
// Runtime.Run does, but leaves the instance leased (not reset).
func (l *Lease) Run(ctx context.Context, st *State) error {
	st.clockBase, st.start = l.p.tmpl.clock, time.Now()
	st.running = true
	_, err := l.inst.run().Call(context.WithValue(ctx, stateKey{}, st))
	st.running = false
	return err
}

// Return puts the instance back into the pool WITHOUT a reset: the next
// op starts from whatever it holds. Only a caller that merely read it may
// (so the reset counters count the ops alone), or a test proving that
// without the reset a leak would be seen.
func (l *Lease) Return() {
	l.inst.mem.setBusy(false)
	l.p.free <- l.inst
	<-l.p.sem
}
