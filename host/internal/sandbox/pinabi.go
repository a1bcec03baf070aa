package sandbox

import (
	"bytes"
	"context"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	hostapi "github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/host/internal/egress"
	"github.com/elevenmessenger/pinned/internal/abi"
	"github.com/elevenmessenger/pinned/internal/argrules"
	"github.com/elevenmessenger/pinned/internal/jsonv"
	"github.com/elevenmessenger/pinned/registry"
)

// Outcome is what an op's run fixed, at most once.
type Outcome uint8

// Outcomes of a run (Result.Outcome).
const (
	OutcomeNone     Outcome = iota // the guest finished without a request or a reject
	OutcomeAccepted                // request accepted by Admit; the host will send it
	OutcomeDenied                  // request refused by Admit (Result.Deny says why)
	OutcomeRejected                // the guest refused the args (Result.Reject says how)
)

// Call is one run of the guest: the input its host functions serve, the
// check of the request it submits, and its budgets. The host keeps what
// it built the check from (the op's policy, its binding, the expected
// request); the sandbox only calls Admit.
type Call struct {
	// Input is the op input: the op spec line, then the caller's args.
	Input []byte
	// Op is the op run: a reject must name one of its declared args, or
	// an undeclared top-level key of the caller's args.
	Op *registry.Op
	// Admit decides a request the guest submits, decoded: "" accepts it,
	// else the rule it broke. nil denies every request (DenyNotBound).
	Admit func(*egress.Request) hostapi.DenyReason
	// MaxCalls is the pin_v1 call budget.
	MaxCalls int
	// MaxLogBytes caps what the guest may write to stdout and stderr; the
	// rest is counted and dropped.
	MaxLogBytes int
}

// Result is what one run fixed, at most once, and what the guest wrote.
type Result struct {
	// Outcome is what the run fixed.
	Outcome Outcome
	// Request is the request Admit accepted (OutcomeAccepted).
	Request *egress.Request
	// Deny is the rule the request broke (OutcomeDenied).
	Deny hostapi.DenyReason
	// Reject is the guest's reject (OutcomeRejected): an abi.Reject*
	// reason, and Arg the arg it names, checked as pin_v1.reject
	// documents.
	Reject int32
	Arg    string
	// Log is what the guest wrote to stdout and stderr, up to
	// MaxLogBytes; LogDropped counts the bytes dropped past it.
	Log        []byte
	LogDropped int64
}

// state is everything one run's host functions see, and what the run
// fixed. It lives in the context passed to the guest's exports, so
// concurrent ops never share it.
type state struct {
	running bool // false during _initialize: pin_v1 calls get ESTATE
	input   []byte
	op      *registry.Op
	admit   func(*egress.Request) hostapi.DenyReason
	calls   int
	maxCall int
	start   time.Time
	// clockBase is the guest's monotonic time at op start: clockOrigin for
	// a fresh instance, the template's clock for a reset one (the guest's
	// runtime remembers times from before the snapshot, so its clock must
	// not run backwards).
	clockBase time.Duration
	log       logBuffer
	res       Result
}

func newState(c Call) *state {
	return &state{
		input:     c.Input,
		op:        c.Op,
		admit:     c.Admit,
		maxCall:   c.MaxCalls,
		start:     time.Now(),
		clockBase: clockOrigin,
		log:       logBuffer{max: c.MaxLogBytes},
	}
}

// result is what the run fixed, with the guest's output.
func (st *state) result() Result {
	r := st.res
	r.Log, r.LogDropped = st.log.buf, st.log.dropped
	return r
}

type stateKey struct{}

// clockOrigin is where every guest's monotonic clock starts. It is a
// constant, so it reveals nothing of the host, and it is not zero: the Go
// runtime refuses to start ("nanotime returning zero") when its monotonic
// clock reads 0.
const clockOrigin = time.Second

// stateFrom returns the op's state. A call outside an op (which the host
// never makes) gets an inert state whose every pin_v1 call is ESTATE.
func stateFrom(ctx context.Context) *state {
	if st, ok := ctx.Value(stateKey{}).(*state); ok {
		return st
	}
	return &state{start: time.Now(), clockBase: clockOrigin}
}

func (st *state) monotonic() time.Duration { return st.clockBase + time.Since(st.start) }

