package registry

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestShippedPicksDeclareClasses: every picked field of every embedded
// manifest declares a data-flow class, and no shipped manifest has a
// warning (no free-text arg of a read op without a format).
func TestShippedPicksDeclareClasses(t *testing.T) {
	for _, f := range shippedFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m, warns, err := Check(f, data)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range warns {
				t.Errorf("warning: %s", w)
			}
			for _, name := range m.OpNames() {
				pk := m.Ops[name].Pick
				if len(pk.Classes) != len(pk.Fields) {
					t.Errorf("%s: %d classes for %d fields", name, len(pk.Classes), len(pk.Fields))
				}
				for _, fld := range pk.Fields {
					if !slices.Contains(Classes(), pk.Class(fld)) {
						t.Errorf("%s: field %s has class %q", name, fld, pk.Class(fld))
					}
				}
			}
		})
	}
	// The embedded snapshot is the same.
	for _, m := range Default().Services() {
		for _, name := range m.OpNames() {
			for _, fld := range m.Ops[name].Pick.Fields {
				if m.Ops[name].Pick.Class(fld) == "" {
					t.Errorf("embedded %s.%s: field %s has no class", m.ID, name, fld)
				}
			}
		}
	}
}

// TestCheckWarnsFreeTextReadArg: a string arg of a read op with neither
// pattern nor enum is accepted with a warning naming its line; a pattern,
// an enum or a write op silences it.
func TestCheckWarnsFreeTextReadArg(t *testing.T) {
	tests := []struct {
		name, from, to string
		warn           bool
	}{
		{name: "free text", from: `"cursor": { "type": "string", "pattern": "^[A-Za-z0-9]+$", "max_length": 64 }`,
			to: `"cursor": { "type": "string", "pattern": "^[A-Za-z0-9]+$", "max_length": 64 }, "q": { "type": "string", "max_length": 64 }`, warn: true},
		{name: "with a pattern", from: `"cursor": { "type": "string", "pattern": "^[A-Za-z0-9]+$", "max_length": 64 }`,
			to: `"cursor": { "type": "string", "pattern": "^[A-Za-z0-9]+$", "max_length": 64 }, "q": { "type": "string", "pattern": "^[a-z]+$", "max_length": 64 }`},
		{name: "with an enum", from: `"cursor": { "type": "string", "pattern": "^[A-Za-z0-9]+$", "max_length": 64 }`,
			to: `"cursor": { "type": "string", "pattern": "^[A-Za-z0-9]+$", "max_length": 64 }, "q": { "type": "string", "enum": ["a", "b"] }`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := acme(t, tt.from, tt.to, `"cursor": "{cursor}"`, `"cursor": "{cursor}", "q": "{q}"`)
			_, warns, err := Check("acme.json", data)
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, w := range warns {
				lines = append(lines, w.String())
			}
			got := strings.Join(lines, "\n")
			if tt.warn != strings.Contains(got, `op "list_items": args.q: string arg "q" of a read op is free text`) {
				t.Errorf("warnings %q, want one: %v", got, tt.warn)
			}
			if tt.warn && !strings.HasPrefix(got, "acme.json:39:") {
				t.Errorf("warning not located at the arg: %q", got)
			}
		})
	}
	// acme's write op has free-text args: no warning for them.
	if _, warns, err := Check("acme.json", acme(t)); err != nil || len(warns) != 0 {
		t.Errorf("acme: %v %v", warns, err)
	}
}

// TestTargetArgs: a write op's target is its declared target or its path
// args in path order; a read op has none.
func TestTargetArgs(t *testing.T) {
	reg := Default()
	tests := []struct{ service, op, want string }{
		{"github", "create_issue", "owner,repo"},
		{"dnsimple", "register_domain", "account,domain"},
		{"linear", "create_issue", "team_id"},
		{"stripe", "create_customer", ""},
		{"github", "list_issues", ""},
	}
	for _, tt := range tests {
		m, _ := reg.Service(tt.service)
		op, _ := m.Op(tt.op)
		if got := strings.Join(op.TargetArgs(), ","); got != tt.want {
			t.Errorf("%s.%s: target %q, want %q", tt.service, tt.op, got, tt.want)
		}
	}
}
