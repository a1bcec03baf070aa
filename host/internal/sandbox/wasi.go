package sandbox

import (
	"context"
	"crypto/rand"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// WASIModuleName is the import module of the WASI subset.
const WASIModuleName = "wasi_snapshot_preview1"

// WASI errno values (WASI preview1, "errno").
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoInval   = 28
)

// WASI limits of the subset.
const (
	// maxIOVecs bounds the iovec count of one fd_write.
	maxIOVecs = 1024
	// maxRandom bounds the bytes of one random_get.
	maxRandom = 64 << 10
	// maxSubscriptions bounds one poll_oneoff.
	maxSubscriptions = 64
	// clockGranularity is the resolution of both clocks the guest sees.
	clockGranularity = time.Millisecond
)

// wasiFunc is one function of the WASI subset: its name, signature and
// implementation. The list below is the complete surface: a guest importing
// any other WASI function does not load (ABI invariant 1).
type wasiFunc struct {
	name    string
	params  []api.ValueType
	results []api.ValueType
	fn      api.GoModuleFunc
}

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// wasiFuncs is the WASI subset, in the order of docs/ABI.md: exactly the
// functions the Go wasip1 runtime of the executor imports, nothing more.
// Every function is stateless apart from the op's own log: there is no
// file table at all (no preopened directory, no fd_read, no path_open, no
// fd_close), no environment, no arguments, no sockets.
var wasiFuncs = []wasiFunc{
	{"args_get", []api.ValueType{i32, i32}, []api.ValueType{i32}, wasiNoop},
	{"args_sizes_get", []api.ValueType{i32, i32}, []api.ValueType{i32}, wasiZeroSizes},
	{"environ_get", []api.ValueType{i32, i32}, []api.ValueType{i32}, wasiNoop},
	{"environ_sizes_get", []api.ValueType{i32, i32}, []api.ValueType{i32}, wasiZeroSizes},
	{"clock_time_get", []api.ValueType{i32, i64, i32}, []api.ValueType{i32}, wasiClockTimeGet},
	{"fd_write", []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}, wasiFdWrite},
	{"poll_oneoff", []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}, wasiPollOneoff},
	{"proc_exit", []api.ValueType{i32}, nil, wasiProcExit},
	{"random_get", []api.ValueType{i32, i32}, []api.ValueType{i32}, wasiRandomGet},
	{"sched_yield", nil, []api.ValueType{i32}, wasiSchedYield},
}

