package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/secret"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/registry"
)

const opUsage = `Usage: pinned op --service S --op O [--args JSON] [flags]

Runs one op of the embedded registry through the sandbox and prints the
projected result as JSON on stdout.

The credential is read from the environment variable named by --token-env
(default PINNED_TOKEN); it is never accepted on the command line, where it
would land in shell history and process listings.

A write op first prints its consent, rendered from the args (what a
member's consent shows): the target, the confirm sentence and every other
value the request will carry, whole ("Also sent:"); then it asks on a
terminal. Without a terminal it runs only with --yes.

--args takes the JSON object inline, from a file (--args @args.json) or
from stdin (--args -).

Examples:
  PINNED_TOKEN=ghp_... pinned op --service github --op list_repos --args '{"per_page":100}'
  pinned op --fake --service github --op list_repos --args '{"per_page":100}' -v
  pinned op --connect-to 127.0.0.1:8443 --cacert ca.pem --service stripe --op list_customers
  pinned op --fake --service stripe --op list_customers --args '{"limit":100}' --pages 3

An op that pages (its manifest declares paginate) prints, on stderr, the
args of the next page ("next: {...}": pass them as --args to go on) and,
when paging stopped for a reason, "stopped: <reason>: <why>". --pages N
follows next in the host, up to N pages (at most the op's max_pages),
and prints the items of all of them as one list.

Exit status: 0 success, 1 the op failed (the error code and message are
printed on stderr: unknown_service, unknown_op, bad_args, upstream_error,
...), 2 bad usage (an unknown flag, a missing or malformed flag value, a
credential the host would refuse, such as one with a space in it, a
--cache-dir that cannot be used or that others can write).

Flags:
`

