package sandbox

import (
	"bytes"
	"context"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/elevenmessenger/pinned/host/internal/egress"
	"github.com/elevenmessenger/pinned/internal/abi"
	"github.com/elevenmessenger/pinned/internal/argrules"
	"github.com/elevenmessenger/pinned/internal/jsonv"
	"github.com/elevenmessenger/pinned/registry"
)

// Outcome is what an op's run fixed, at most once.
type Outcome uint8

// Outcomes of a run (State.Outcome).
const (
	OutcomeNone     Outcome = iota // the guest finished without a request or a reject
	OutcomeAccepted                // request passed the policy and is bound to the args; the host will send it
	OutcomeDenied                  // request refused by the policy or the binding (State.Deny says why)
	OutcomeRejected                // the guest refused the args (State.Rejected says how)
)

// State is everything one op's host functions see, and what its run
// fixed. It lives in the context passed to the guest's exports, so
// concurrent ops never share it. The host makes one per op (NewState) and
// reads the outcome after Runtime.Run.
type State struct {
	running bool // false during _initialize: pin_v1 calls get ESTATE
	input   []byte
	policy  *egress.Policy
	bind    *egress.Binding // the op's request template (nil: no request is bound)
	want    *egress.Bound   // the request the caller's validated args render
	op      *registry.Op
	calls   int
	maxCall int
	start   time.Time
	// clockBase is the guest's monotonic time at op start: clockOrigin for
	// a fresh instance, the template's clock for a reset one (the guest's
	// runtime remembers times from before the snapshot, so its clock must
	// not run backwards).
	clockBase time.Duration
	log       logBuffer

	outcome   Outcome
	req       *egress.Request
	deny      egress.DenyReason
	rejReason int32
	rejArg    string
}

// NewState is the state of one op: input is the op input (the op spec
// line, then the caller's args), policy and bind the op's request checks,
// want the request the caller's validated args bind it to, maxCalls the
// pin_v1 call budget and maxLogBytes the cap of the guest's stdout and
// stderr (the rest is counted and dropped).
func NewState(input []byte, op *registry.Op, policy *egress.Policy, bind *egress.Binding, want *egress.Bound, maxCalls, maxLogBytes int) *State {
	return &State{
		input:     input,
		policy:    policy,
		bind:      bind,
		want:      want,
		op:        op,
		maxCall:   maxCalls,
		start:     time.Now(),
		clockBase: clockOrigin,
		log:       logBuffer{max: maxLogBytes},
	}
}

// Outcome is what the run fixed.
func (st *State) Outcome() Outcome { return st.outcome }

// Request is the accepted request (OutcomeAccepted), else nil.
func (st *State) Request() *egress.Request { return st.req }

// Deny is the rule the request broke (OutcomeDenied).
func (st *State) Deny() egress.DenyReason { return st.deny }

// Rejected is the guest's reject (OutcomeRejected): an abi.Reject* reason
// and the arg it names, checked as pin_v1.reject documents.
func (st *State) Rejected() (reason int32, arg string) { return st.rejReason, st.rejArg }

// Want is the request the caller's args bind the op to (NewState's want).
func (st *State) Want() *egress.Bound { return st.want }

// Start is when the op's guest run began (its clock's origin).
func (st *State) Start() time.Time { return st.start }

// Log is what the guest wrote to stdout and stderr, up to the cap, and
// the count of bytes dropped past it.
func (st *State) Log() (out []byte, dropped int64) { return st.log.buf, st.log.dropped }

type stateKey struct{}

// clockOrigin is where every guest's monotonic clock starts. It is a
// constant, so it reveals nothing of the host, and it is not zero: the Go
// runtime refuses to start ("nanotime returning zero") when its monotonic
// clock reads 0.
const clockOrigin = time.Second

// stateFrom returns the op's state. A call outside an op (which the host
// never makes) gets an inert state whose every pin_v1 call is ESTATE.
func stateFrom(ctx context.Context) *State {
	if st, ok := ctx.Value(stateKey{}).(*State); ok {
		return st
	}
	return &State{start: time.Now(), clockBase: clockOrigin}
}

func (st *State) monotonic() time.Duration { return st.clockBase + time.Since(st.start) }

// budget counts one pin_v1 call and reports whether it may proceed: ELIMIT
// past the op's budget, ESTATE outside run or once the outcome is fixed
// (no host call does anything after a request was accepted or denied or
// the args were rejected).
func (st *State) budget() int32 {
	st.calls++
	if st.calls > st.maxCall {
		return abi.ELIMIT
	}
	if !st.running || st.outcome != OutcomeNone {
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
// request encoding (EINVAL); egress.Admit accepts it: it passes the
// egress policy (EDENIED) and is exactly the request the caller's args
// bind the op to (EDENIED, DenyNotBound). The check runs on a copy of the guest's bytes. ETOOBIG,
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
		st.outcome, st.deny = OutcomeDenied, egress.DenyTooLarge
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
		st.outcome, st.deny = OutcomeDenied, deny
		result(stack, abi.EINVAL)
		return
	}
	if deny := egress.Admit(st.policy, st.bind, st.want, req); deny != "" {
		st.outcome, st.deny = OutcomeDenied, deny
		result(stack, abi.EDENIED)
		return
	}
	st.outcome, st.req = OutcomeAccepted, req
	result(stack, abi.OK)
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
		if _, declared := st.op.Args[name]; !declared {
			result(stack, abi.EINVAL)
			return
		}
	}
	st.outcome, st.rejReason, st.rejArg = OutcomeRejected, reason, name
	result(stack, abi.OK)
}

// callerSent reports whether name is, clipped, a top-level key of the
// caller's args (the part of the op input after the first newline) that
// the op does not declare. It reads the keys the way the executor does,
// so a key sent twice ({"a":1,"a":2}: the executor reports "a" as
// undeclared before anything else) still counts as sent.
func (st *State) callerSent(name string) bool {
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
		if _, declared := st.op.Args[k.S]; !declared && argrules.ClipName(k.S) == name {
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
