package fakeapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/registry"
)

// This test runs every op of every shipped manifest against the fake, the
// way docs/MANIFEST.md says requests are built, and applies the op's pick.
// It proves the manifests and the fake agree (paths, auth, bodies, field
// names) and that each projected result fits the host's 64 KiB limit at
// the largest page size the manifest allows. The manifests are the
// registry's own (registry.Default, parsed by registry.Parse).

var placeholder = regexp.MustCompile(`\{([a-z][a-z0-9_]*)\}`)

// renderText substitutes {arg} placeholders; ok is false when one names an
// absent arg.
func renderText(tmpl string, args map[string]any) (string, bool) {
	ok := true
	out := placeholder.ReplaceAllStringFunc(tmpl, func(m string) string {
		v, present := args[m[1:len(m)-1]]
		if !present {
			ok = false
			return ""
		}
		switch v := v.(type) {
		case string:
			return v
		case bool:
			return strconv.FormatBool(v)
		default:
			return fmt.Sprint(v)
		}
	})
	return out, ok
}

// renderJSON renders a body_json template value.
func renderJSON(v any, args map[string]any) (any, bool) {
	switch v := v.(type) {
	case string:
		if m := placeholder.FindStringSubmatch(v); m != nil && m[0] == v {
			a, ok := args[m[1]]
			return a, ok
		}
		return renderText(v, args)
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if r, ok := renderJSON(e, args); ok {
				out[k] = r
			}
		}
		return out, true
	case []any:
		var out []any
		for _, e := range v {
			if r, ok := renderJSON(e, args); ok {
				out = append(out, r)
			}
		}
		return out, true
	}
	return v, true
}

// project applies a pick's fields to v (grouped dot paths); a path through
// an array maps over its elements. ok is false when nothing matched.
func project(v any, paths [][]string) (any, bool) {
	switch x := v.(type) {
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			p, ok := project(e, paths)
			if ok {
				out = append(out, p)
			}
		}
		return out, true
	case map[string]any:
		groups := map[string][][]string{}
		whole := map[string]bool{}
		for _, p := range paths {
			if len(p) == 1 {
				whole[p[0]] = true
			} else {
				groups[p[0]] = append(groups[p[0]], p[1:])
			}
		}
		out := map[string]any{}
		for k := range whole {
			if e, ok := x[k]; ok {
				out[k] = e
			}
		}
		for k, sub := range groups {
			if whole[k] {
				continue
			}
			if e, ok := x[k]; ok {
				if p, ok := project(e, sub); ok {
					out[k] = p
				}
			}
		}
		return out, true
	}
	return nil, false
}

func applyPick(body []byte, root string, fields []string) (any, error) {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, err
	}
	if root != "" {
		for _, k := range strings.Split(root, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, nil
			}
			v = m[k]
		}
	}
	var paths [][]string
	for _, f := range fields {
		paths = append(paths, strings.Split(f, "."))
	}
	p, _ := project(v, paths)
	return p, nil
}

// hasPath reports whether the projected value holds path in at least one
// element (an empty array on the way counts: nothing to show).
func hasPath(v any, path []string) bool {
	if len(path) == 0 {
		return true
	}
	switch x := v.(type) {
	case []any:
		if len(x) == 0 {
			return true
		}
		for _, e := range x {
			if hasPath(e, path) {
				return true
			}
		}
	case map[string]any:
		e, ok := x[path[0]]
		return ok && hasPath(e, path[1:])
	}
	return false
}

// nullOnPath reports whether, in some element under root, a parent of
// field is null (so the field is legitimately absent).
func nullOnPath(raw []byte, root, field string) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	if root != "" {
		for _, k := range strings.Split(root, ".") {
			m, _ := v.(map[string]any)
			v = m[k]
		}
	}
	var walk func(v any, path []string) bool
	walk = func(v any, path []string) bool {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				if walk(e, path) {
					return true
				}
			}
		case map[string]any:
			e, ok := x[path[0]]
			if ok && e == nil && len(path) > 1 {
				return true
			}
			return ok && len(path) > 1 && walk(e, path[1:])
		}
		return false
	}
	return walk(v, strings.Split(field, "."))
}

