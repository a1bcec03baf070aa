// Package abi defines the pin_v1 host ABI shared by the host and the guest:
// the import module and function names, the export the host calls, the
// result codes and the reject reasons. It exports only constants, so
// nothing in it can be changed at run time.
//
// docs/ABI.md documents every function with its parameters, what the host
// checks and every result code; a test keeps that document, the host's
// registered functions and the guest's imports equal.
//
// Codes cross the boundary as small integers, never as Go error text
// (DESIGN.md, ABI invariant 7): the host logs the reason on its side.
package abi

// ModuleName is the import module of the host functions.
const ModuleName = "pin_v1"

// Host functions of ModuleName. Every one takes and returns i32 values.
const (
	// FuncInputLen is input_len() -> i32: the byte length of the op input.
	FuncInputLen = "input_len"
	// FuncInputRead is input_read(buf, buf_len) -> i32: copy the op input.
	FuncInputRead = "input_read"
	// FuncRequest is request(buf, buf_len) -> i32: submit the request.
	FuncRequest = "request"
	// FuncReject is reject(reason, name, name_len) -> i32: refuse the args.
	FuncReject = "reject"
)

// Exports the guest provides.
const (
	// ExportInitialize is the WASI reactor initializer, called once per
	// instance before anything else.
	ExportInitialize = "_initialize"
	// ExportRun is run() -> i32, called once per op. Its result is
	// informational only: the op's outcome is what the host recorded from
	// request or reject.
	ExportRun = "run"
	// ExportMemory is the guest's linear memory.
	ExportMemory = "memory"
)

// Result codes of the pin_v1 functions. A non-negative result is success
// (a length or OK); a negative result is one of these.
const (
	// OK means the call did what it was asked.
	OK int32 = 0
	// EFAULT means a pointer/length pair lies outside guest memory.
	EFAULT int32 = -1
	// EINVAL means an argument is malformed: a request that is not the
	// documented encoding, an unknown reject reason, a bad name.
	EINVAL int32 = -2
	// ERANGE means a buffer length does not equal the length required.
	ERANGE int32 = -3
	// EDENIED means the egress policy refused the request; the reason is
	// recorded host-side only.
	EDENIED int32 = -4
	// ETOOBIG means the encoded request exceeds MaxRequestBytes.
	ETOOBIG int32 = -5
	// ESTATE means the call is not allowed now: the op's outcome is
	// already fixed (a request was accepted or the args were rejected), or
	// no op is running (e.g. during _initialize).
	ESTATE int32 = -6
	// ELIMIT means the op's budget of host calls is spent.
	ELIMIT int32 = -7
)

// Reject reasons, the first parameter of reject. Each names the rule an
// argument broke; the host renders the human message from the reason, the
// argument's name and the op's declaration.
const (
	// RejectSyntax: the args are not a JSON object of unique keys.
	RejectSyntax int32 = 1
	// RejectUndeclared: an argument the op does not declare.
	RejectUndeclared int32 = 2
	// RejectMissing: a required argument is absent.
	RejectMissing int32 = 3
	// RejectType: the value is not of the declared type.
	RejectType int32 = 4
	// RejectEnum: the value is not one of the declared enum values.
	RejectEnum int32 = 5
	// RejectPattern: the value does not match the declared pattern.
	RejectPattern int32 = 6
	// RejectMin: the value is below the declared minimum.
	RejectMin int32 = 7
	// RejectMax: the value is above the declared maximum.
	RejectMax int32 = 8
	// RejectLength: the string is longer than its max_length.
	RejectLength int32 = 9
	// RejectValue: the value cannot be placed where the op puts it (an
	// empty, "." or ".." path segment; a control character).
	RejectValue int32 = 10
)

// MaxRequestBytes bounds the encoded request a guest may submit.
const MaxRequestBytes = 256 << 10

// MaxNameBytes bounds the argument name passed to reject.
const MaxNameBytes = 64
