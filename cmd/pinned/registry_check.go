package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/elevenmessenger/pinned/registry"
)

const registryUsage = `Usage:
  pinned registry check FILE|DIR...           check manifests with the loader's rules
  pinned registry import openapi FILE OP...   write a draft manifest from an OpenAPI description
  pinned registry lint --openapi FILE MANIFEST...
                                              check manifests' ops against an OpenAPI description
  pinned registry snapshot DIR [-o FILE] [--check]
                                              write the canonical snapshot archive of DIR
  pinned registry sign --key KEY SNAPSHOT     sign a snapshot (minisign, Ed25519)
  pinned registry verify --pubkey KEY SNAPSHOT [--dir DIR]
                                              verify a signed snapshot (and DIR against it)
  pinned registry keygen --out PREFIX         make a snapshot signing key pair
  pinned registry replay DIR --fixtures FIXDIR
                                              run every op against the data fake's fixtures
  pinned registry list [--output table|json]  list the services and ops of the embedded registry
  pinned registry show SERVICE [OP] [--output text|json]
                                              what an op takes, renders, asks and returns
  pinned registry show SERVICE OP --args JSON|@FILE|- [--output text|json]
                                              the exact request the host accepts for those args

check parses each FILE (or every *.json file directly in DIR) as a
manifest (format v1, docs/MANIFEST.md) with the same fail-closed loader
the binary runs on its embedded registry: unknown fields, repeated keys, a
placeholder that is not a declared arg (such as GraphQL text written
"{nodes" instead of "{ nodes"), and every other rule of the format refuse
the file. A file's id must equal its name without .json, and ids must be
unique across the files given. When every file passes it prints
"ok: N manifests"; otherwise it prints one line per problem on stderr:

  FILE:LINE:COL: op "NAME": FIELD: what is wrong and what would be right

A manifest that passes may still print warnings on stderr ("warning:
FILE:LINE:COL: ..."), which do not fail the check: today a string arg of
a read op with neither pattern nor enum (free text a model could fill
with anything another service returned; declare the provider's format).

list prints one line per op of the registry built into this binary,
sorted by service and op, under a header line:

  SERVICE  HOST            OP          ACCESS  SUMMARY
  github   api.github.com  get_viewer  read    Who the token belongs to

ACCESS is read or write (a write op needs a write grant and the member's
confirmation). The first four columns are single words; the op names of
one service, for example:

  pinned registry list | awk '$1 == "github" {print $3}'

list --output json (or --json) prints the registry document, the shape the
sidecar's GET /v1/registry and the broker's GET /registry serve
(docs/API.md): {"digest": "sha256:…", "services": [<manifest>, …]}.

show SERVICE lists the service's host, auth and ops; show SERVICE OP shows
the op: its args with their rules, the confirm sentence of a write, the
request it renders (method, path, query and body templates) and the fields
the pick lets back. --output json prints the manifest (or the op) as
embedded; --output table is the same as text.

show SERVICE OP --args JSON renders the request for those args with the
host's own binding code (host.Render), sending nothing and needing no
credential: the method, the URL with the path and query as sent
(percent-encoded, defaults applied, an absent optional arg's key left
out), the headers the manifest declares, the Content-Type and body, and a
write's confirm sentence as the member sees it. The host sends a request
only if it is exactly this one (query pairs, form pairs and JSON members
may come in any order); it adds the credential, User-Agent and
Accept-Encoding itself, and the credential is never shown. The value of
an arg the manifest marks secret shows as [redacted]. --args takes inline
JSON, @FILE or - (stdin), as pinned op does; args the op refuses give the
bad_args message pinned op gives, and exit 1. With --output json the
answer is one object: {"service", "op", "access", "method", "url",
"headers": [{"name", "value"}], "content_type", "body", "confirm"} (the
last three left out when empty).

  pinned registry show github list_repos --args '{"sort":"pushed"}'
  pinned registry show dnsimple register_domain --args @args.json --json

--manifest FILE (manifest authors only, like pinned op --manifest) shows
that manifest instead of (or besides) the embedded one of its id, with a
warning line; the sidecar has no such flag.

snapshot, sign and verify make and check a signed snapshot of a registry
(pinned registry snapshot --help); keygen makes the Ed25519 signing key.

import and lint are the manifest factory (pinned registry import --help,
pinned registry lint --help): import writes a draft for operations of a
provider's OpenAPI description, which check refuses until a reviewer
deletes its "draft" mark; lint holds every op to the description.

Exit status: 0 all manifests pass (or the list was printed), 1 a manifest
was refused, 2 bad usage.
`

// registrySubcommands are the words after "pinned registry".
var registrySubcommands = []string{"check", "import", "keygen", "lint", "list", "replay", "show", "sign", "snapshot", "verify"}