func instantiateWASI(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(WASIModuleName)
	for _, f := range wasiFuncs {
		b.NewFunctionBuilder().WithGoModuleFunction(deadlineChecked(f.fn), f.params, f.results).Export(f.name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

// wasiNoop: args_get and environ_get (nothing to copy). Result: 0.
func wasiNoop(_ context.Context, _ api.Module, stack []uint64) {
	stack[0] = errnoSuccess
}

// wasiSchedYield() is also where the op's deadline is enforced: the
// instrumented guest calls it at least every wasmbin.BudgetInterval
// function entries and loop heads (and the Go runtime itself calls it).
// Checks: the op's context. Results: 0; once the context is done (the
// deadline passed or the caller canceled) it does not return but ends the
// guest with sys.ExitCodeDeadlineExceeded or sys.ExitCodeContextCanceled,
// the codes wazero's own close-on-done uses.
func wasiSchedYield(ctx context.Context, _ api.Module, stack []uint64) {
	checkDeadline(ctx)
	stack[0] = errnoSuccess
}

// checkDeadline ends the guest, as sched_yield does, once the op's
// context is done.
func checkDeadline(ctx context.Context) {
	if err := ctx.Err(); err != nil {
		if err == context.DeadlineExceeded {
			panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
		}
		panic(sys.NewExitError(sys.ExitCodeContextCanceled))
	}
}

// deadlineChecked makes every host function enforce the op's deadline
// on entry: the countdown counts the guest's own steps, not the work its
// host calls do (a loop of straight-line random_get or fd_write calls
// would otherwise do up to 1024 steps' worth of them after the deadline).
func deadlineChecked(fn api.GoModuleFunc) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		checkDeadline(ctx)
		fn(ctx, mod, stack)
	}
}

// wasiZeroSizes: args_sizes_get and environ_sizes_get write 0 for the count
// and 0 for the buffer size. Checks: both pointers writable. Results: 0,
// EFAULT.
func wasiZeroSizes(_ context.Context, mod api.Module, stack []uint64) {
	mem := mod.Memory()
	if !mem.WriteUint32Le(uint32(stack[0]), 0) || !mem.WriteUint32Le(uint32(stack[1]), 0) {
		stack[0] = errnoFault
		return
	}
	stack[0] = errnoSuccess
}

// wasiClockTimeGet(id, precision, result_ptr): realtime (0) and monotonic
// (1) only, both with millisecond resolution whatever precision asks; the
// monotonic clock counts from a fixed, non-zero origin at the op's start,
// so it reveals neither the host's uptime nor fine timing. Results: 0, EINVAL (other clocks),
// EFAULT.
func wasiClockTimeGet(ctx context.Context, mod api.Module, stack []uint64) {
	var t int64
	switch uint32(stack[0]) {
	case 0:
		t = time.Now().Truncate(clockGranularity).UnixNano()
	case 1:
		t = int64(stateFrom(ctx).monotonic().Truncate(clockGranularity))
	default:
		stack[0] = errnoInval
		return
	}
	if !mod.Memory().WriteUint64Le(uint32(stack[2]), uint64(t)) {
		stack[0] = errnoFault
		return
	}
	stack[0] = errnoSuccess
}

// wasiFdWrite(fd, iovs, iovs_len, nwritten_ptr): stdout (1) and stderr (2)
// go to the op's bounded log; bytes past its cap are counted and dropped,
// but reported as written so a guest cannot spin. Checks: fd is 1 or 2,
// iovs_len <= 1024, every iovec and buffer inside memory. Results: 0,
// EBADF, EINVAL, EFAULT.
func wasiFdWrite(ctx context.Context, mod api.Module, stack []uint64) {
	fd, iovs, n, resultPtr := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	if fd != 1 && fd != 2 {
		stack[0] = errnoBadf
		return
	}
	if n > maxIOVecs {
		stack[0] = errnoInval
		return
	}
	mem := mod.Memory()
	st := stateFrom(ctx)
	var total uint32
	for i := uint32(0); i < n; i++ {
		ptr, ok1 := mem.ReadUint32Le(iovs + 8*i)
		l, ok2 := mem.ReadUint32Le(iovs + 8*i + 4)
		if !ok1 || !ok2 {
			stack[0] = errnoFault
			return
		}
		b, ok := mem.Read(ptr, l)
		if !ok {
			stack[0] = errnoFault
			return
		}
		st.log.write(b)
		total += l
	}
	if !mem.WriteUint32Le(resultPtr, total) {
		stack[0] = errnoFault
		return
	}
	stack[0] = errnoSuccess
}

// wasiPollOneoff(in, out, nsubscriptions, nevents_ptr): clock subscriptions
// sleep until the earliest one is due (bounded by the op's deadline) and
// report it; a subscription on a descriptor reports EBADF for it. Checks:
// 1 <= nsubscriptions <= 64, all structures inside memory. Results: 0,
// EINVAL, EFAULT.
func wasiPollOneoff(ctx context.Context, mod api.Module, stack []uint64) {
	in, out, n, neventsPtr := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	if n == 0 || n > maxSubscriptions {
		stack[0] = errnoInval
		return
	}
	mem := mod.Memory()
	subs, ok := mem.Read(in, n*48)
	if !ok {
		stack[0] = errnoFault
		return
	}
	subs = append([]byte(nil), subs...)
	if _, ok := mem.Read(out, n*32); !ok {
		stack[0] = errnoFault
		return
	}
	events, sleep, sleepIdx := parseSubscriptions(subs, int(n), stateFrom(ctx).monotonic())
	var fired [][32]byte
	for _, ev := range events {
		if ev[10] != eventTypeClock {
			fired = append(fired, ev)
		}
	}
	if len(fired) == 0 && sleep >= 0 {
		t := time.NewTimer(sleep)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		fired = append(fired, events[sleepIdx])
	}
	for i, ev := range fired {
		mem.Write(out+uint32(i)*32, ev[:])
	}
	if !mem.WriteUint32Le(neventsPtr, uint32(len(fired))) {
		stack[0] = errnoFault
		return
	}
	stack[0] = errnoSuccess
}

// WASI poll_oneoff constants (subscription and event layouts of WASI
// preview1: a subscription is 48 bytes, an event 32).
const (
	eventTypeClock = 0
	flagAbstime    = 1
)

// parseSubscriptions decodes n subscriptions of 48 bytes each into their
// events (userdata and type copied; EBADF for descriptor subscriptions)
// and finds the earliest clock: sleep is how long until it is due (-1 when
// there is no clock subscription) and idx its event. now is the guest's
// monotonic time, for absolute clocks.
func parseSubscriptions(subs []byte, n int, now time.Duration) (events [][32]byte, sleep time.Duration, idx int) {
	le64 := func(b []byte) uint64 {
		var v uint64
		for i := 7; i >= 0; i-- {
			v = v<<8 | uint64(b[i])
		}
		return v
	}
	sleep, idx = -1, -1
	for i := 0; i < n; i++ {
		s := subs[i*48 : (i+1)*48]
		var ev [32]byte
		copy(ev[:8], s[:8]) // userdata
		tag := s[8]
		ev[10] = tag
		if tag == eventTypeClock {
			timeout := time.Duration(le64(s[24:32]))
			if s[40]&flagAbstime != 0 {
				timeout -= now
			}
			if timeout < 0 {
				timeout = 0
			}
			if sleep < 0 || timeout < sleep {
				sleep, idx = timeout, len(events)
			}
		} else {
			ev[8] = errnoBadf
		}
		events = append(events, ev)
	}
	return events, sleep, idx
}

// wasiProcExit(code) ends the instance; the op fails (the host answers
// sandbox_error).
func wasiProcExit(ctx context.Context, mod api.Module, stack []uint64) {
	code := uint32(stack[0])
	_ = mod.CloseWithExitCode(ctx, code)
	panic(sys.NewExitError(code))
}

// wasiRandomGet(buf, len) fills buf from crypto/rand. Checks: len <= 64 KiB,
// buf inside memory. Results: 0, EINVAL, EFAULT.
func wasiRandomGet(_ context.Context, mod api.Module, stack []uint64) {
	buf, n := uint32(stack[0]), uint32(stack[1])
	if n > maxRandom {
		stack[0] = errnoInval
		return
	}
	b, ok := mod.Memory().Read(buf, n)
	if !ok {
		stack[0] = errnoFault
		return
	}
	_, _ = rand.Read(b)
	stack[0] = errnoSuccess
}
