package sidecar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/elevenmessenger/pinned/internal/jsonv"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// checkResources enforces a grant limited to chosen resources
// (grant.Grant.Resources; docs/MANIFEST.md, "Resources") on the args
// that will run, before the sandbox. For each kind the grant limits, the
// op's role under the manifest's resource decides:
//   - scoped: every one of the resource's args is present, a JSON
//     string (or, for an integer arg, a number of plain decimal digits),
//     and their values joined equal a chosen name byte for byte (no
//     case folding, decoding or path clean-up); else resource_denied
//     naming the first arg whose value no chosen name has at its place;
//   - list: it runs, and filterList keeps the chosen elements only;
//   - unscoped: it runs.
//
// A kind the manifest does not declare, or an op it does not classify,
// is refused: a limit the sidecar cannot enforce fails closed.
func checkResources(m *registry.Manifest, opName string, op *registry.Op, g *grant.Grant, args json.RawMessage) *Error {
	limits := g.ResourceLimits()
	if g.Resources != "" && limits == nil {
		return newError(CodeResourceDenied, "the grant's resource limit cannot be read")
	}
	if len(limits) == 0 {
		return nil
	}
	// Strict first: a duplicate key or invalid UTF-8 could be read one
	// way here and another in the sandbox.
	var values map[string]json.RawMessage
	if _, err := jsonv.Parse(args); err != nil {
		return newError(CodeResourceDenied, "the args are not one strict JSON object, so the grant's resource limit cannot be checked")
	}
	if err := json.Unmarshal(args, &values); err != nil {
		return newError(CodeResourceDenied, "the args are not a JSON object, so the grant's resource limit cannot be checked")
	}
	for _, kind := range sortedKeys(limits) {
		r, ok := m.Resources[kind]
		if !ok {
			return newError(CodeResourceDenied, fmt.Sprintf("the grant is limited to %s resources, which service %s does not declare", kind, m.ID))
		}
		switch r.Role(opName, op) {
		case registry.RoleList, registry.RoleUnscoped:
			continue
		case registry.RoleScoped:
		default:
			return newError(CodeResourceDenied, fmt.Sprintf("%s.%s is not classified under resource %s", m.ID, opName, kind))
		}
		got := make([]string, len(r.Args))
		for i, a := range r.Args {
			var ok bool
			if got[i], ok = resourceValue(op, a, values[a]); !ok {
				e := newError(CodeResourceDenied, fmt.Sprintf("the grant is limited to chosen %s: arg %q must name one as a %s", strings.ToLower(r.Label), a, argKind(op, a)))
				e.Arg = a
				return e
			}
		}
		allowed := limits[kind]
		if slices.Contains(allowed, r.Join(got)) {
			continue
		}
		e := newError(CodeResourceDenied, fmt.Sprintf("the grant is limited to chosen %s, and %q is not one of them", strings.ToLower(r.Label), clip(r.Join(got), 128)))
		e.Arg = deniedArg(r, got, allowed)
		return e
	}
	return nil
}

// resourceValue is the resource name an arg's raw JSON value gives: a
// JSON string's text, or, for an integer arg, a JSON number's bytes as
// written when they are plain decimal digits ("1385"; "1385.0", "1.385e3"
// and "01385" name nothing, so no spelling reaches another account).
func resourceValue(op *registry.Op, name string, raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	}
	if a := op.Args[name]; a == nil || a.Type != registry.TypeInteger || !decimalRe.Match(raw) {
		return "", false
	}
	return string(raw), true
}

var decimalRe = regexp.MustCompile(`^(?:0|[1-9][0-9]{0,18})$`)

// argKind says what an arg's value must be, for messages.
func argKind(op *registry.Op, name string) string {
	if a := op.Args[name]; a != nil && a.Type == registry.TypeInteger {
		return "decimal integer"
	}
	return "string"
}

// deniedArg is the first of r's args whose value no allowed name has at
// its place (the last arg when each value appears in some name).
func deniedArg(r registry.Resource, got, allowed []string) string {
	for i, a := range r.Args {
		found := false
		for _, name := range allowed {
			if parts := strings.Split(name, r.Separator); len(parts) == len(r.Args) && parts[i] == got[i] {
				found = true
				break
			}
		}
		if !found {
			return a
		}
	}
	return r.Args[len(r.Args)-1]
}

// filterList keeps, in the data of a limited grant's list op (a JSON
// array), the elements whose list field names a chosen resource. Data
// that is not an array is withheld (an error): the filter cannot tell
// what it holds.
func filterList(m *registry.Manifest, opName string, g *grant.Grant, data json.RawMessage) (json.RawMessage, *Error) {
	limits := g.ResourceLimits()
	for _, kind := range sortedKeys(limits) {
		r, ok := m.Resources[kind]
		if !ok || r.List == nil || r.List.Op != opName {
			continue
		}
		var elems []json.RawMessage
		if err := json.Unmarshal(data, &elems); err != nil {
			return nil, newError(CodeInternal, "the list op's data is not a list, so the grant's resource limit cannot filter it; withheld").withCause(err)
		}
		kept := make([]json.RawMessage, 0, len(elems))
		for _, el := range elems {
			if name, ok := fieldString(el, r.List.Field); ok && slices.Contains(limits[kind], name) {
				kept = append(kept, el)
			}
		}
		out, err := json.Marshal(kept)
		if err != nil {
			return nil, newError(CodeInternal, "the filtered list could not be encoded").withCause(err)
		}
		data = out
	}
	return data, nil
}

// fieldString reads a string at a dot path of a JSON object.
func fieldString(el json.RawMessage, path string) (string, bool) {
	cur := el
	for _, k := range strings.Split(path, ".") {
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return "", false
		}
		if cur = obj[k]; cur == nil {
			return "", false
		}
	}
	var s string
	if json.Unmarshal(cur, &s) != nil {
		return "", false
	}
	return s, true
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
