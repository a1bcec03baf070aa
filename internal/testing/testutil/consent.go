package testutil

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/display"
	"github.com/elevenmessenger/pinned/registry"
)

//go:embed testdata/consent_args.json
var consentArgs []byte

// ConsentArgs returns, for every write op of the embedded registry
// ("service.op"), args that give every declared arg a distinct value
// (testdata/consent_args.json, or else the op's example args in the
// provider fake's fixtures, fakeapi.Example): what the consent tests
// render.
func ConsentArgs() map[string]json.RawMessage {
	var out map[string]json.RawMessage
	if err := json.Unmarshal(consentArgs, &out); err != nil {
		panic("testutil: consent_args.json: " + err.Error())
	}
	for _, m := range registry.Default().Services() {
		for _, name := range m.OpNames() {
			key := m.ID + "." + name
			if _, ok := out[key]; !ok && m.Ops[name].Access == registry.AccessWrite {
				if ex := fakeapi.Example(m.ID, name); ex != nil {
					out[key] = ex
				}
			}
		}
	}
	return out
}

// WriteOp is one write op of the embedded registry with its consent args.
type WriteOp struct {
	Service string          // the manifest id, "github"
	Name    string          // the op's name, "create_issue"
	Op      *registry.Op    // the op
	Args    json.RawMessage // its ConsentArgs entry; nil when there is none
}

// Key is "service.op": the ConsentArgs key and the subtest's name.
func (w WriteOp) Key() string { return w.Service + "." + w.Name }

// WriteOps lists every write op of the embedded registry, in its order,
// each with its ConsentArgs: what every consent test walks.
func WriteOps() []WriteOp {
	fixtures := ConsentArgs()
	var out []WriteOp
	for _, m := range registry.Default().Services() {
		for _, name := range m.OpNames() {
			op, _ := m.Op(name)
			if op.Access != registry.AccessWrite {
				continue
			}
			out = append(out, WriteOp{Service: m.ID, Name: name, Op: op, Args: fixtures[m.ID+"."+name]})
		}
	}
	return out
}

// Carried returns, by name, the text of every arg the request of op
// carries for args (given, or defaulted): every arg named in the path, a
// query or form value, or a body_json string. Booleans and numbers are
// their JSON text.
func Carried(op *registry.Op, args json.RawMessage) map[string]string {
	var given map[string]json.RawMessage
	_ = json.Unmarshal(args, &given)
	named := map[string]bool{}
	mark := func(t string) {
		ps, _ := registry.ParseTemplate(t)
		for _, p := range ps {
			if p.Arg != "" {
				named[p.Arg] = true
			}
		}
	}
	for _, seg := range strings.Split(op.Path, "/") {
		mark(seg)
	}
	for _, v := range op.Query {
		mark(v)
	}
	for _, v := range op.BodyForm {
		mark(v)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case string:
			mark(v)
		}
	}
	var body any
	_ = json.Unmarshal(op.BodyJSON, &body)
	walk(body)
	out := map[string]string{}
	for name := range named {
		raw, ok := given[name]
		if !ok {
			raw = json.RawMessage(op.Args[name].Default)
		}
		if len(raw) == 0 {
			continue // absent and no default: not sent
		}
		var s string
		var items []json.RawMessage
		switch {
		case json.Unmarshal(raw, &s) == nil:
		case json.Unmarshal(raw, &items) == nil:
			// An array shows as a JSON array of every value, strings
			// quoted: ["bug", "ui"].
			parts := make([]string, len(items))
			for i, it := range items {
				var b bytes.Buffer
				enc := json.NewEncoder(&b)
				enc.SetEscapeHTML(false)
				var v any
				_ = json.Unmarshal(it, &v)
				_ = enc.Encode(v)
				parts[i] = strings.TrimSuffix(b.String(), "\n")
			}
			s = "[" + strings.Join(parts, ", ") + "]"
		default:
			s = string(raw)
		}
		out[name] = s
	}
	return out
}

// MissingFromConsent returns the args the request carries (Carried) that
// the consent text does not show: each must appear whole either in the
// first line (the confirm line: its target and sentence, when the arg is
// named there and its value reads as is) or as its own "- arg: value"
// entry (a value of several lines on indented lines after its label), as
// host.ConsentText writes it. Sorted; empty when everything is shown.
func MissingFromConsent(op *registry.Op, args json.RawMessage, text string) []string {
	first, _, _ := strings.Cut(text, "\n")
	inLine := map[string]bool{}
	ps, _ := registry.ParseTemplate(op.Confirm)
	for _, p := range ps {
		if p.Arg != "" {
			inLine[p.Arg] = true
		}
	}
	for _, a := range op.TargetArgs() {
		inLine[a] = true
	}
	var missing []string
	for name, v := range Carried(op, args) {
		if inLine[name] && display.Shown(v, 200) && !strings.ContainsAny(v, `"\`) && strings.Contains(first, v) {
			continue
		}
		if strings.Contains(text, Entry(name, v)) {
			continue
		}
		missing = append(missing, name)
	}
	slices.Sort(missing)
	return missing
}

// Entry is the "- arg: value" entry of a consent text for one value
// (display.Block; several lines indented four spaces after the label).
func Entry(name, v string) string {
	b := display.Block(v)
	if !strings.Contains(b, "\n") {
		return fmt.Sprintf("- %s: %s", name, b)
	}
	return "- " + name + ":\n    " + strings.ReplaceAll(b, "\n", "\n    ")
}