func runOp(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("op", flag.ContinueOnError)
	service := fs.String("service", "", "`id` of the service, e.g. github (see pinned registry list)")
	opName := fs.String("op", "", "`name` of the op, e.g. list_repos (see pinned registry show SERVICE)")
	argsFlag := fs.String("args", "{}", "op arguments: a `JSON` object, @FILE to read it from a file, or - for stdin")
	tokenEnv := fs.String("token-env", "PINNED_TOKEN", "environment `variable` holding the credential")
	kind := fs.String("kind", "pat", "credential kind: `pat|oauth` (pat: a pasted token, sent as the manifest's scheme says; oauth: always Bearer)")
	tenant, user, userEnv := connectionFlags(fs)
	useFake := fs.Bool("fake", false, "run against an in-process provider fake (uses its token when the env var is unset)")
	connectTo := fs.String("connect-to", "", "send every pinned host to this `ip:port` (a running pinned fakeapi); needs --cacert")
	caFile := fs.String("cacert", "", "PEM `file` of an extra CA to trust with --connect-to")
	timeout := fs.Duration("timeout", host.DefaultTimeout, "deadline for the whole op, with a unit (e.g. 30s, 2m); 0 means no deadline")
	yes := fs.Bool("yes", false, "run a write op without asking (needed for writes when stdin is not a terminal)")
	manifestFile := fs.String("manifest", "", "MANIFEST AUTHORS ONLY: use this manifest `file` instead of (or besides) the embedded one of its id; the sidecar has no such flag")
	fixtures := fs.String("fixtures", "", "MANIFEST AUTHORS ONLY: with --fake and --manifest, the fake serves the manifest from the fixtures in this `directory` (the layout of internal/demo/fakeapi/testdata/<id>/) and its credential is theirs")
	cacheDir := fs.String("cache-dir", defaultCacheDir(), "compiled-code cache `directory`, writable by you only (empty: compile in memory)")
	verbose := fs.Bool("v", false, "print the status and the raw and projected sizes on stderr")
	pretty := fs.Bool("pretty", false, "indent the JSON output")
	pages := fs.Int("pages", 0, "follow next in the host for up to `N` pages (1 to the op's max_pages) and print all their items; 0 reads one page")
	output := fs.String("output", "json", "output `format`: json (the projected result, one line; --pretty indents it) or table (a list as rows, an object as KEY VALUE lines)")
	if code, ok := parseFlags(fs, opUsage, args, stdout, stderr); !ok {
		return code
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "pinned op: "+format+"\n", a...)
		return 2
	}
	if *service == "" {
		return usage("--service is required: one of %s (pinned registry list shows their ops)", joinList(serviceIDs()))
	}
	if *opName == "" {
		if m, ok := registry.Default().Service(*service); ok {
			return usage("--op is required: %s's ops are %s (pinned registry show %s explains each)", *service, joinList(m.OpNames()), *service)
		}
		return usage("--op is required (see pinned registry list)")
	}
	if *output != "json" && *output != "table" {
		return usage("--output must be json or table, not %q", *output)
	}
	argsJSON, err := readArgs(*argsFlag)
	if err != nil {
		return usage("--args%s", err)
	}
	if *pages < 0 {
		return usage("--pages must be 1 or more (0, the default, reads one page), not %d", *pages)
	}
	if *kind != "pat" && *kind != "oauth" {
		return usage("--kind must be pat or oauth, not %q", *kind)
	}
	if *timeout < 0 {
		return usage("--timeout must not be negative (0 means no deadline)")
	}
	if *useFake && *connectTo != "" {
		return usage("--fake and --connect-to exclude each other")
	}
	if *connectTo != "" {
		if _, err := netip.ParseAddrPort(*connectTo); err != nil {
			return usage("--connect-to %q: want ip:port, the address pinned fakeapi printed (e.g. 127.0.0.1:8443)", *connectTo)
		}
		if *caFile == "" {
			return usage("--connect-to needs --cacert (the CA file pinned fakeapi --ca-out wrote)")
		}
	} else if *caFile != "" {
		return usage("--cacert needs --connect-to (it is the CA of the pinned fakeapi --connect-to names; --fake and real providers need none)")
	}
	reg := registry.Default()
	if *manifestFile != "" {
		r, code := registryWithManifest(*manifestFile, stderr)
		if r == nil {
			return code
		}
		reg = r
	}
	m, ok := reg.Service(*service)
	if !ok {
		ids := reg.IDs()
		fmt.Fprintf(stderr, "pinned op: unknown_service: %s (services: %s)\n", unknownWord("service", *service, ids), joinList(ids))
		return 1
	}
	op, ok := m.Op(*opName)
	if !ok {
		fmt.Fprintf(stderr, "pinned op: unknown_op: service %s has %s (ops: %s)\n", *service, noSuchOp(*opName, m), joinList(m.OpNames()))
		return 1
	}

	// The engine holds the one service the op is of: it warms that
	// service's ops only.
	one, err := reg.Only(*service)
	if err != nil {
		fmt.Fprintf(stderr, "pinned op: %s\n", errText(err))
		return 1
	}
	cfg := host.Config{Timeout: *timeout, CacheDir: *cacheDir, Registry: one}
	if *timeout == 0 {
		cfg.Timeout = noDeadline
	}
	token := os.Getenv(*tokenEnv)
	fromEnv := token != ""
	switch {
	case *fixtures != "" && (!*useFake || *manifestFile == ""):
		return usage("--fixtures needs --fake and --manifest (the fake serves that manifest from them)")
	case *useFake:
		var opts []fakeapi.Option
		if *fixtures != "" {
			if st, err := os.Stat(*fixtures); err != nil || !st.IsDir() {
				return usage("--fixtures %s: not a directory of fixture files", *fixtures)
			}
			opts = append(opts, fakeapi.WithService(m, os.DirFS(*fixtures)))
		}
		fake, err := fakeapi.New(opts...)
		if err != nil {
			fmt.Fprintf(stderr, "pinned op: start the provider fake: %s\n", errText(err))
			return 1
		}
		defer fake.Close()
		cfg.Override = &host.Override{Addr: fake.Addr(), CAPEM: fake.CACertPEM()}
		ftoken, fuser, ftenant := fake.Connection(*service)
		if token == "" {
			token = ftoken
			if *kind == "oauth" {
				token = fakeapi.OAuthToken(*service)
			} else if *user == "" && *userEnv == "" {
				*user = fuser
			}
		}
		if *tenant == "" {
			*tenant = ftenant
		}
	case *connectTo != "":
		pem, err := os.ReadFile(*caFile)
		if err != nil {
			return usage("--cacert: %v", err)
		}
		cfg.Override = &host.Override{Addr: *connectTo, CAPEM: pem}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return usage("--cacert %s: no PEM certificate in it (pinned fakeapi --ca-out writes one)", *caFile)
		}
	}
	if token == "" {
		if *useFake {
			// The fake has no token of a service it does not serve (a new
			// manifest under --manifest).
			return usage("no credential: the provider fake has no token for service %s; set %s", *service, *tokenEnv)
		}
		return usage("no credential: set %s (or use --fake)", *tokenEnv)
	}
	if he := credentialError(host.Credential{Kind: *kind, Secret: secret.Secret(token)}); he != nil {
		return usage("%s: %s in %s: %s", he.Code, he.Message, *tokenEnv, credentialHint)
	}
	cred, msg := connectionCredential(m, *kind, token, *tenant, *user, *userEnv)
	if msg != "" {
		return usage("%s", msg)
	}

	ctx := context.Background()
	eng, err := host.New(ctx, cfg)
	if err != nil {
		return engineFailed(stderr, "op", err)
	}
	defer eng.Close(ctx)
	if op.Access == registry.AccessWrite {
		// With --args -, stdin held the args: it cannot answer the question.
		interactive := *argsFlag != "-"
		if code, ok := confirmWrite(ctx, eng, *service, *opName, argsJSON, *yes, interactive, stderr); !ok {
			return code
		}
	}
	res, err := eng.Run(ctx, host.Call{
		Service: *service, Op: *opName, Args: json.RawMessage(argsJSON),
		Credential: cred,
		Pages:      *pages,
	})
	if err != nil {
		var he *host.Error
		if errors.As(err, &he) {
			printOpError(stderr, he, *verbose)
			if he.Status == http.StatusUnauthorized {
				switch {
				case *useFake && fromEnv:
					fmt.Fprintf(stderr, "pinned op: the credential came from %s; unset it to use the fake's own token\n", *tokenEnv)
				case !*useFake:
					fmt.Fprintf(stderr, "pinned op: %s refused the credential in %s: is it a %s token, unexpired, with the scopes the op needs? (--kind %s sends it %s)\n",
						m.Host, *tokenEnv, m.Name, *kind, authDescription(m, *kind))
				}
			}
			return 1
		}
		fmt.Fprintf(stderr, "pinned op: %s\n", errText(err))
		return 1
	}
	if *verbose {
		fmt.Fprintf(stderr, "status %d, %d bytes raw from upstream, %d bytes projected, %s\n",
			res.Status, res.RawBytes, len(res.Data), res.Duration.Round(time.Millisecond))
	}
	if res.Pages > 0 {
		fmt.Fprintf(stderr, "pages: %d\n", res.Pages)
	}
	if res.Next != nil {
		fmt.Fprintf(stderr, "next: %s\n", res.Next)
	}
	if res.Stopped != "" {
		fmt.Fprintf(stderr, "stopped: %s: %s\n", res.Stopped, res.StopMessage)
	}
	out := []byte(res.Data)
	if *output == "table" {
		printTable(stdout, out)
		return 0
	}
	if *pretty {
		var b bytes.Buffer
		if json.Indent(&b, out, "", "  ") == nil {
			out = b.Bytes()
		}
	}
	fmt.Fprintf(stdout, "%s\n", out)
	return 0
}

