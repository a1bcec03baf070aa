package registry

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"regexp"
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

// HeadersOf returns the static headers op sends: the manifest's and the
// op's own, in one new map (nil for none).
func (m *Manifest) HeadersOf(op *Op) map[string]string {
	if len(m.Headers) == 0 && len(op.Headers) == 0 {
		return nil
	}
	out := make(map[string]string, len(m.Headers)+len(op.Headers))
	maps.Copy(out, m.Headers)
	maps.Copy(out, op.Headers)
	return out
}

// HasTenant reports whether m's host is a per-connection pattern.
func (m *Manifest) HasTenant() bool { return strings.HasPrefix(m.Host, TenantPlaceholder+".") }

// HostFor returns the one host a connection's ops talk to: m's host, or
// with a tenant pattern the tenant label in its place. The label must be
// a lower-case DNS label matching the tenant's pattern; a manifest
// without a tenant takes none.
func (m *Manifest) HostFor(tenant string) (string, error) {
	if !m.HasTenant() {
		if tenant != "" {
			return "", fmt.Errorf("%s has one host for every connection; it takes no tenant", m.ID)
		}
		return m.Host, nil
	}
	if msg := TenantProblem(m, tenant); msg != "" {
		return "", errors.New(msg)
	}
	return tenant + strings.TrimPrefix(m.Host, TenantPlaceholder), nil
}

// TenantProblem says why label is not a tenant of m's host pattern, or
// returns "".
func TenantProblem(m *Manifest, label string) string {
	what := "a tenant"
	if m.Tenant != nil && m.Tenant.Label != "" {
		what = m.Tenant.Label
	}
	if !dnsLabelRE.MatchString(label) {
		return fmt.Sprintf("%s: %q is not a lower-case DNS label (letters, digits and inner hyphens, 1 to 63 characters)", what, label)
	}
	if m.Tenant != nil && m.Tenant.Pattern != "" {
		if re, err := regexp.Compile(m.Tenant.Pattern); err != nil || !re.MatchString(label) {
			return fmt.Sprintf("%s: %q does not match %s", what, label, m.Tenant.Pattern)
		}
	}
	return ""
}

var dnsLabelRE = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

// TwoPart reports whether a's credential has a user part besides its
// secret (schemes "basic" and "template").
func (a *Auth) TwoPart() bool { return a.Scheme == SchemeBasic || a.Scheme == SchemeTemplate }

// Present returns the header a pasted credential (user part, secret) is
// sent in, as a's scheme says: "Authorization: Bearer <secret>",
// Authorization with a's prefix, a's own header, HTTP Basic (RFC 7617:
// base64 of user, suffix, ":" and secret) or a's template filled. The
// caller checked both parts are printable ASCII. An OAuth credential is
// always Bearer and never comes here.
func (a *Auth) Present(user, secret string) (name, value string) {
	switch a.Scheme {
	case SchemeNone:
		return "Authorization", a.Prefix + secret
	case SchemeHeader:
		return a.Header, secret
	case SchemeBasic:
		return "Authorization", "Basic " + a.BasicEncoded(user, secret)
	case SchemeTemplate:
		return "Authorization", strings.NewReplacer(TemplateUser, user, TemplateSecret, secret).Replace(a.Template)
	}
	return "Authorization", "Bearer " + secret
}

// BasicEncoded is the base64 (RFC 4648 section 4, padded) of the
// user-pass of scheme "basic": user, a's suffix, ":" and secret.
func (a *Auth) BasicEncoded(user, secret string) string {
	suffix := ""
	if a.User != nil {
		suffix = a.User.Suffix
	}
	return base64.StdEncoding.EncodeToString([]byte(user + suffix + ":" + secret))
}
