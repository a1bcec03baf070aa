package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/elevenmessenger/pinned/registry"
)

const registryUsage = `Usage:
  pinned registry check FILE...   check manifests with the loader's rules
  pinned registry list            list the services and ops of the embedded registry

check parses each FILE as a manifest (format v1, docs/MANIFEST.md) with the
same fail-closed loader the binary runs on its embedded registry: unknown
fields, repeated keys, a placeholder that is not a declared arg (such as
GraphQL text written "{nodes" instead of "{ nodes"), and every other rule
of the format refuse the file. A file's id must equal its name without
.json, and ids must be unique across the files given. When every file
passes it prints "ok: N manifests"; otherwise it prints one line per
problem on stderr:

  FILE:LINE:COL: op "NAME": FIELD: what is wrong and what would be right

list prints one line per op of the registry built into this binary,
sorted by service and op, under a header line:

  SERVICE  HOST            OP          ACCESS  SUMMARY
  github   api.github.com  get_viewer  read    Who the token belongs to

ACCESS is read or write (a write op needs a write grant and the member's
confirmation). The first four columns are single words; the op names of
one service, for example:

  pinned registry list | awk '$1 == "github" {print $3}'

Exit status: 0 all manifests pass (or the list was printed), 1 a manifest
was refused, 2 bad usage.
`

// runRegistry implements "pinned registry check FILE..." and
// "pinned registry list"; args excludes "registry".
func runRegistry(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(stdout, registryUsage)
		return 0
	}
	bad := func(format string, a ...any) int {
		return flagError(stderr, "registry", fmt.Sprintf(format, a...))
	}
	if len(args) == 0 {
		return bad("missing subcommand: check or list")
	}
	switch sub, rest := args[0], args[1:]; sub {
	case "check":
		var files []string
		dashdash := false
		for _, a := range rest {
			switch {
			case dashdash:
				files = append(files, a)
			case a == "--":
				dashdash = true
			case isHelp(a):
				fmt.Fprint(stdout, registryUsage)
				return 0
			case strings.HasPrefix(a, "-"):
				return bad("check: %s", undefinedFlag(a))
			default:
				files = append(files, a)
			}
		}
		if len(files) == 0 {
			return bad("check: no files given")
		}
		return registryCheck(files, stdout, stderr)
	case "list":
		if len(rest) > 0 {
			if isHelp(rest[0]) {
				fmt.Fprint(stdout, registryUsage)
				return 0
			}
			return bad("list takes no arguments")
		}
		registryList(stdout, registry.Default())
		return 0
	default:
		if strings.HasPrefix(sub, "-") {
			return bad("%s", undefinedFlag(sub))
		}
		return bad("unknown subcommand %q: want check or list", sub)
	}
}

// registryList prints one line per op: service, host, op, access and
// summary, aligned in columns.
func registryList(w io.Writer, reg *registry.Registry) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tHOST\tOP\tACCESS\tSUMMARY")
	for _, m := range reg.Services() {
		for _, name := range m.OpNames() {
			op, _ := m.Op(name)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.ID, m.Host, name, op.Access, op.Summary)
		}
	}
	tw.Flush()
}

func isHelp(a string) bool { return a == "-h" || a == "-help" || a == "--help" || a == "help" }

// registryCheck parses files as manifests, printing every problem on
// stderr, one per line.
func registryCheck(files []string, stdout, stderr io.Writer) int {
	failed := false
	byID := map[string]string{} // id -> first file
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "%s: cannot read: %v\n", f, err)
			failed = true
			continue
		}
		m, err := registry.Parse(f, data)
		if err != nil {
			var e *registry.Error
			if !errors.As(err, &e) {
				e = &registry.Error{Problems: []registry.Problem{{File: f, Msg: err.Error()}}}
			}
			for _, p := range e.Problems {
				fmt.Fprintln(stderr, p.String())
			}
			failed = true
			continue
		}
		if first, dup := byID[m.ID]; dup {
			fmt.Fprintf(stderr, "%s: id: %q is also the id of %s; ids are unique\n", f, m.ID, first)
			failed = true
			continue
		}
		byID[m.ID] = f
	}
	if failed {
		return 1
	}
	fmt.Fprintf(stdout, "ok: %d manifests\n", len(files))
	return 0
}