// noSuchOp is `no op "x"`, with "(did you mean "y"?)" for a typo.
func noSuchOp(name string, m *registry.Manifest) string {
	return "no " + strings.TrimPrefix(unknownWord("op", name, m.OpNames()), "unknown ")
}

// noDeadline is the op timeout for --timeout 0: no deadline of its own (a
// hundred years; the host needs a positive one).
const noDeadline = 100 * 365 * 24 * time.Hour

// printOpError prints an op failure: "pinned op: CODE: message (HTTP n)",
// and with verbose the internal cause, which is for the operator at this
// terminal only (a sidecar logs it and never sends it; it names no
// credential).
func printOpError(w io.Writer, he *host.Error, verbose bool) {
	fmt.Fprintf(w, "pinned op: %s: %s", he.Code, he.Message)
	if he.Status != 0 {
		fmt.Fprintf(w, " (HTTP %d)", he.Status)
	}
	if he.RetryAfter != 0 {
		fmt.Fprintf(w, " (retry after %ds)", he.RetryAfter)
	}
	fmt.Fprintln(w)
	// A write that was sent says whether it took effect, so nobody
	// retries a write that happened (docs/API.md, "Writes that happened").
	switch he.Applied {
	case api.AppliedYes:
		fmt.Fprintln(w, "pinned op: applied: yes — the provider accepted the write; do not run it again")
	case api.AppliedMaybe:
		fmt.Fprintln(w, "pinned op: applied: maybe — the write may have taken effect; check the provider before running it again")
	case api.AppliedNo:
		fmt.Fprintln(w, "pinned op: applied: no — the provider refused the write")
	}
	if verbose && he.Cause() != nil {
		fmt.Fprintf(w, "pinned op: cause: %s\n", he.Cause())
	}
}