func TestManifestsAgainstFake(t *testing.T) {
	manifests := registry.Default().Services()
	if len(manifests) != len(Services()) {
		t.Fatalf("the registry ships %d manifests, the fake serves %d services", len(manifests), len(Services()))
	}
	s := newServer(t)
	// Arguments for required args, per service; page sizes go to their max.
	samples := map[string]map[string]any{
		GitHub:   {"owner": "pinned-tester", "repo": "notes", "title": "Conformance issue", "body": "Filed by the manifest test."},
		DNSimple: {"account": int64(DNSimpleAccountID), "zone": s.dnsimple.domains[0]["name"], "domain": "pinned-conformance-test.com", "registrant_id": int64(DNSimpleRegistrantID)},
		Stripe:   {"email": "conformance@example.com", "name": "Conformance Test"},
		HubSpot:  {"contact_id": strconv.FormatInt(s.hubspot.objects[hsContacts][0].ID, 10), "email": "conformance@example.org", "firstname": "Con", "lastname": "Formance"},
		Linear:   {"id": "ENG-1", "team_id": s.linear.teams[0].(obj)["id"], "title": "Conformance issue"},
	}
	// Fields legitimately absent from every element of the sample answer
	// (a field under a null parent counts as present).
	absentOK := map[string]bool{
		"github.list_issues.pull_request.html_url": true, // only pull requests carry it
	}
	for _, m := range manifests {
		if Host(m.ID) != m.Host {
			t.Errorf("%s: host %q, fake serves %q", m.ID, m.Host, Host(m.ID))
			continue
		}
		for _, name := range m.OpNames() {
			op := m.Ops[name]
			t.Run(m.ID+"."+name, func(t *testing.T) {
				args := map[string]any{}
				for an, a := range op.Args {
					switch {
					case samples[m.ID][an] != nil && (a.Required || op.Access == "write"):
						args[an] = samples[m.ID][an]
					case a.Max != nil && (an == "per_page" || an == "limit" || an == "first"):
						args[an] = int64(*a.Max)
					case a.Default != nil:
						var d any
						_ = json.Unmarshal(a.Default, &d)
						args[an] = d
					case a.Required:
						t.Fatalf("no sample for required arg %q", an)
					}
				}
				var segs []string
				for _, seg := range strings.Split(op.Path, "/") {
					if r, ok := renderText(seg, args); ok && r != seg {
						seg = url.PathEscape(r)
					}
					segs = append(segs, seg)
				}
				u := "https://" + m.Host + strings.Join(segs, "/")
				q := url.Values{}
				for k, tmpl := range op.Query {
					if v, ok := renderText(tmpl, args); ok {
						q.Set(k, v)
					}
				}
				if len(q) > 0 {
					u += "?" + q.Encode()
				}
				hdr := map[string]string{}
				for k, v := range m.Headers {
					hdr[k] = v
				}
				switch m.Auth.Scheme {
				case "bearer":
					hdr["Authorization"] = "Bearer " + Token(m.ID)
				case "none":
					hdr["Authorization"] = Token(m.ID)
				}
				var body string
				switch {
				case op.BodyJSON != nil:
					var tmpl any
					if err := json.Unmarshal(op.BodyJSON, &tmpl); err != nil {
						t.Fatal(err)
					}
					r, _ := renderJSON(tmpl, args)
					bb, _ := json.Marshal(r)
					body = string(bb)
					hdr["Content-Type"] = "application/json"
				case op.BodyForm != nil:
					form := url.Values{}
					for k, tmpl := range op.BodyForm {
						if v, ok := renderText(tmpl, args); ok {
							form.Set(k, v)
						}
					}
					body = form.Encode()
					hdr["Content-Type"] = "application/x-www-form-urlencoded"
				}
				st, _, raw := do(t, s, op.Method, u, hdr, body)
				if st < 200 || st > 299 {
					t.Fatalf("%s %s: %d %.400s", op.Method, u, st, raw)
				}
				if m.ID == Linear {
					var env struct{ Errors []any }
					_ = json.Unmarshal(raw, &env)
					if len(env.Errors) > 0 {
						t.Fatalf("GraphQL errors: %.400s", raw)
					}
				}
				picked, err := applyPick(raw, op.Pick.Root, op.Pick.Fields)
				if err != nil {
					t.Fatal(err)
				}
				if picked == nil {
					t.Fatalf("pick root %q is missing in %.300s", op.Pick.Root, raw)
				}
				out, _ := json.Marshal(picked)
				t.Logf("%s %s: %d bytes raw, %d bytes projected", op.Method, u, len(raw), len(out))
				if len(out) > 64<<10 {
					t.Errorf("projected result is %d bytes, over 64 KiB", len(out))
				}
				if m.ID == GitHub && name == "list_repos" && len(out) > 45<<10 {
					t.Errorf("list_repos projected to %d bytes, want ≤ 45 KiB", len(out))
				}
				if bytes.Equal(out, []byte("[]")) || bytes.Equal(out, []byte("{}")) {
					t.Errorf("empty projection")
				}
				for _, f := range op.Pick.Fields {
					if !hasPath(picked, strings.Split(f, ".")) && !nullOnPath(raw, op.Pick.Root, f) && !absentOK[m.ID+"."+name+"."+f] {
						t.Errorf("pick field %q not in the fake's answer", f)
					}
				}
			})
		}
	}
	if t.Failed() {
		return
	}
	// The write ops were reflected.
	if st, _, _ := do(t, s, http.MethodGet, "https://api.dnsimple.com/v2/1385/registrar/domains/pinned-conformance-test.com/check", bearer(Token(DNSimple)), ""); st != 200 {
		t.Errorf("check after register: %d", st)
	}
}
