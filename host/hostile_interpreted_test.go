package host

import (
	"strings"
	"testing"
)

// interpretedPrefix names TestHostileInterpreted's subtests: newEnv gives
// their engines Config.interpreter, so every op runs in a fresh instance
// on wazero's interpreter, as a cold start's ops do until the compiler's
// code is ready (Config.PoolInBackground).
const interpretedPrefix = "TestHostileInterpreted/"

// interpreted reports whether t runs under TestHostileInterpreted.
func interpreted(t testing.TB) bool { return strings.HasPrefix(t.Name(), interpretedPrefix) }

// TestHostileInterpreted runs the hostile suites whose engines newEnv
// builds again with every op on wazero's interpreter: the boundary (the
// host functions, the egress check, the memory limit, the deadline) is
// the same code on either engine, and this proves it holds there.
func TestHostileInterpreted(t *testing.T) {
	if testing.Short() {
		t.Skip("the interpreter runs the suites several times slower")
	}
	// The suites that reach what differs between the engines: the guest's
	// memory as the host functions read and write it, the memory limit,
	// WASI, and the deadline (the interpreter's call stack too). Binding,
	// pick and the egress policy run before or after the guest, in the
	// host alone.
	suites := []struct {
		name string
		test func(*testing.T)
	}{
		{"Egress", TestHostileEgress},
		{"Resources", TestHostileResources},
		{"WASI", TestHostileWASI},
		{"DeadlineEndsBulkMemory", TestDeadlineEndsBulkMemory},
		{"DeadlineEndsBulkMemoryLoop", TestDeadlineEndsBulkMemoryLoop},
		{"DeadlineEndsStraightLineCode", TestDeadlineEndsStraightLineCode},
		{"DeadlineEndsHostCalls", TestDeadlineEndsHostCalls},
		{"DeadlineEndsTreeRecursion", TestDeadlineEndsTreeRecursion},
	}
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			if !interpreted(t) {
				t.Fatalf("subtest %q is not under %q: its engines would not be interpreted", t.Name(), interpretedPrefix)
			}
			s.test(t)
		})
	}
}