// budget counts one pin_v1 call and reports whether it may proceed: ELIMIT
// past the op's budget, ESTATE outside run or once the outcome is fixed
// (no host call does anything after a request was accepted or denied or
// the args were rejected).
func (st *state) budget() int32 {
	st.calls++
	if st.calls > st.maxCall {
		return abi.ELIMIT
	}
	if !st.running || st.res.Outcome != OutcomeNone {
		return abi.ESTATE
	}
	return abi.OK
}

// logBuffer keeps the first maxLog bytes a guest writes to stdout/stderr
// and counts the rest.
type logBuffer struct {
	max     int
	buf     []byte
	dropped int64
}

func (l *logBuffer) write(b []byte) {
	room := l.max - len(l.buf)
	if room > len(b) {
		room = len(b)
	}
	if room > 0 {
		l.buf = append(l.buf, b[:room]...)
	}
	l.dropped += int64(len(b) - room)
}

// pinFunc is one pin_v1 host function.
type pinFunc struct {
	name    string
	params  []api.ValueType
	results []api.ValueType
	fn      api.GoModuleFunc
}

// pinFuncs is the pin_v1 module, in the order of docs/ABI.md.
var pinFuncs = []pinFunc{
	{abi.FuncInputLen, nil, []api.ValueType{i32}, pinInputLen},
	{abi.FuncInputRead, []api.ValueType{i32, i32}, []api.ValueType{i32}, pinInputRead},
	{abi.FuncRequest, []api.ValueType{i32, i32}, []api.ValueType{i32}, pinRequest},
	{abi.FuncReject, []api.ValueType{i32, i32, i32}, []api.ValueType{i32}, pinReject},
}