// runRegistry implements "pinned registry check|import|lint|list|show"; args excludes
// "registry".
func runRegistry(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(stdout, registryUsage)
		return 0
	}
	bad := func(format string, a ...any) int {
		return flagError(stderr, "registry", fmt.Sprintf(format, a...))
	}
	if len(args) == 0 {
		return bad("missing subcommand: check, import, keygen, lint, list, replay, show, sign, snapshot or verify")
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
	case "import":
		return runRegistryImport(rest, stdout, stderr)
	case "snapshot":
		return runRegistrySnapshot(rest, stdout, stderr)
	case "sign":
		return runRegistrySign(rest, stdout, stderr)
	case "verify":
		return runRegistryVerify(rest, stdout, stderr)
	case "keygen":
		return runRegistryKeygen(rest, stdout, stderr)
	case "replay":
		return runRegistryReplay(rest, stdout, stderr)
	case "lint":
		return runRegistryLint(rest, stdout, stderr)
	case "list":
		format, pos, code, ok := outputFlag("registry list", "table", []string{"table", "json"}, rest, stdout, stderr)
		if !ok {
			return code
		}
		if len(pos) > 0 {
			return bad("list takes no arguments")
		}
		if format == "json" {
			b, err := registry.Default().DocumentJSON()
			if err != nil {
				fmt.Fprintf(stderr, "pinned registry list: %v\n", err)
				return 1
			}
			fmt.Fprintf(stdout, "%s\n", b)
			return 0
		}
		registryList(stdout, registry.Default())
		return 0
	case "show":
		var opts showOptions
		format, pos, code, ok := outputFlag("registry show", "text", []string{"text", "table", "json"}, rest, stdout, stderr, func(fs *flag.FlagSet) {
			fs.Func("args", "render the op's request for these args: a `JSON` object, @FILE or - for stdin (as pinned op --args)", func(v string) error {
				opts.args, opts.hasArgs = v, true
				return nil
			})
			fs.StringVar(&opts.manifest, "manifest", "", "MANIFEST AUTHORS ONLY: show this manifest `file` instead of (or besides) the embedded one of its id")
		})
		if !ok {
			return code
		}
		opts.format = format
		if format == "table" {
			opts.format = "text"
		}
		return registryShow(pos, opts, stdout, stderr)
	default:
		if strings.HasPrefix(sub, "-") {
			return bad("%s", undefinedFlag(sub))
		}
		return bad("%s: want check, import, keygen, lint, list, replay, show, sign, snapshot or verify", unknownWord("subcommand", sub, registrySubcommands))
	}
}

// outputFlag parses the flags of a registry subcommand that takes
// positional words and --output FORMAT (--json is --output json), and the
// flags extra defines, if any. ok is false when the command is done
// (help, or a usage error, with its code).
func outputFlag(cmd, def string, formats []string, args []string, stdout, stderr io.Writer, extra ...func(*flag.FlagSet)) (format string, pos []string, code int, ok bool) {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	out := fs.String("output", def, "output `format`: "+strings.Join(formats, " or "))
	asJSON := fs.Bool("json", false, "the same as --output json")
	for _, f := range extra {
		f(fs)
	}
	// Flags may come before or after the words: pinned registry show github --json.
	var flags []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-"):
			flags = append(flags, a)
			if takesValue(fs, a) && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			pos = append(pos, a)
		}
	}
	if c, ok := parseFlags(fs, registryUsage, flags, stdout, stderr); !ok {
		return "", nil, c, false
	}
	if *asJSON {
		*out = "json"
	}
	for _, f := range formats {
		if *out == f {
			return *out, pos, 0, true
		}
	}
	return "", nil, flagError(stderr, cmd, fmt.Sprintf("--output %q: want %s", *out, strings.Join(formats, " or "))), false
}

// takesValue reports whether a ("--name" or "-name", without "=") is a
// defined flag that is not boolean, so the next word is its value.
func takesValue(fs *flag.FlagSet, a string) bool {
	name := strings.TrimLeft(a, "-")
	if strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	b, isBool := f.Value.(interface{ IsBoolFlag() bool })
	return !isBool || !b.IsBoolFlag()
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

// manifestFiles expands the arguments of registry check: a directory
// stands for the *.json files directly in it, sorted.
func manifestFiles(args []string, stderr io.Writer) ([]string, bool) {
	var files []string
	ok := true
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil || !st.IsDir() {
			files = append(files, a)
			continue
		}
		matches, _ := filepath.Glob(filepath.Join(a, "*.json"))
		if len(matches) == 0 {
			fmt.Fprintf(stderr, "%s: a directory without *.json files\n", a)
			ok = false
		}
		files = append(files, matches...)
	}
	return files, ok
}

// registryCheck parses files (or the *.json files of directories) as
// manifests, printing every problem on stderr, one per line.
func registryCheck(args []string, stdout, stderr io.Writer) int {
	files, ok := manifestFiles(args, stderr)
	failed := !ok
	byID := map[string]string{} // id -> first file
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "%s: cannot read: %v\n", f, unwrapPath(err))
			failed = true
			continue
		}
		m, warns, err := registry.Check(f, data)
		if err != nil {
			printProblems(stderr, f, err)
			failed = true
			continue
		}
		for _, w := range warns {
			fmt.Fprintf(stderr, "warning: %s\n", w)
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
	fmt.Fprintf(stdout, "ok: %s\n", plural(len(files), "manifest"))
	return 0
}

// printProblems prints the problems of a refused manifest, one per line.
func printProblems(w io.Writer, file string, err error) {
	var e *registry.Error
	if !errors.As(err, &e) {
		e = &registry.Error{Problems: []registry.Problem{{File: file, Msg: err.Error()}}}
	}
	for _, p := range e.Problems {
		fmt.Fprintln(w, p.String())
	}
}

// unwrapPath drops the path of an *os.PathError (the line names it).
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// plural is "1 manifest", "2 manifests".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
