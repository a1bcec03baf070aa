package registry

import (
	"maps"
	"slices"
	"strings"
)

// OpNames returns the names of m's ops, sorted.
func (m *Manifest) OpNames() []string { return slices.Sorted(maps.Keys(m.Ops)) }

// Op returns the op named name and whether it exists.
func (m *Manifest) Op(name string) (*Op, bool) {
	op, ok := m.Ops[name]
	return op, ok && op != nil
}

// ErrorMessagePath returns the dot path of the human message in an
// upstream error body: ErrorMessage when set, else "errors.message" for a
// GraphQL service and "message" otherwise.
func (m *Manifest) ErrorMessagePath() string {
	switch {
	case m.ErrorMessage != "":
		return m.ErrorMessage
	case m.GraphQL:
		return "errors.message"
	}
	return "message"
}

// Body kinds returned by [Op.BodyKind].
const (
	BodyKindNone = ""
	BodyKindJSON = "json"
	BodyKindForm = "form"
)

// BodyKind returns the kind of request body o sends: [BodyKindJSON]
// (application/json, from BodyJSON), [BodyKindForm]
// (application/x-www-form-urlencoded, from BodyForm) or [BodyKindNone].
func (o *Op) BodyKind() string {
	switch {
	case o.BodyJSON != nil:
		return BodyKindJSON
	case o.BodyForm != nil:
		return BodyKindForm
	}
	return BodyKindNone
}

// ArgNames returns the names of o's declared args, sorted.
func (o *Op) ArgNames() []string { return slices.Sorted(maps.Keys(o.Args)) }

// QueryKeys returns o's query keys, sorted (the order they are sent in).
func (o *Op) QueryKeys() []string { return slices.Sorted(maps.Keys(o.Query)) }

// FormKeys returns o's body_form keys, sorted (the order they are sent in).
func (o *Op) FormKeys() []string { return slices.Sorted(maps.Keys(o.BodyForm)) }

// PageQueryKey returns, for an op paging by Link header, the query key
// whose whole template is the paginate arg ("page" for "{page}"), or ""
// when o does not page that way. Parse guarantees exactly one such key.
func (o *Op) PageQueryKey() string {
	if o.Paginate == nil || o.Paginate.Style != PaginateLink {
		return ""
	}
	for _, k := range o.QueryKeys() {
		if o.Query[k] == "{"+o.Paginate.Arg+"}" {
			return k
		}
	}
	return ""
}

// TargetArgs returns the args that say where a write op's request goes,
// which a consent shows first: Target when the manifest declares it, else
// the path's placeholders in path order, less any secret arg (a secret is
// never displayed). Nil for a read op.
func (o *Op) TargetArgs() []string {
	if o.Access != AccessWrite {
		return nil
	}
	if o.Target != nil {
		return slices.Clone(o.Target)
	}
	var out []string
	for _, seg := range strings.Split(o.Path, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			if a := o.Args[seg[1:len(seg)-1]]; a == nil || !a.Secret {
				out = append(out, seg[1:len(seg)-1])
			}
		}
	}
	return out
}