func instantiatePin(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(abi.ModuleName)
	for _, f := range pinFuncs {
		b.NewFunctionBuilder().WithGoModuleFunction(deadlineChecked(f.fn), f.params, f.results).Export(f.name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

func result(stack []uint64, v int32) { stack[0] = api.EncodeI32(v) }

// pinInputLen: input_len() -> len. Results: the input's length (> 0),
// ESTATE outside an op, ELIMIT.
func pinInputLen(ctx context.Context, _ api.Module, stack []uint64) {
	st := stateFrom(ctx)
	if r := st.budget(); r != abi.OK {
		result(stack, r)
		return
	}
	result(stack, int32(len(st.input)))
}

// pinInputRead: input_read(buf, buf_len) -> n. Checks: buf_len equals
// input_len(); [buf, buf+buf_len) inside memory. Results: buf_len, ERANGE,
// EFAULT, ESTATE, ELIMIT.
func pinInputRead(ctx context.Context, mod api.Module, stack []uint64) {
	st := stateFrom(ctx)
	if r := st.budget(); r != abi.OK {
		result(stack, r)
		return
	}
	buf, n := uint32(stack[0]), uint32(stack[1])
	if int64(n) != int64(len(st.input)) {
		result(stack, abi.ERANGE)
		return
	}
	if !mod.Memory().Write(buf, st.input) {
		result(stack, abi.EFAULT)
		return
	}
	result(stack, int32(n))
}

// pinRequest: request(buf, buf_len) -> code. Checks, in order: the op's
// outcome is not yet fixed (ESTATE); buf_len <= abi.MaxRequestBytes
// (ETOOBIG); the bytes are inside memory (EFAULT); they decode as the
// request encoding (EINVAL); the call's Admit accepts it: the host's
// egress.Admit, the egress policy (EDENIED) and exactly the request the
// caller's args bind the op to (EDENIED, DenyNotBound). The check runs
// on a copy of the guest's bytes. ETOOBIG,
// EINVAL and EDENIED fix the op's outcome as denied; OK fixes it as
// accepted. Results: OK, ETOOBIG, EFAULT, EINVAL, EDENIED, ESTATE, ELIMIT.
func pinRequest(ctx context.Context, mod api.Module, stack []uint64) {
	st := stateFrom(ctx)
	if r := st.budget(); r != abi.OK { // ELIMIT, or ESTATE once the outcome is fixed
		result(stack, r)
		return
	}
	buf, n := uint32(stack[0]), uint32(stack[1])
	if n > abi.MaxRequestBytes {
		st.res.Outcome, st.res.Deny = OutcomeDenied, hostapi.DenyTooLarge
		result(stack, abi.ETOOBIG)
		return
	}
	view, ok := mod.Memory().Read(buf, n)
	if !ok {
		result(stack, abi.EFAULT)
		return
	}
	req, deny := egress.DecodeRequest(append([]byte(nil), view...))
	if deny != "" {
		st.res.Outcome, st.res.Deny = OutcomeDenied, deny
		result(stack, abi.EINVAL)
		return
	}
	if deny := st.check(req); deny != "" {
		st.res.Outcome, st.res.Deny = OutcomeDenied, deny
		result(stack, abi.EDENIED)
		return
	}
	st.res.Outcome, st.res.Request = OutcomeAccepted, req
	result(stack, abi.OK)
}

// check runs the call's Admit; without one, every request is denied.
func (st *state) check(r *egress.Request) hostapi.DenyReason {
	if st.admit == nil {
		return hostapi.DenyNotBound
	}
	return st.admit(r)
}

// pinReject: reject(reason, name, name_len) -> code. Checks, in order: the
// outcome is not yet fixed (ESTATE); reason is a known abi.Reject* value
// (EINVAL); name_len <= abi.MaxNameBytes (EINVAL); the name is inside
// memory (EFAULT); it is valid UTF-8 without control characters, empty
// exactly for RejectSyntax, a top-level key of the caller's args the op
// does not declare for RejectUndeclared (clipped as the executor clips
// it), and a declared arg of the op otherwise (EINVAL). OK fixes the outcome as rejected. Results:
// OK, EINVAL, EFAULT, ESTATE, ELIMIT.
func pinReject(ctx context.Context, mod api.Module, stack []uint64) {
	st := stateFrom(ctx)
	if r := st.budget(); r != abi.OK { // ELIMIT, or ESTATE once the outcome is fixed
		result(stack, r)
		return
	}
	reason, ptr, n := api.DecodeI32(stack[0]), uint32(stack[1]), uint32(stack[2])
	if reason < abi.RejectSyntax || reason > abi.RejectValue || n > abi.MaxNameBytes {
		result(stack, abi.EINVAL)
		return
	}
	view, ok := mod.Memory().Read(ptr, n)
	if !ok {
		result(stack, abi.EFAULT)
		return
	}
	name := string(view)
	if !printableName(name) || (reason == abi.RejectSyntax) != (name == "") {
		result(stack, abi.EINVAL)
		return
	}
	switch reason {
	case abi.RejectSyntax:
	case abi.RejectUndeclared:
		// The name must be one the caller sent (clipped as the executor
		// clips it), so the guest cannot put its own text in the error.
		if !st.callerSent(name) {
			result(stack, abi.EINVAL)
			return
		}
	default:
		if !st.declares(name) {
			result(stack, abi.EINVAL)
			return
		}
	}
	st.res.Outcome, st.res.Reject, st.res.Arg = OutcomeRejected, reason, name
	result(stack, abi.OK)
}

// declares reports whether the run's op declares the arg name.
func (st *state) declares(name string) bool {
	if st.op == nil {
		return false
	}
	_, ok := st.op.Args[name]
	return ok
}

// callerSent reports whether name is, clipped, a top-level key of the
// caller's args (the part of the op input after the first newline) that
// the op does not declare. It reads the keys the way the executor does,
// so a key sent twice ({"a":1,"a":2}: the executor reports "a" as
// undeclared before anything else) still counts as sent.
func (st *state) callerSent(name string) bool {
	nl := bytes.IndexByte(st.input, '\n')
	if nl < 0 {
		return false
	}
	raw := st.input[nl+1:]
	ws := func(i int) int {
		for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
			i++
		}
		return i
	}
	i := ws(0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	for i = ws(i + 1); i < len(raw); {
		n := jsonv.ScanString(raw[i:])
		if n == 0 {
			return false
		}
		k, err := jsonv.Parse(raw[i : i+n])
		if err != nil {
			return false
		}
		if !st.declares(k.S) && argrules.ClipName(k.S) == name {
			return true
		}
		if i = ws(i + n); i >= len(raw) || raw[i] != ':' {
			return false
		}
		i = ws(i + 1)
		vn := jsonv.Skip(raw[i:])
		if vn == 0 {
			return false
		}
		if i = ws(i + vn); i >= len(raw) || raw[i] != ',' {
			return false
		}
		i = ws(i + 1)
	}
	return false
}

func printableName(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}
