package main

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/registry"
)

// TestCheckArgsMatchesEngine pins checkArgs (what grant seal refuses,
// host.ValidateArgs: the host's own argument rules) to the engine: for
// args of every op that break each kind of rule, and for valid ones, the
// engine's Check — the sandboxed guest, as the sidecar runs it — answers
// the same.
func TestCheckArgsMatchesEngine(t *testing.T) {
	useTestCache(t)
	ctx := context.Background()
	eng, err := host.New(ctx, host.Config{CacheDir: defaultCacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(ctx)

	type tc struct{ service, op, args string }
	var cases []tc
	for _, d := range demoOps() { // valid args
		cases = append(cases, tc(d))
	}
	long := strings.Repeat("a", registry.DefaultMaxLength+1)
	bad := []string{`"x"`, `""`, `"."`, `".."`, `"a/b"`, `"line\nbreak"`, `"` + long + `"`, `1`, `-1`, `1.5`, `1e300`,
		`9007199254740993`, `true`, `null`, `{}`, `[]`}
	for _, m := range registry.Default().Services() {
		for _, name := range m.OpNames() {
			op, _ := m.Op(name)
			add := func(args string) { cases = append(cases, tc{m.ID, name, args}) }
			add(`{}`)
			add(`{"x":1}`)
			add(`{"Bad Name\u0007":1}`)
			add(`{"` + strings.Repeat("n", 300) + `":1}`)
			add(`[]`)
			add(`{"a":`)
			add(`{"a":1,"a":2}`)
			base := validArgs(t, m, name, op)
			add(objectText(base))
			for _, arg := range op.ArgNames() {
				for _, v := range bad {
					add(objectText(base, arg, v))
				}
				add(objectText(base, arg, ""))
				add(`{"` + arg + `":1,"` + arg + `":1}`)
			}
		}
	}
	rejected := 0
	// Each rule the host has a message for, by a fragment of the message.
	rules := map[string]int{"has no arg": 0, "is required": 0, "must be a": 0, "must be an integer": 0, "must be true or false": 0,
		"must be one of": 0, "must match": 0, "must be at least": 0, "must be at most": 0, "characters": 0, "cannot be used here": 0,
		"args must be a JSON object with unique keys": 0}
	// No manifest has a path arg whose pattern lets "", "." or ".." through.
	delete(rules, "cannot be used here")
	for _, c := range cases {
		m, _ := registry.Default().Service(c.service)
		op, _ := m.Op(c.op)
		got, err := checkArgs(m, c.op, op, []byte(c.args))
		if err != nil {
			t.Fatalf("%s.%s %.80s: %v", c.service, c.op, c.args, err)
		}
		want := ""
		if _, err := eng.Check(ctx, c.service, c.op, json.RawMessage(c.args)); err != nil {
			var he *host.Error
			if !errors.As(err, &he) || he.Code != api.CodeBadArgs {
				t.Errorf("%s.%s %.80s: the engine answered %v, not bad_args", c.service, c.op, c.args, err)
				continue
			}
			want = he.Message
			rejected++
			for r := range rules {
				if strings.Contains(want, r) {
					rules[r]++
				}
			}
		}
		if got != want {
			t.Errorf("%s.%s %.80s:\n got %q\nwant %q (the engine's)", c.service, c.op, c.args, got, want)
		}
	}
	if rejected == 0 || rejected == len(cases) {
		t.Fatalf("%d of %d cases rejected: the cases do not exercise both outcomes", rejected, len(cases))
	}
	for r, n := range rules {
		if n == 0 {
			t.Errorf("no case broke the rule %q", r)
		}
	}
	t.Logf("%d cases, %d rejected: %v", len(cases), rejected, rules)
}

// validArgs finds args op accepts: an enum's first value, else the first
// of a few candidates its rules let through.
func validArgs(t *testing.T, m *registry.Manifest, name string, op *registry.Op) map[string]string {
	t.Helper()
	candidates := []string{`"example.com"`, `"abc"`, `"12345"`, `"00000000-0000-0000-0000-000000000000"`, `"cus_abc"`, `"ch_abc"`, `"ENG-1"`, `1`, `true`}
	args := map[string]string{}
	tried := map[string]int{}
	// The fake's example args are valid; start from their required ones.
	var ex map[string]json.RawMessage
	_ = json.Unmarshal(fakeapi.Example(m.ID, name), &ex)
	for a, v := range ex {
		if op.Args[a] != nil && op.Args[a].Required {
			args[a] = string(v)
		}
	}
	for range 100 {
		var rej *host.Error
		if err := host.ValidateArgs(m, name, []byte(objectText(args)), 0); err == nil {
			return args
		} else if !errors.As(err, &rej) {
			t.Fatal(err)
		}
		if rej.Code != api.CodeBadArgs {
			t.Fatal(rej)
		}
		a := op.Args[rej.Arg]
		if a == nil || tried[rej.Arg] >= len(candidates) {
			break
		}
		if len(a.Enum) > 0 && tried[rej.Arg] == 0 {
			args[rej.Arg] = strconv.Quote(a.Enum[0])
			tried[rej.Arg] = len(candidates) - 1
		} else {
			args[rej.Arg] = candidates[tried[rej.Arg]]
		}
		tried[rej.Arg]++
	}
	t.Fatalf("%s.%s: found no valid args (got to %s)", m.ID, name, objectText(args))
	return nil
}

// objectText is args as a JSON object, with arg set to v (or removed,
// when v is "") when given.
func objectText(args map[string]string, set ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	names := slices.Sorted(maps.Keys(args))
	if len(set) == 2 && !slices.Contains(names, set[0]) {
		names = append(names, set[0])
	}
	n := 0
	for _, name := range names {
		v := args[name]
		if len(set) == 2 && name == set[0] {
			v = set[1]
		}
		if v == "" {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(strconv.Quote(name) + ":" + v)
	}
	b.WriteByte('}')
	return b.String()
}
