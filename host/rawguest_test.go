package host

import (
	"context"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/host/internal/egress"
	"github.com/elevenmessenger/pinned/host/internal/sandbox"
	"github.com/elevenmessenger/pinned/internal/testing/wasmtest"
)

// Hand-assembled hostile guests for state the Go toolchain cannot reach:
// a mutable global the code writes directly, and a table the code
// mutates. Each is a complete guest (imports pin_v1.request, exports
// _initialize, run and memory) that reports what it found through the
// one channel that leaves the sandbox: the request it submits. The
// caller's args say owner "absent", so the request for owner "absent" is
// the bound one and goes out, and the request for owner "found" is
// refused as not_bound (request binding leaves the guest one bit: send
// the bound request or not).

// rawRequest is the honest request for list_issues with the given owner
// and repo "hello" (defaults per_page=30, state=open).
func rawRequest(owner string) string {
	return `{"method":"GET","url":"https://api.github.com/repos/` + owner + `/hello/issues?per_page=30&state=open","headers":[["Accept","application/vnd.github+json"],["X-GitHub-Api-Version","2022-11-28"]]}`
}

// Args of the raw guests: the same bound request (owner "absent"); a space
// before the closing brace tells the guest to write its marker.
const (
	rawArgsLook  = `{"owner":"absent","repo":"hello"}`
	rawArgsWrite = `{"owner":"absent","repo":"hello" }`
)

const (
	foundAt  = 1024
	absentAt = 2048
)

// rawGuest builds a guest module. run is the body of the run function
// (type () -> i32); it may call function 0 (pin_v1.request), 1
// (input_len) and 2 (input_read), and, through the table when present,
// functions 6 (returns 7) and 7 (returns 9).
func rawGuest(globals []byte, table bool, run []byte) []byte {
	found, absent := rawRequest("found"), rawRequest("absent")
	types := wasmtest.Vec(
		[]byte{0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f}, // 0: (i32, i32) -> i32
		[]byte{0x60, 0x00, 0x00},                   // 1: () -> ()
		[]byte{0x60, 0x00, 0x01, 0x7f},             // 2: () -> i32
	)
	imports := wasmtest.Vec(
		append(append(wasmtest.Name("pin_v1"), wasmtest.Name("request")...), 0x00, 0x00),                   // func 0
		append(append(wasmtest.Name("pin_v1"), wasmtest.Name("input_len")...), 0x00, 0x02),                 // func 1
		append(append(wasmtest.Name("pin_v1"), wasmtest.Name("input_read")...), 0x00, 0x00),                // func 2
		append(append(wasmtest.Name(sandbox.WASIModuleName), wasmtest.Name("sched_yield")...), 0x00, 0x02), // func 3: makes the guest instrumentable
	)
	funcs := wasmtest.Vec([]byte{0x01}, []byte{0x02}, []byte{0x02}, []byte{0x02}) // 4 _initialize, 5 run, 6 seven, 7 nine
	out := []byte("\x00asm\x01\x00\x00\x00")
	out = append(out, wasmtest.Section(1, types)...)
	out = append(out, wasmtest.Section(2, imports)...)
	out = append(out, wasmtest.Section(3, funcs)...)
	if table {
		out = append(out, wasmtest.Section(4, wasmtest.Vec([]byte{0x70, 0x00, 0x02}))...) // funcref, min 2
	}
	out = append(out, wasmtest.Section(5, wasmtest.Vec([]byte{0x00, 0x01}))...) // memory min 1
	if globals != nil {
		out = append(out, wasmtest.Section(6, globals)...)
	}
	exports := wasmtest.Vec(
		append(wasmtest.Name("_initialize"), 0x00, 0x04),
		append(wasmtest.Name("run"), 0x00, 0x05),
		append(wasmtest.Name("memory"), 0x02, 0x00),
	)
	out = append(out, wasmtest.Section(7, exports)...)
	if table {
		// table[0] = seven, table[1] = nine
		out = append(out, wasmtest.Section(9, wasmtest.Vec(append([]byte{0x00, 0x41, 0x00, 0x0b}, wasmtest.Vec([]byte{0x06}, []byte{0x07})...)))...)
	}
	code := wasmtest.Vec(
		wasmtest.Body(0x0b),                 // _initialize
		wasmtest.Body(append(run, 0x0b)...), // run
		wasmtest.Body(0x41, 0x07, 0x0b),     // seven
		wasmtest.Body(0x41, 0x09, 0x0b),     // nine
	)
	out = append(out, wasmtest.Section(10, code)...)
	data := wasmtest.Vec(
		append(append([]byte{0x00, 0x41}, append(wasmtest.SLEB(int64(foundAt)), 0x0b)...), wasmtest.Name(found)...),
		append(append([]byte{0x00, 0x41}, append(wasmtest.SLEB(int64(absentAt)), 0x0b)...), wasmtest.Name(absent)...),
	)
	out = append(out, wasmtest.Section(11, data)...)
	return out
}