// credentialError is host.CheckCredential's refusal of c, or nil.
func credentialError(c host.Credential) *host.Error {
	var he *host.Error
	if err := host.CheckCredential(c); err != nil && !errors.As(err, &he) {
		he = &host.Error{Code: api.CodeCredentialInvalid, Message: err.Error()}
	}
	return he
}

// authDescription says how the credential is sent, for a 401 hint.
func authDescription(m *registry.Manifest, kind string) string {
	switch {
	case kind == "oauth":
		return "as Authorization: Bearer"
	case m.Auth.Scheme == registry.SchemeNone:
		return "as the bare Authorization value"
	case m.Auth.Scheme == registry.SchemeHeader:
		return "in the " + m.Auth.Header + " header"
	}
	return "as Authorization: Bearer"
}

// confirmWrite shows a write op's confirm sentence, rendered from the
// validated args by the sandbox (host.Engine.Check, what a member's
// consent chip shows), and asks at a terminal; without one it needs
// --yes. ok is false when the op must not run, with the exit code.
func confirmWrite(ctx context.Context, eng *host.Engine, service, opName, args string, yes, interactive bool, stderr io.Writer) (code int, ok bool) {
	chk, err := eng.Check(ctx, service, opName, json.RawMessage(args))
	if err != nil {
		var he *host.Error
		if errors.As(err, &he) {
			printOpError(stderr, he, false)
		} else {
			fmt.Fprintf(stderr, "pinned op: %s\n", errText(err))
		}
		return 1, false
	}
	fmt.Fprintf(stderr, "pinned op: %s.%s writes: %s\n", service, opName, termSafe(chk.Text(), true))
	if yes {
		return 0, true
	}
	if !interactive {
		fmt.Fprintln(stderr, "pinned op: not run: the args came on stdin, which cannot also confirm the write; add --yes")
		return 2, false
	}
	if !console.isTerminal() {
		fmt.Fprintln(stderr, "pinned op: not run: a write op needs confirmation; add --yes to run it without a terminal")
		return 2, false
	}
	fmt.Fprint(stderr, "Run it? [y/N] ")
	line, _ := bufio.NewReader(console.in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return 0, true
	}
	fmt.Fprintln(stderr, "pinned op: not run")
	return 1, false
}

// readArgs reads --args: inline JSON, @FILE, or - (stdin). The args must be
// one JSON object; the error says where the JSON breaks and how to fix it.
func readArgs(v string) (string, error) {
	src := ""
	switch {
	case v == "-":
		b, err := io.ReadAll(io.LimitReader(stdinReader(), 1<<20))
		if err != nil {
			return "", fmt.Errorf(" -: read stdin: %v", err)
		}
		v, src = string(b), " on stdin"
	case strings.HasPrefix(v, "@"):
		b, err := os.ReadFile(v[1:])
		if err != nil {
			return "", fmt.Errorf(" %s: %v", v, unwrapPath(err))
		}
		v, src = string(b), " in "+v[1:]
	}
	if err := jsonArgsError(v); err != "" {
		return "", fmt.Errorf("%s: %s", src, err)
	}
	return v, nil
}

