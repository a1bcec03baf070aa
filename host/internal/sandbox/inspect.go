package sandbox

import (
	"context"
	"errors"
	"time"
)

// Stats are the reset pool's counters and sizes; all zero without the
// pool (fresh instances).
type Stats struct {
	// Resets and Discards count the instances put back reset, and those
	// closed instead (trapped, exited, timed out, grew, or a failed reset).
	Resets, Discards int64
	// RestoredPages counts the 4 KiB pages resets copied back or dropped.
	RestoredPages int64
	// TrackedResets counts the resets that asked the kernel which pages
	// were written (userfaultfd write-protection and PAGEMAP_SCAN, Linux
	// 6.7+) instead of reading /proc/self/pagemap.
	TrackedResets int64
	// Idle is how many instances wait in the template state; InUse how
	// many slots are held (instances running an op or being reset); Size
	// the most that exist at once (Config.PoolSize).
	Idle, InUse, Size int
	// TemplatePages is the template's memory size in 64 KiB pages.
	TemplatePages uint32
}

// Stats reads the pool's counters.
func (r *Runtime) Stats() Stats {
	p := r.pool.Load()
	if p == nil {
		return Stats{}
	}
	return Stats{
		Resets: p.resets.Load(), Discards: p.discards.Load(), RestoredPages: p.restoredPages.Load(),
		TrackedResets: p.trackedResets.Load(),
		Idle:          len(p.free), InUse: len(p.sem), Size: cap(p.free), TemplatePages: p.tmpl.pages,
	}
}

// Template returns a copy of the template's linear memory and its mutable
// globals' values: what every pooled instance holds before each op.
func (r *Runtime) Template() (memory []byte, globals []uint64, err error) {
	p := r.pool.Load()
	if p == nil {
		return nil, nil, errors.New("sandbox: no reset pool")
	}
	t := p.tmpl
	return append([]byte(nil), t.image.view...), append([]uint64(nil), t.globals...), nil
}

// Lease is one pooled instance taken out of the pool to be looked at
// (tests of the reset, diagnostics): its memory and globals are those an
// op would start from. Return gives it back. A lease hands out copies
// only (Memory, Globals), so looking cannot change the instance; only Run
// can, and an instance that ran goes back through the reset like any op's.
type Lease struct {
	p    *pool
	inst *instance // nil once returned
	ran  bool      // Run was called: the instance left the template state
	ok   bool      // every Run returned normally (the reset may keep it)
}

// Lease takes an instance in the template state out of the pool, waiting
// (as an op does) for one to be free; an error without the pool.
func (r *Runtime) Lease(ctx context.Context) (*Lease, error) {
	p := r.pool.Load()
	if p == nil {
		return nil, errors.New("sandbox: no reset pool")
	}
	inst, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	return &Lease{p: p, inst: inst, ok: true}, nil
}

// Memory is a copy of the instance's linear memory (its length is the
// memory's size, a multiple of 64 KiB). Nil once returned.
func (l *Lease) Memory() []byte {
	if l.inst == nil {
		return nil
	}
	m := l.inst.mod.Memory()
	b, _ := m.Read(0, m.Size())
	return append([]byte(nil), b...)
}

// Globals are the current values of the instance's mutable globals, in
// the template's order (a new slice). Nil once returned.
func (l *Lease) Globals() []uint64 {
	if l.inst == nil {
		return nil
	}
	out := make([]uint64, len(l.inst.globals))
	for i, g := range l.inst.globals {
		out[i] = g.Get()
	}
	return out
}

// Run runs the guest's run export once for c on this instance, as
// Runtime.Run does, but leaves the instance leased: a second Run starts
// from what the first left (what a pool without the reset would hand the
// next op). An error once returned.
func (l *Lease) Run(ctx context.Context, c Call) (Result, error) {
	if l.inst == nil {
		return Result{}, errors.New("sandbox: lease already returned")
	}
	st := newState(c)
	l.ran = true
	st.clockBase, st.start = l.p.tmpl.clock, time.Now()
	st.running = true
	_, err := l.inst.run().Call(context.WithValue(ctx, stateKey{}, st))
	st.running = false
	if err != nil {
		l.ok = false
	}
	return st.result(), err
}

// Return gives the instance back, once (later calls do nothing). An
// instance that was only looked at goes back as it is, still the
// template; one that ran goes through the pool's reset (or is closed,
// after a failed run) exactly as an op's instance does, so no lease can
// put a changed instance in front of the next op.
func (l *Lease) Return() {
	inst := l.inst
	if inst == nil {
		return
	}
	l.inst = nil
	if l.ran {
		l.p.put(inst, l.ok)
		return
	}
	if !inst.mem.setBusy(false) || l.p.closed.Load() {
		// Freed while leased (the runtime closed): drop it, as put does.
		l.p.discards.Add(1)
		inst.mod.Close(context.Background())
		<-l.p.sem
		return
	}
	select {
	case l.p.free <- inst:
	default: // the list is full (the background fill added one): as recycle does
		inst.mod.Close(context.Background())
	}
	<-l.p.sem
}