// readsWrite emits: input_read the op input to 4096 and push whether the
// caller's args end in ` }` (rawArgsWrite: this op writes the marker;
// rawArgsLook: it only looks). The template's warm-up runs with {}.
func readsWrite() []byte {
	b := []byte{0x41}
	b = append(b, wasmtest.SLEB(int64(4096))...)
	b = append(b, 0x10, 0x01, 0x10, 0x02, 0x1a) // input_len; input_read(4096, len); drop
	b = append(b, 0x10, 0x01, 0x41)             // input_len + 4096 - 2: the byte before the closing brace
	b = append(b, wasmtest.SLEB(int64(4094))...)
	b = append(b, 0x6a, 0x2d, 0x00, 0x00) // i32.add; i32.load8_u
	b = append(b, 0x41, ' ', 0x46)        // == ' '
	return b
}

// requestIf emits: if (cond on the stack) request(found) else request(absent).
func requestIf() []byte {
	found, absent := rawRequest("found"), rawRequest("absent")
	b := []byte{0x04, 0x7f} // if (result i32)
	b = append(b, 0x41)
	b = append(b, wasmtest.SLEB(int64(foundAt))...)
	b = append(b, 0x41)
	b = append(b, wasmtest.SLEB(int64(int32(len(found))))...)
	b = append(b, 0x10, 0x00, 0x05, 0x41)
	b = append(b, wasmtest.SLEB(int64(absentAt))...)
	b = append(b, 0x41)
	b = append(b, wasmtest.SLEB(int64(int32(len(absent))))...)
	b = append(b, 0x10, 0x00, 0x0b)
	return b
}