// jsonArgsError explains why s is not a JSON object ("" when it is): the
// byte offset and the text around a syntax error, a hint for the usual
// shell mistake (unquoted keys: {per_page:100}).
func jsonArgsError(s string) string {
	if strings.TrimSpace(s) == "" {
		// An unset shell variable (--args "$ARGS"), an empty file or stdin.
		return "empty: give a JSON object, e.g. '{}' or '{\"per_page\":100}'"
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	err := dec.Decode(&v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err == nil && !json.Valid([]byte(s)) {
		err = errors.New("trailing data after the object")
	}
	if err != nil {
		var se *json.SyntaxError
		msg := err.Error()
		if errors.As(err, &se) {
			at := int(se.Offset)
			lo, hi := max(0, at-10), min(len(s), at+10)
			msg = fmt.Sprintf("not valid JSON at byte %d (near %q): %s", at, s[lo:hi], se.Error())
			if strings.Contains(se.Error(), "looking for beginning of object key string") {
				msg += `; object keys need double quotes, e.g. '{"per_page":100}'`
			}
		} else if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			msg = "not valid JSON: it ends early (a missing } or \")"
		}
		return msg
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Sprintf(`must be a JSON object, e.g. '{"per_page":100}', not %.40s`, strings.TrimSpace(s))
	}
	return ""
}

// registryWithManifest is the embedded registry with the manifest in file
// added, or replacing the embedded one of its id: for manifest authors
// trying a manifest before it is embedded (pinned op --manifest). It warns
// on stderr every time. nil and the exit code when the file is refused.
func registryWithManifest(file string, stderr io.Writer) (*registry.Registry, int) {
	return registryWithManifestFor("op", file, stderr)
}

// registryWithManifestFor is registryWithManifest for the subcommand cmd
// ("op", "registry show"), which its messages name.
func registryWithManifestFor(cmd, file string, stderr io.Writer) (*registry.Registry, int) {
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "pinned %s: --manifest: %s\n", cmd, errText(err))
		return nil, 2
	}
	m, err := registry.Parse(file, data)
	if err != nil {
		printProblems(stderr, file, err)
		fmt.Fprintf(stderr, "pinned %s: --manifest: the manifest is refused (pinned registry check shows the same)\n", cmd)
		return nil, 1
	}
	def := registry.Default()
	verb := "adds"
	if def.Has(m.ID) {
		verb = "replaces the embedded"
	}
	reg, err := def.With(file, data)
	if err != nil {
		printProblems(stderr, file, err)
		return nil, 1
	}
	fmt.Fprintf(stderr, "pinned %s: WARNING: --manifest %s %s service %s for this run only; the sidecar runs only embedded manifests (registry %s)\n", cmd, file, verb, m.ID, reg.Digest())
	return reg, 0
}

// printTable prints a projected result for a person: an array of objects
// as rows under a header of their keys (in first-seen order), an object
// as KEY VALUE lines, anything else as JSON. Nested values are compact
// JSON; strings are printed bare, with control characters as spaces.
func printTable(w io.Writer, data []byte) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		fmt.Fprintf(w, "%s\n", data)
		return
	}
	cell := func(x any) string {
		if s, ok := x.(string); ok {
			return strings.Map(func(r rune) rune {
				if r < 0x20 || r == 0x7f {
					return ' '
				}
				return r
			}, s)
		}
		if x == nil {
			return ""
		}
		b, _ := marshalJSON(x)
		return string(b)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	defer tw.Flush()
	switch t := v.(type) {
	case []any:
		var cols []string
		seen := map[string]bool{}
		for _, e := range t {
			if o, ok := e.(map[string]any); ok {
				for _, k := range orderedKeys(data, o) {
					if !seen[k] {
						seen[k] = true
						cols = append(cols, k)
					}
				}
			}
		}
		if len(cols) == 0 {
			for _, e := range t {
				fmt.Fprintln(tw, cell(e))
			}
			return
		}
		fmt.Fprintln(tw, strings.ToUpper(strings.Join(cols, "\t")))
		for _, e := range t {
			o, _ := e.(map[string]any)
			row := make([]string, len(cols))
			for i, c := range cols {
				row[i] = cell(o[c])
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
	case map[string]any:
		for _, k := range orderedKeys(data, t) {
			fmt.Fprintf(tw, "%s\t%s\n", k, cell(t[k]))
		}
	default:
		fmt.Fprintln(tw, cell(v))
	}
}

// orderedKeys are o's keys in the order the pick wrote them: the order of
// their first appearance in data (the projection keeps the manifest's
// field order), with any not found at the end, sorted.
func orderedKeys(data []byte, o map[string]any) []string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	pos := func(k string) int {
		kb, _ := marshalJSON(k)
		if i := bytes.Index(data, append(kb, ':')); i >= 0 {
			return i
		}
		return len(data)
	}
	sort.SliceStable(keys, func(i, j int) bool {
		pi, pj := pos(keys[i]), pos(keys[j])
		if pi != pj {
			return pi < pj
		}
		return keys[i] < keys[j]
	})
	return keys
}
