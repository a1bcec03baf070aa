package host

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/testing/wasmtest"
	"github.com/elevenmessenger/pinned/secret"
)

// tableGrowGuest's run grows a funcref table (declared with no maximum)
// by delta entries.
func tableGrowGuest(delta int32, tables ...[]byte) []byte {
	run := []byte{0xd0, 0x70, 0x41} // ref.null func; i32.const delta
	run = append(run, wasmtest.SLEB(int64(delta))...)
	run = append(run, 0xfc, 0x0f, 0x00, 0x1a, 0x41, 0x00) // table.grow 0; drop; i32.const 0
	m := &wasmtest.Module{
		Types:   [][2][]byte{{nil, nil}, {nil, {wasmtest.I32}}},
		Imports: []wasmtest.Import{{Mod: "wasi_snapshot_preview1", Name: "sched_yield", Type: 1}},
		Funcs:   []wasmtest.Func{{Type: 0}, {Type: 1, Code: run}},
		Tables:  append([][]byte{{0x70, 0x00, 0x00}}, tables...), // funcref, min 0, no max
		MemMin:  1, MemMax: -1,
		Exports: []wasmtest.Export{{Name: "_initialize", Kind: 0, Idx: 1}, {Name: "run", Kind: 0, Idx: 2}, {Name: "memory", Kind: 2, Idx: 0}},
		Start:   -1,
	}
	return m.Bytes()
}

// TestTableGrowCannotKillProcess: MemoryLimitPages bounds linear
// memory only. A table has no limit but wazero's 2^32-1 entries, and
// table.grow allocates its 8-byte entries on the Go heap: one
// table.grow(null, 0xfffffff0) asks the Go runtime for 32 GiB, which
// (on any host with less) is a fatal "out of memory" that no recover can
// catch: the whole process, every op in flight, dies. (Smaller deltas
// take gigabytes of address space and heap accounting per op, far past
// the memory cap.) Run in a child process.
func TestTableGrowCannotKillProcess(t *testing.T) {
	if os.Getenv("PINNED_TABLEGROW_CHILD") == "1" && os.Getenv("PINNED_TABLEGROW_GUEST") != "" {
		fake, err := fakeapi.New()
		if err != nil {
			t.Fatal(err)
		}
		defer fake.Close()
		eng, err := New(context.Background(), Config{
			Guest:    tableGrowGuests[os.Getenv("PINNED_TABLEGROW_GUEST")](),
			Timeout:  2 * time.Second,
			Override: &Override{Addr: fake.Addr(), CAPEM: fake.CACertPEM()},
		})
		if err != nil {
			t.Logf("refused: %v", err)
			os.Stdout.WriteString("CHILD-SURVIVED\n")
			return
		}
		defer eng.Close(context.Background())
		_, err = eng.Run(context.Background(), Call{Service: "github", Op: "list_issues", Args: json.RawMessage(`{}`), Credential: Credential{Secret: secret.Secret(fakeapi.Token("github"))}})
		t.Logf("op: %v", err)
		os.Stdout.WriteString("CHILD-SURVIVED\n")
		return
	}
	for name := range tableGrowGuests {
		t.Run(name, func(t *testing.T) { tableGrowChild(t, name) })
	}
}

// tableGrowGuests: table.grow by 0xfffffff0 entries (32 GiB).
var tableGrowGuests = map[string]func() []byte{
	"grow": func() []byte { return tableGrowGuest(-16) },
}

func tableGrowChild(t *testing.T, guest string) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestTableGrowCannotKillProcess$", "-test.v")
	cmd.Env = append(os.Environ(), "PINNED_TABLEGROW_CHILD=1", "PINNED_TABLEGROW_GUEST="+guest)
	out, err := cmd.CombinedOutput()
	s := string(out)
	if i := strings.Index(s, "fatal error"); i >= 0 {
		s = s[i:min(len(s), i+300)]
	} else if len(s) > 600 {
		s = s[len(s)-600:]
	}
	t.Logf("child: %v\n%s", err, s)
	if err != nil || !strings.Contains(string(out), "CHILD-SURVIVED") {
		t.Fatalf("one guest's tables killed the host process (%v)", err)
	}
}

// TestTablesWithinMemoryLimit: a table's initial size is not
// bounded by MemoryLimitPages either (wazero allows 2^27 entries, 1 GiB
// of Go heap, per table, and a module may declare many). One op with a
// 32 MiB memory limit allocates a 1 GiB table and fills it (table.fill:
// resident memory, not just address space).
func TestTablesWithinMemoryLimit(t *testing.T) {
	run := []byte{0x41, 0x00, 0xd0, 0x70, 0x41} // i32.const 0; ref.null func; i32.const 2^27
	run = append(run, wasmtest.SLEB(1<<27)...)
	run = append(run, 0xfc, 0x11, 0x00, 0x41, 0x00) // table.fill 0; i32.const 0
	m := &wasmtest.Module{
		Types:   [][2][]byte{{nil, nil}, {nil, {wasmtest.I32}}},
		Imports: []wasmtest.Import{{Mod: "wasi_snapshot_preview1", Name: "sched_yield", Type: 1}},
		Funcs:   []wasmtest.Func{{Type: 0}, {Type: 1, Code: run}},
		Tables:  [][]byte{append([]byte{0x70, 0x01}, append(wasmtest.ULEB(1<<27), wasmtest.ULEB(1<<27)...)...)},
		MemMin:  1, MemMax: -1,
		Exports: []wasmtest.Export{{Name: "_initialize", Kind: 0, Idx: 1}, {Name: "run", Kind: 0, Idx: 2}, {Name: "memory", Kind: 2, Idx: 0}},
		Start:   -1,
	}
	fake, err := fakeapi.New()
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	eng, err := New(context.Background(), Config{
		Guest:            m.Bytes(),
		Timeout:          5 * time.Second,
		MemoryLimitPages: 512,
		Override:         &Override{Addr: fake.Addr(), CAPEM: fake.CACertPEM()},
	})
	if err != nil {
		t.Logf("refused: %v", err)
		return
	}
	defer eng.Close(context.Background())
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, herr := eng.Run(context.Background(), Call{Service: "github", Op: "list_issues", Args: json.RawMessage(`{}`), Credential: Credential{Secret: secret.Secret(fakeapi.Token("github"))}})
	runtime.ReadMemStats(&after)
	grew := after.TotalAlloc - before.TotalAlloc
	t.Logf("op: %v; Go heap allocated during the op: %d MiB (memory limit 32 MiB)", herr, grew>>20)
	if grew > 256<<20 {
		t.Fatalf("one op allocated %d MiB of host memory with a 32 MiB memory limit: tables are not bounded", grew>>20)
	}
}
