package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/registry/openapi"
)

const registryImportUsage = `Usage:
  pinned registry import openapi FILE --list
  pinned registry import openapi FILE [--id ID] [--name NAME] [--viewer OP] [-o OUT] OP...

Writes a DRAFT manifest for the operations OP of the OpenAPI description
FILE (2.0, 3.0 or 3.1; JSON or YAML; local references only). Name each
OP by its operationId or as "METHOD /path" (quoted); --list prints them.

The draft has the host of the description's first server, the auth its
security scheme says (OAuth endpoints and, per connection, the scopes of
the read and of all chosen operations), and per operation: method, path,
args from the parameters and the request body (types, required, enums,
patterns, bounds, defaults), the body kind, pagination where it is
recognisable, a write's confirm sentence naming every arg it always
sends, and a pick from the 2xx answer with each field's data-flow class.
Free text is left out of the pick and listed under draft.text_off.

The draft begins with a "draft" mark, which pinned registry check refuses:
a reviewer reads every op against the provider's reference, follows the
notes under draft.review, turns on the free text wanted (moving fields
of draft.text_off into pick.fields as "text"), and deletes the mark.
docs/MANIFEST.md, "Adding a service in an afternoon", walks through it.

The draft goes to stdout, or to OUT with -o (never over an existing
file). Exit status: 0 written, 1 the description or an OP is refused,
2 bad usage.
`

const registryLintUsage = `Usage:
  pinned registry lint --openapi FILE [--op OP]... MANIFEST...

Checks each op of each MANIFEST against the provider's OpenAPI
description FILE: the method and path exist; every path placeholder,
query key, form key and JSON body member is a parameter or property the
description declares, with a compatible type and enum; a header the
description declares has a value it allows, and none it requires is
missing; every picked path, and every path paginate reads, is in the 2xx
answer's schema. --op checks only the ops named (repeatable).

It prints one line per disagreement on stderr,

  MANIFEST: op "NAME": FIELD: what disagrees and what the description has

and "ok: N ops agree with FILE" when none. Exit status: 0 they agree,
1 a disagreement (or a file that cannot be read), 2 bad usage.
`

// runRegistryImport implements "pinned registry import openapi".
func runRegistryImport(args []string, stdout, stderr io.Writer) int {
	const cmd = "registry import"
	if len(args) > 0 && isHelp(args[0]) || len(args) > 1 && args[0] == "openapi" && isHelp(args[1]) {
		fmt.Fprint(stdout, registryImportUsage)
		return 0
	}
	if len(args) == 0 {
		return flagError(stderr, cmd, "missing the description's format: pinned registry import openapi FILE OP...")
	}
	if args[0] != "openapi" {
		return flagError(stderr, cmd, unknownWord("format", args[0], []string{"openapi"})+": want openapi")
	}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	var opts openapi.ImportOptions
	fs.StringVar(&opts.ID, "id", "", "the manifest `id` (default: from the description's title)")
	fs.StringVar(&opts.Name, "name", "", "the service's human `name` (default: the title)")
	fs.StringVar(&opts.Viewer, "viewer", "", "the `op` that says who the credential belongs to")
	out := fs.String("o", "", "write the draft to `file` (default stdout)")
	list := fs.Bool("list", false, "list the description's operations")
	pos, code, ok := interleaved(fs, args[1:], registryImportUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return flagError(stderr, cmd, "missing the description FILE")
	}
	d, code := loadDescription(pos[0], stderr)
	if d == nil {
		return code
	}
	if *list {
		tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "METHOD\tPATH\tOPERATION ID")
		for _, o := range d.Operations() {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", o.Method, o.Path, o.ID)
		}
		tw.Flush()
		return 0
	}
	opts.Ops = pos[1:]
	if len(opts.Ops) == 0 {
		return flagError(stderr, cmd, "no operations given: name them by operationId or as \"METHOD /path\" (--list prints them)")
	}
	draft, err := openapi.Import(d, opts)
	if err != nil {
		fmt.Fprintf(stderr, "pinned %s: %v\n", cmd, err)
		return 1
	}
	if *out == "" {
		_, _ = stdout.Write(draft)
		return 0
	}
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		fmt.Fprintf(stderr, "pinned %s: %v\n", cmd, unwrapPath(err))
		return 1
	}
	if _, err := f.Write(draft); err != nil || f.Close() != nil {
		fmt.Fprintf(stderr, "pinned %s: writing %s failed\n", cmd, *out)
		return 1
	}
	fmt.Fprintf(stderr, "wrote the draft %s: review it (docs/MANIFEST.md, \"Adding a service in an afternoon\"), then pinned registry check %s\n", *out, *out)
	return 0
}

// runRegistryLint implements "pinned registry lint".
func runRegistryLint(args []string, stdout, stderr io.Writer) int {
	const cmd = "registry lint"
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	desc := fs.String("openapi", "", "the provider's OpenAPI description `file`")
	var only []string
	fs.Func("op", "check only this `op` (repeatable)", func(v string) error {
		only = append(only, v)
		return nil
	})
	pos, code, ok := interleaved(fs, args, registryLintUsage, stdout, stderr)
	if !ok {
		return code
	}
	switch {
	case *desc == "":
		return flagError(stderr, cmd, "--openapi FILE is required: the provider's description to check against")
	case len(pos) == 0:
		return flagError(stderr, cmd, "no manifests given")
	}
	d, code := loadDescription(*desc, stderr)
	if d == nil {
		return code
	}
	files, ok := manifestFiles(pos, stderr)
	failed, checked := !ok, 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "%s: cannot read: %v\n", f, unwrapPath(err))
			failed = true
			continue
		}
		m, err := registry.Parse(f, data)
		if err != nil {
			printProblems(stderr, f, err)
			failed = true
			continue
		}
		names := only
		if len(names) == 0 {
			names = m.OpNames()
		}
		var findings []openapi.Finding
		for _, n := range names {
			if _, ok := m.Op(n); !ok {
				fmt.Fprintf(stderr, "%s: --op %q: no such op (ops: %s)\n", f, n, strings.Join(m.OpNames(), ", "))
				failed = true
				continue
			}
			findings = append(findings, openapi.LintOp(d, m, n)...)
			checked++
		}
		for _, fd := range findings {
			fmt.Fprintf(stderr, "%s: %s\n", f, fd)
			failed = true
		}
	}
	if failed {
		return 1
	}
	fmt.Fprintf(stdout, "ok: %s agree with %s\n", plural(checked, "op"), filepath.Base(*desc))
	return 0
}

// loadDescription reads and loads an OpenAPI description, printing why
// it cannot (nil and the exit code then).
func loadDescription(file string, stderr io.Writer) (*openapi.Description, int) {
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "%s: cannot read: %v\n", file, unwrapPath(err))
		return nil, 1
	}
	d, err := openapi.Load(filepath.Base(file), data)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return nil, 1
	}
	return d, 0
}

// interleaved parses flags that may come before, between or after the
// positional words; ok is false when the command is done (help or a
// usage error, with its code).
func interleaved(fs *flag.FlagSet, args []string, usage string, stdout, stderr io.Writer) (pos []string, code int, ok bool) {
	var flags []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && a != "-":
			flags = append(flags, a)
			if takesValue(fs, a) && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			pos = append(pos, a)
		}
	}
	if c, ok := parseFlags(fs, usage, flags, stdout, stderr); !ok {
		return nil, c, false
	}
	return pos, 0, true
}