func TestRawGuestIsolation(t *testing.T) {
	const marker = 0x5EC2E7
	// Two mutable globals (i32 and i64) start at 1; run reports "found" if
	// either holds the marker, then writes the marker into both.
	globals := wasmtest.Vec([]byte{0x7f, 0x01, 0x41, 0x01, 0x0b}, []byte{0x7e, 0x01, 0x42, 0x01, 0x0b})
	// Read the input first (after the request every pin_v1 call is ESTATE):
	// flag = args are {"w":1}, stored at address 0.
	globalRun := append(append([]byte{0x41, 0x00}, readsWrite()...), 0x36, 0x02, 0x00)
	globalRun = append(globalRun, 0x23, 0x00, 0x41)
	globalRun = append(globalRun, wasmtest.SLEB(int64(marker))...)
	globalRun = append(globalRun, 0x46, 0x23, 0x01, 0x42)
	globalRun = append(globalRun, wasmtest.SLEB(int64(marker))...)
	globalRun = append(globalRun, 0x51, 0x72) // i32.eq; global.get 1; i64.const; i64.eq; i32.or
	globalRun = append(globalRun, requestIf()...)
	globalRun = append(globalRun, 0x41, 0x00, 0x28, 0x02, 0x00) // flag
	globalRun = append(globalRun, 0x04, 0x40, 0x41)             // if: set both globals to the marker
	globalRun = append(globalRun, wasmtest.SLEB(int64(marker))...)
	globalRun = append(globalRun, 0x24, 0x00, 0x42)
	globalRun = append(globalRun, wasmtest.SLEB(int64(marker))...)
	globalRun = append(globalRun, 0x24, 0x01, 0x0b)

	// The table holds [seven, nine]; run reports "found" if table[0] is
	// nine (call_indirect returns 9), then sets table[0] = nine.
	tableRun := append(append([]byte{0x41, 0x00}, readsWrite()...), 0x36, 0x02, 0x00)
	tableRun = append(tableRun, 0x41, 0x00, 0x11, 0x02, 0x00, 0x41, 0x09, 0x46) // call_indirect (type 2, table 0) of slot 0; == 9
	tableRun = append(tableRun, requestIf()...)
	tableRun = append(tableRun, 0x41, 0x00, 0x28, 0x02, 0x00)
	tableRun = append(tableRun, 0x04, 0x40, 0x41, 0x00, 0xd2, 0x07, 0x26, 0x00, 0x0b) // if: table.set 0 (ref.func 7)

	tests := []struct {
		name     string
		wasm     []byte
		strategy string
	}{
		{"a marker in each global", rawGuest(globals, false, globalRun), IsolationReset},
		{"a marker in the table", rawGuest(nil, true, tableRun), "fresh (function 1 uses table.set)"},
	}
	t.Run("control: without a reset the global marker is observable", func(t *testing.T) {
		env := newEnv(t, func(c *Config) { c.Guest = tests[0].wasm; c.PoolSize = 1 })
		p, herr := env.eng.prepare("github", "list_issues")
		if herr != nil {
			t.Fatal(herr)
		}
		owners := []string{}
		// Both runs on one leased instance, with no reset between them.
		inst, err := env.eng.sb.Lease(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer inst.Return() // it ran: the pool resets it
		for _, args := range []string{rawArgsWrite, rawArgsLook} {
			want, rej := p.bind.Bind([]byte(args))
			if rej != nil {
				t.Fatal(rej)
			}
			st, err := inst.Run(context.Background(), sandbox.Call{
				Input: append(append([]byte(nil), p.prefix...), args...), Op: p.op,
				Admit:    func(r *egress.Request) api.DenyReason { return egress.Admit(p.policy, p.bind, want, r) },
				MaxCalls: 16, MaxLogBytes: 64,
			})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case st.Outcome == sandbox.OutcomeAccepted:
				owners = append(owners, strings.Split(st.Request.URL(), "/")[4])
			case st.Outcome == sandbox.OutcomeDenied && st.Deny == api.DenyNotBound:
				owners = append(owners, "found") // the unbound request
			default:
				t.Fatalf("outcome %v %s", st.Outcome, st.Deny)
			}
		}
		if owners[1] != "found" {
			t.Fatalf("the control op saw %v: the test could not detect a leak", owners)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t, func(c *Config) { c.Guest = tt.wasm; c.PoolSize = 1 })
			if env.eng.Strategy() != tt.strategy {
				t.Fatalf("strategy %q, want %q", env.eng.Strategy(), tt.strategy)
			}
			for i := 0; i < 4; i++ {
				env.fake.Reset()
				args := rawArgsLook
				if i%2 == 0 {
					args = rawArgsWrite // this op leaves the marker; the next one looks
				}
				_, err := env.run("github", "list_issues", args)
				if err != nil && err.Deny == api.DenyNotBound {
					t.Fatalf("op %d observed the marker op %d left (it sent the request for owner found)", i, i-1)
				}
				if err != nil && err.Code != api.CodeUpstreamError {
					t.Fatal(err)
				}
				reqs := env.fake.Requests()
				if len(reqs) != 1 {
					t.Fatalf("op %d: %d requests", i, len(reqs))
				}
				if owner := strings.Split(reqs[0].Path, "/")[2]; owner != "absent" {
					t.Fatalf("op %d observed the marker op %d left", i, i-1)
				}
			}
		})
	}
}
