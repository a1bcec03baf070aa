package registry

import (
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Resource declares which args of a service's ops name one of the
// member's resources (a repository, an account), so a grant can be
// limited to chosen ones (docs/MANIFEST.md, "Resources"). On the wire:
//
//	"resources": {"repository": {"label": "Repositories",
//	  "args": ["owner", "repo"], "separator": "/",
//	  "list": {"op": "list_repos", "field": "full_name"},
//	  "unscoped": ["get_viewer"]}}
//
// Every op of the service is exactly one of: scoped (it declares every
// one of Args, each a required string or integer), the List op, or
// Unscoped. An integer arg names a resource by its decimal digits
// ("1385"), matched against the JSON number's bytes as written.
type Resource struct {
	// Label names the resources for a member, plural ("Repositories").
	Label string `json:"label"`
	// Args are the arg names whose values, joined by Separator, name one
	// resource ("owner", "repo" → "octo/hello"). One to four.
	Args []string `json:"args"`
	// Separator joins Args: one printable ASCII character that is not a
	// letter or digit. Required with more than one arg, refused with one.
	Separator string `json:"separator,omitempty"`
	// List is the read op that lists the member's resources, and the
	// pick field of each element that names one (in the joined form). A
	// limited grant runs it with its result filtered to the chosen ones.
	List *ResourceList `json:"list,omitempty"`
	// Unscoped are the read ops that reach no single resource (the
	// viewer): a limited grant runs them unchanged.
	Unscoped []string `json:"unscoped,omitempty"`
}

// ResourceList is a Resource's listing op.
type ResourceList struct {
	// Op is a read op of the service without the resource's args.
	Op string `json:"op"`
	// Field is one of Op's pick fields: each element's resource name.
	Field string `json:"field"`
}

// Roles of an op under a resource (Resource.Role).
const (
	// RoleScoped: the op names one resource through the resource's args.
	RoleScoped = "scoped"
	// RoleList: the op lists resources; a limited grant filters its result.
	RoleList = "list"
	// RoleUnscoped: the op reaches no single resource.
	RoleUnscoped = "unscoped"
)

// Role says what op is to r: RoleScoped, RoleList, RoleUnscoped, or ""
// when the manifest does not classify it (Parse refuses that, so "" means
// a manifest Parse did not make).
func (r *Resource) Role(op string, o *Op) string {
	switch {
	case r.List != nil && r.List.Op == op:
		return RoleList
	case slices.Contains(r.Unscoped, op):
		return RoleUnscoped
	case o != nil && len(r.Args) > 0 && hasAll(o, r.Args):
		return RoleScoped
	}
	return ""
}

// Join is the resource name of values (one per Args, in order).
func (r *Resource) Join(values []string) string { return strings.Join(values, r.Separator) }

func hasAll(o *Op, args []string) bool {
	for _, a := range args {
		if _, ok := o.Args[a]; !ok {
			return false
		}
	}
	return true
}

func hasAny(o *Op, args []string) bool {
	for _, a := range args {
		if _, ok := o.Args[a]; ok {
			return true
		}
	}
	return false
}

const (
	maxResources    = 4
	maxResourceArgs = 4
)

var resourceRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// clone returns a deep copy of r.
func (r Resource) clone() Resource {
	r.Args = slices.Clone(r.Args)
	r.Unscoped = slices.Clone(r.Unscoped)
	if r.List != nil {
		l := *r.List
		r.List = &l
	}
	return r
}

func cloneResources(in map[string]Resource) map[string]Resource {
	if in == nil {
		return nil
	}
	out := make(map[string]Resource, len(in))
	for k, r := range in {
		out[k] = r.clone()
	}
	return out
}

// checkResources enforces the Resources rules (docs/MANIFEST.md,
// "Resources").
func (p *parser) checkResources(m *Manifest) {
	if len(m.Resources) > maxResources {
		p.add("", "resources", "has %d resources; at most %d", len(m.Resources), maxResources)
	}
	for _, name := range slices.Sorted(maps.Keys(m.Resources)) {
		r := m.Resources[name]
		f := "resources." + name
		if !resourceRE.MatchString(name) {
			p.add("", f, "resource name must match ^[a-z][a-z0-9_]{0,31}$")
		}
		if r.Label == "" {
			p.add("", f+".label", `required: what the member picks, plural, e.g. "Repositories"`)
		}
		p.text("", f+".label", r.Label, false)
		switch {
		case len(r.Args) == 0 || len(r.Args) > maxResourceArgs:
			p.add("", f+".args", "has %d args; want 1 to %d", len(r.Args), maxResourceArgs)
		case len(r.Args) > 1 && (len(r.Separator) != 1 || !printableASCII(r.Separator) || isAlnum(r.Separator[0])):
			p.add("", f+".separator", "%q: with %d args, one printable ASCII character that is not a letter or digit joins them, e.g. \"/\"", r.Separator, len(r.Args))
		case len(r.Args) == 1 && r.Separator != "":
			p.add("", f+".separator", "is only for more than one arg")
		}
		for i, a := range r.Args {
			if slices.Index(r.Args, a) != i {
				p.add("", f+".args", "%q is listed twice", a)
			}
		}
		if r.List != nil {
			o, ok := m.Ops[r.List.Op]
			switch {
			case !ok || o == nil:
				p.add("", f+".list.op", "names op %q, which does not exist", r.List.Op)
			case o.Access != AccessRead:
				p.add("", f+".list.op", "names op %q, a %s op; the list op must be a read op", r.List.Op, o.Access)
			case hasAny(o, r.Args):
				p.add("", f+".list.op", "names op %q, which takes the resource's args; a list op reaches no single resource", r.List.Op)
			case o.Pick == nil || !slices.Contains(o.Pick.Fields, r.List.Field):
				p.add("", f+".list.field", "%q is not a pick field of op %q", r.List.Field, r.List.Op)
			}
		}
		for i, u := range r.Unscoped {
			o, ok := m.Ops[u]
			switch {
			case slices.Index(r.Unscoped, u) != i:
				p.add("", f+".unscoped", "%q is listed twice", u)
			case !ok || o == nil:
				p.add("", f+".unscoped", "names op %q, which does not exist", u)
			case o.Access != AccessRead:
				p.add("", f+".unscoped", "names op %q, a %s op; a write must name its resource", u, o.Access)
			case hasAny(o, r.Args) || (r.List != nil && r.List.Op == u):
				p.add("", f+".unscoped", "names op %q, which takes the resource's args or lists them", u)
			}
		}
		// Every op is classified: a new op cannot slip past a limit.
		for _, op := range slices.Sorted(maps.Keys(m.Ops)) {
			o := m.Ops[op]
			if o == nil {
				continue
			}
			switch r.Role(op, o) {
			case RoleScoped:
				for _, a := range r.Args {
					if arg := o.Args[a]; arg == nil || !arg.Required || (arg.Type != TypeString && arg.Type != TypeInteger) {
						p.add(op, "args."+a, "names resource %q: it must be a required string or integer arg", name)
					}
				}
			case "":
				if hasAny(o, r.Args) {
					p.add(op, "args", "declares some but not all of resource %q's args (%s)", name, strings.Join(r.Args, ", "))
				} else {
					p.add("", f+".unscoped", "op %q takes none of resource %q's args: list it in unscoped (it reaches no single resource) or give it the args", op, name)
				}
			}
		}
	}
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
