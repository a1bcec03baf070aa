package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/jsonenc"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/secret"
)

// showOptions are the flags of "pinned registry show".
type showOptions struct {
	format   string // "text" or "json"
	args     string // --args
	hasArgs  bool   // --args was given
	manifest string // --manifest FILE
}

// registryShow implements "pinned registry show SERVICE [OP] [--args JSON]".
func registryShow(pos []string, opts showOptions, stdout, stderr io.Writer) int {
	if len(pos) == 0 || len(pos) > 2 {
		return flagError(stderr, "registry", "show takes SERVICE and optionally OP, e.g. pinned registry show github create_issue")
	}
	if opts.hasArgs && len(pos) != 2 {
		return flagError(stderr, "registry", "show --args renders one op's request: name the op, e.g. pinned registry show github list_repos --args '{\"per_page\":100}'")
	}
	format := opts.format
	reg := registry.Default()
	if opts.manifest != "" {
		r, code := registryWithManifestFor("registry show", opts.manifest, stderr)
		if r == nil {
			return code
		}
		reg = r
	}
	m, ok := reg.Service(pos[0])
	if !ok {
		ids := reg.IDs()
		fmt.Fprintf(stderr, "pinned registry show: %s (services: %s)\n", unknownWord("service", pos[0], ids), joinList(ids))
		return 1
	}
	if len(pos) == 1 {
		if format == "json" {
			var b bytes.Buffer
			_ = json.Indent(&b, reg.Raw(m.ID), "", "  ")
			fmt.Fprintf(stdout, "%s\n", bytes.TrimSpace(b.Bytes()))
			return 0
		}
		showService(stdout, m)
		return 0
	}
	op, ok := m.Op(pos[1])
	if !ok {
		fmt.Fprintf(stderr, "pinned registry show: service %s has %s (ops: %s)\n", m.ID, noSuchOp(pos[1], m), joinList(m.OpNames()))
		return 1
	}
	if opts.hasArgs {
		return showRequest(stdout, stderr, m, pos[1], op, opts)
	}
	if format == "json" {
		b, err := jsonenc.MarshalIndent(op, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "pinned registry show: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return 0
	}
	showOp(stdout, m, pos[1], op)
	return 0
}

func showService(w io.Writer, m *registry.Manifest) {
	fmt.Fprintf(w, "%s (%s): %s\n", m.Name, m.ID, m.Description)
	fmt.Fprintf(w, "host:  https://%s (every op; nothing else is reachable)\n", m.Host)
	fmt.Fprintf(w, "auth:  %s", m.Auth.Scheme)
	if m.Auth.Header != "" {
		fmt.Fprintf(w, " (header %s)", m.Auth.Header)
	}
	if m.Auth.OAuth != nil {
		fmt.Fprint(w, "; OAuth through the broker")
	}
	fmt.Fprintln(w)
	if m.Auth.PATHelp != "" {
		fmt.Fprintf(w, "token: %s\n", m.Auth.PATHelp)
	}
	if m.Docs != "" {
		fmt.Fprintf(w, "docs:  %s\n", m.Docs)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "OP\tACCESS\tREQUEST\tSUMMARY")
	for _, name := range m.OpNames() {
		op, _ := m.Op(name)
		fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s\n", name, op.Access, op.Method, op.Path, op.Summary)
	}
	tw.Flush()
	fmt.Fprintf(w, "\npinned registry show %s OP shows an op's args, request and result fields.\n", m.ID)
}

func showOp(w io.Writer, m *registry.Manifest, name string, op *registry.Op) {
	fmt.Fprintf(w, "%s.%s (%s): %s\n", m.ID, name, op.Access, op.Summary)
	if op.Description != "" {
		fmt.Fprintf(w, "  %s\n", op.Description)
	}
	if op.Confirm != "" {
		fmt.Fprintf(w, "\nconfirm (shown to the member before it runs, after its target; every other value it sends follows it):\n  %s\n", op.Confirm)
		if t := op.TargetArgs(); len(t) > 0 {
			fmt.Fprintf(w, "  target (shown first): %s\n", joinList(t))
		}
	}
	fmt.Fprintf(w, "\nrequest:\n  %s https://%s%s\n", op.Method, m.Host, op.Path)
	for _, k := range op.QueryKeys() {
		fmt.Fprintf(w, "  query %s=%s\n", k, op.Query[k])
	}
	if len(op.BodyJSON) > 0 {
		fmt.Fprintf(w, "  body (application/json): %s\n", op.BodyJSON)
	}
	for _, k := range op.FormKeys() {
		fmt.Fprintf(w, "  form %s=%s\n", k, op.BodyForm[k])
	}
	fmt.Fprintln(w, "  (an absent optional arg with no default leaves out its query key, form key or body_json member)")
	fmt.Fprintln(w, "\nargs:")
	if len(op.Args) == 0 {
		fmt.Fprintln(w, "  none")
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, a := range op.ArgNames() {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", a, op.Args[a].Type, argRules(op.Args[a]), op.Args[a].Description)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nreturns (pick; nothing else comes back):")
	if op.Pick.Root != "" {
		fmt.Fprintf(w, "  root %s\n", op.Pick.Root)
	}
	if len(op.Pick.Fields) == 0 {
		fmt.Fprintln(w, "  no fields")
	} else {
		fmt.Fprintln(w, "  field\tclass (docs/MANIFEST.md; text is free text a third party can write)")
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		for _, f := range op.Pick.Fields {
			fmt.Fprintf(tw, "  %s\t%s\n", f, op.Pick.Class(f))
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nsee the request for args: pinned registry show %s %s --args '%s'\n", m.ID, name, exampleArgs(op))
	fmt.Fprintf(w, "run it: pinned op --service %s --op %s --args '%s'\n", m.ID, name, exampleArgs(op))
}

// showRequest prints the request the host would accept for the args of
// --args (host.Render: the host's own binding code, secret args shown as
// [redacted]) and a write's confirm sentence. Nothing is sent.
func showRequest(stdout, stderr io.Writer, m *registry.Manifest, name string, op *registry.Op, opts showOptions) int {
	args, err := readArgs(opts.args)
	if err != nil {
		fmt.Fprintf(stderr, "pinned registry show: --args%s\n", err)
		return 2
	}
	r, err := host.Render(m, name, json.RawMessage(args))
	if err != nil {
		// The message pinned op gives for the same args.
		var he *host.Error
		if errors.As(err, &he) {
			fmt.Fprintf(stderr, "pinned registry show: %s: %s\n", he.Code, he.Message)
		} else {
			fmt.Fprintf(stderr, "pinned registry show: %s\n", errText(err))
		}
		return 1
	}
	if opts.format == "json" {
		b, err := jsonenc.MarshalIndent(struct {
			Service string `json:"service"`
			Op      string `json:"op"`
			Access  string `json:"access"`
			*host.Request
		}{m.ID, name, op.Access, r}, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "pinned registry show: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return 0
	}
	w := stdout
	fmt.Fprintf(w, "%s.%s (%s): the request the host accepts for these args (nothing was sent)\n", m.ID, name, op.Access)
	if r.Confirm != "" {
		// What the member is shown: the confirm line and every other value
		// sent (host.ConsentText), indented.
		text := termSafe(host.ConsentText(r.Confirm, r.Sends), true)
		fmt.Fprintf(w, "\nconsent (shown to the member before it runs):\n  %s\n", strings.ReplaceAll(text, "\n", "\n  "))
	}
	fmt.Fprintf(w, "\n%s %s\n", r.Method, r.URL)
	for _, h := range r.Headers {
		fmt.Fprintf(w, "%s: %s\n", h.Name, h.Value)
	}
	if r.ContentType != "" {
		fmt.Fprintf(w, "Content-Type: %s\n", r.ContentType)
	}
	if r.Body != "" {
		fmt.Fprintf(w, "\n%s\n", r.Body)
	}
	fmt.Fprintf(w, "\nThe host adds the credential (%s), User-Agent and Accept-Encoding: gzip,\n", authDescription(m, "pat"))
	fmt.Fprintln(w, "and sends a request only if it is exactly this one (query pairs, form pairs and")
	fmt.Fprintln(w, "JSON members in any order; the values of an array in theirs).")
	for _, a := range op.Args {
		if a.Secret {
			fmt.Fprintf(w, "Secret args show as %s.\n", secret.Redacted)
			break
		}
	}
	return 0
}

// argRules is an arg's rules in one cell: "required, 1..100, default 30".
func argRules(a *registry.Arg) string {
	var r []string
	if a.Required {
		r = append(r, "required")
	} else {
		r = append(r, "optional")
	}
	if a.Type == registry.TypeArray && a.Items != nil {
		n := registry.DefaultMaxItems
		if a.MaxItems != nil {
			n = *a.MaxItems
		}
		r = append(r, fmt.Sprintf("at most %d values", n))
		if d := a.Delimiter(); d != 0 {
			r = append(r, fmt.Sprintf("joined by %q", string(d)))
		}
		if it := argRules(a.Items); it != "optional" {
			r = append(r, "each "+strings.TrimPrefix(it, "optional, "))
		}
		return strings.Join(r, ", ")
	}
	num := func(f *float64) string { return strconv.FormatFloat(*f, 'f', -1, 64) }
	switch {
	case a.Min != nil && a.Max != nil:
		r = append(r, num(a.Min)+".."+num(a.Max))
	case a.Min != nil:
		r = append(r, ">= "+num(a.Min))
	case a.Max != nil:
		r = append(r, "<= "+num(a.Max))
	}
	if len(a.Enum) > 0 {
		r = append(r, "one of "+strings.Join(a.Enum, "|"))
	}
	if a.Pattern != "" {
		r = append(r, "pattern "+a.Pattern)
	}
	if a.Type == registry.TypeString {
		n := registry.DefaultMaxLength
		if a.MaxLength != nil {
			n = *a.MaxLength
		}
		r = append(r, "max_length "+strconv.Itoa(n))
	}
	if len(a.Default) > 0 {
		r = append(r, "default "+string(a.Default))
	}
	if a.Secret {
		r = append(r, "secret (never logged)")
	}
	return strings.Join(r, ", ")
}

// exampleArgs is a JSON object of the op's required args with
// placeholder values of their type.
func exampleArgs(op *registry.Op) string {
	ex := map[string]any{}
	for _, a := range op.ArgNames() {
		arg := op.Args[a]
		if !arg.Required {
			continue
		}
		switch {
		case arg.Type == registry.TypeArray:
			ex[a] = []any{"…"}
			if arg.Items != nil && len(arg.Items.Enum) > 0 {
				ex[a] = []any{arg.Items.Enum[0]}
			}
		case len(arg.Enum) > 0:
			ex[a] = arg.Enum[0]
		case arg.Type == registry.TypeInteger || arg.Type == registry.TypeNumber:
			if arg.Min != nil {
				ex[a] = *arg.Min
			} else {
				ex[a] = 1
			}
		case arg.Type == registry.TypeBoolean:
			ex[a] = true
		default:
			ex[a] = "…"
		}
	}
	b, _ := jsonenc.Marshal(ex)
	return string(b)
}
