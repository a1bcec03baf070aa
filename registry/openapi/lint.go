package openapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/elevenmessenger/pinned/registry"
)

// Finding is one place where a manifest op disagrees with the description.
type Finding struct {
	// Op is the manifest op ("" for the manifest as a whole); Field the
	// manifest field, as the loader names it ("query.per_page",
	// "pick.fields.title").
	Op, Field string
	// Msg says what disagrees and what the description has.
	Msg string
}

func (f Finding) String() string {
	var b strings.Builder
	if f.Op != "" {
		fmt.Fprintf(&b, "op %q: ", f.Op)
	}
	if f.Field != "" {
		b.WriteString(f.Field + ": ")
	}
	b.WriteString(f.Msg)
	return b.String()
}

// Lint checks every op of m against d, in op name order: the method and
// path exist; every path placeholder, query key, form key and JSON body
// member is a parameter or property the description declares, with a
// compatible type and enum; every header the op sends that the
// description declares has a value it allows, and no header it requires
// is missing; every picked path, and every path paginate reads, exists in
// the 2xx answer's schema. It returns nil when they agree.
func Lint(d *Description, m *registry.Manifest) []Finding {
	var out []Finding
	if h := d.Host(); h != "" && strings.Contains(h, ".") && !strings.Contains(m.Host, "{") && registeredDomain(h) != registeredDomain(m.Host) {
		out = append(out, Finding{Field: "host", Msg: fmt.Sprintf("%q is not under the description's server %q", m.Host, h)})
	}
	for _, name := range m.OpNames() {
		out = append(out, LintOp(d, m, name)...)
	}
	return out
}

// registeredDomain is the last two labels of a host name.
func registeredDomain(h string) string {
	labels := strings.Split(h, ".")
	if len(labels) <= 2 {
		return h
	}
	return strings.Join(labels[len(labels)-2:], ".")
}

// LintOp checks one op of m against d (see [Lint]).
func LintOp(d *Description, m *registry.Manifest, name string) []Finding {
	op, ok := m.Op(name)
	if !ok {
		return []Finding{{Op: name, Msg: "no such op in the manifest"}}
	}
	l := &linter{d: d, m: m, name: name, op: op}
	o, ok := l.match()
	if !ok {
		return l.out
	}
	l.o = o
	l.pathArgs()
	l.query()
	l.headers()
	l.body()
	l.pick()
	l.paginate()
	return l.out
}

type linter struct {
	d    *Description
	m    *registry.Manifest
	name string
	op   *registry.Op
	o    Operation
	out  []Finding
}

func (l *linter) add(field, format string, a ...any) {
	l.out = append(l.out, Finding{Op: l.name, Field: field, Msg: fmt.Sprintf(format, a...)})
}

// segment matching: a description segment is literal text, a whole
// "{param}", or text with placeholders inside ("{Sid}.json").
var descPlaceholder = regexp.MustCompile(`\{[^{}/]+\}`)

// segMatch scores how the manifest segment ms matches the description
// segment ds: -1 no match, 2 equal literals, 1 a parameter.
func segMatch(ds, ms string) int {
	mIsArg := strings.HasPrefix(ms, "{") && strings.HasSuffix(ms, "}")
	switch {
	case !strings.Contains(ds, "{"):
		if ds == ms {
			return 2
		}
		return -1
	case descPlaceholder.FindString(ds) == ds:
		return 1
	case mIsArg:
		return -1 // a manifest placeholder fills a whole segment
	}
	// Literal text around the placeholders must match; each placeholder
	// takes one or more characters.
	var re strings.Builder
	re.WriteByte('^')
	last := 0
	for _, loc := range descPlaceholder.FindAllStringIndex(ds, -1) {
		re.WriteString(regexp.QuoteMeta(ds[last:loc[0]]) + "[^/]+")
		last = loc[1]
	}
	re.WriteString(regexp.QuoteMeta(ds[last:]) + "$")
	if regexp.MustCompile(re.String()).MatchString(ms) {
		return 1
	}
	return -1
}

// match finds the description operation of the op's method and path.
func (l *linter) match() (Operation, bool) {
	msegs := strings.Split(strings.TrimPrefix(l.op.Path, "/"), "/")
	var best *path
	bestScore := -1
	for _, p := range l.d.paths {
		if len(p.segs) != len(msegs) {
			continue
		}
		score := 0
		for i := range msegs {
			s := segMatch(p.segs[i], msegs[i])
			if s < 0 {
				score = -1
				break
			}
			score += s
		}
		if score > bestScore || score == bestScore && best != nil && p.item.GetOperation(l.op.Method) != nil && best.item.GetOperation(l.op.Method) == nil {
			best, bestScore = p, score
		}
	}
	if best == nil {
		var all []string
		for _, p := range l.d.paths {
			all = append(all, p.template)
		}
		l.add("path", "%q is not a path of the description (%s)", l.op.Path, nearestPath(l.op.Path, all))
		return Operation{}, false
	}
	o := best.item.GetOperation(l.op.Method)
	if o == nil {
		methods := slices.Sorted(maps.Keys(best.item.Operations()))
		l.add("method", "%s is not described for %s (it has %s)", l.op.Method, best.template, strings.ToUpper(strings.Join(methods, ", ")))
		return Operation{}, false
	}
	return Operation{Method: l.op.Method, Path: best.template, ID: o.OperationID, op: o, p: best}, true
}

// nearestPath names the described path closest to p.
func nearestPath(p string, all []string) string {
	best, bestD := "", 1<<30
	for _, a := range all {
		if d := distance(p, a); d < bestD {
			best, bestD = a, d
		}
	}
	if best == "" {
		return "it has none"
	}
	return fmt.Sprintf("nearest: %q", best)
}

// pathArgs checks each path segment against the parameter it fills.
func (l *linter) pathArgs() {
	msegs := strings.Split(strings.TrimPrefix(l.op.Path, "/"), "/")
	for i, ds := range l.o.p.segs {
		if descPlaceholder.FindString(ds) != ds {
			continue
		}
		pname := ds[1 : len(ds)-1]
		param := l.o.parameter("path", pname)
		if param == nil || param.Schema == nil {
			continue
		}
		ms := msegs[i]
		if strings.HasPrefix(ms, "{") {
			arg := ms[1 : len(ms)-1]
			if a := l.op.Args[arg]; a != nil {
				l.argAgainst("path", a, arg, param.Schema.Value, "path parameter "+pname, true)
			}
			continue
		}
		if msg := literalProblem(ms, param.Schema.Value); msg != "" {
			l.add("path", "segment %q fills path parameter %s: %s", ms, pname, msg)
		}
	}
}

// query checks each query key against the query parameters.
func (l *linter) query() {
	for _, k := range l.op.QueryKeys() {
		param := l.o.parameter("query", k)
		if param == nil {
			l.add("query."+k, "%q is not a query parameter of %s %s (%s)", k, l.o.Method, l.o.Path, l.paramNames("query"))
			continue
		}
		if param.Schema != nil {
			l.template("query."+k, l.op.Query[k], param.Schema.Value, "query parameter "+k, true)
		}
		l.arrayStyle(k, param)
	}
	for _, p := range l.o.parameters() {
		if p.In == "query" && p.Required && !secretName(p.Name) { // the host sends the credential, in a header
			if _, ok := l.op.Query[p.Name]; !ok {
				l.add("query", "the description requires query parameter %q, which the op does not send", p.Name)
			}
		}
	}
}

// arrayStyle checks that an array arg filling query key k is written as
// the parameter's style and explode say (OpenAPI 3 defaults: form,
// explode true), and that a list parameter is not filled by one that
// repeats the key where it takes one value.
func (l *linter) arrayStyle(k string, param *openapi3.Parameter) {
	t := l.op.Query[k]
	a := l.op.Args[strings.TrimSuffix(strings.TrimPrefix(t, "{"), "}")]
	if a == nil || a.Type != registry.TypeArray || t != "{"+strings.TrimSuffix(strings.TrimPrefix(t, "{"), "}")+"}" {
		return
	}
	if param.Schema == nil || param.Schema.Value == nil || typeOf(param.Schema.Value) != "array" {
		if a.Delimiter() == 0 {
			l.add("query."+k, "query parameter %s takes one value; arg %q repeats the key per value (join them: \"explode\": false)", k, t)
		}
		return
	}
	style := param.Style
	if style == "" {
		style = registry.StyleForm
	}
	explode := param.Explode == nil && style == registry.StyleForm || param.Explode != nil && *param.Explode
	argStyle := a.Style
	if argStyle == "" {
		argStyle = registry.StyleForm
	}
	argExplode := a.Explode == nil || *a.Explode
	if explode != argExplode || !explode && style != argStyle {
		l.add("query."+k, "query parameter %s is style %s, explode %v; arg %q is style %s, explode %v", k, style, explode, t, argStyle, argExplode)
	}
}

func (l *linter) paramNames(in string) string {
	var names []string
	for _, p := range l.o.parameters() {
		if p.In == in {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return "it declares none"
	}
	slices.Sort(names)
	return "it declares: " + strings.Join(names, ", ")
}

// template checks a text template (query or form value) against schema s.
func (l *linter) template(field, t string, s *openapi3.Schema, what string, text bool) {
	pieces, err := registry.ParseTemplate(t)
	if err != nil {
		return
	}
	if len(pieces) == 1 && pieces[0].Arg != "" {
		if a := l.op.Args[pieces[0].Arg]; a != nil {
			l.argAgainst(field, a, pieces[0].Arg, s, what, text)
		}
		return
	}
	for _, p := range pieces {
		if p.Arg != "" { // text with an arg inside: the parameter must take text
			if t := typeOf(s); t != "" && t != "string" && t != "array" {
				l.add(field, "%s is %s; a template with text around {%s} sends a string", what, t, p.Arg)
			}
			return
		}
	}
	if msg := literalProblem(t, s); msg != "" {
		l.add(field, "%q for %s: %s", t, what, msg)
	}
}

// argAgainst checks a declared arg against the schema of what it fills.
// text says the value travels as text (path, query, form, a header).
func (l *linter) argAgainst(field string, a *registry.Arg, name string, s *openapi3.Schema, what string, text bool) {
	if s == nil {
		return
	}
	want := typeOf(s)
	items := s
	if want == "array" && s.Items != nil && s.Items.Value != nil {
		items = s.Items.Value
	}
	ok := true
	switch want {
	case "":
	case "string":
		ok = a.Type == registry.TypeString || text // text carries any scalar
	case "integer":
		ok = a.Type == registry.TypeInteger
	case "number":
		ok = a.Type == registry.TypeInteger || a.Type == registry.TypeNumber
	case "boolean":
		ok = a.Type == registry.TypeBoolean
	case "array":
		it := typeOf(items)
		ok = text && (a.Type == registry.TypeString || it == a.Type || it == "" || it == "number" && a.Type == registry.TypeInteger) ||
			a.Type == typeArray
	case "object":
		ok = false
	}
	if !ok {
		l.add(field, "type mismatch: %s is %s, arg %q is %s", what, describeType(s), name, a.Type)
		return
	}
	enum := enumStrings(items.Enum)
	if len(enum) > 0 && a.Type == registry.TypeString {
		if len(a.Enum) == 0 && a.Pattern == "" {
			l.add(field, "%s allows only %s; declare them as arg %q's enum", what, listed(enum), name)
		}
		for _, v := range a.Enum {
			if want == "array" && text {
				for _, part := range strings.Split(v, ",") {
					if !slices.Contains(enum, part) {
						l.add(field, "arg %q's enum value %q is not one %s allows (%s)", name, part, what, strings.Join(enum, ", "))
					}
				}
			} else if !slices.Contains(enum, v) {
				l.add(field, "arg %q's enum value %q is not one %s allows (%s)", name, v, what, strings.Join(enum, ", "))
			}
		}
	}
	if a.Type == registry.TypeInteger || a.Type == registry.TypeNumber {
		if items.Max != nil && (a.Max == nil || *a.Max > *items.Max) {
			l.add(field, "%s is at most %v; arg %q allows more", what, *items.Max, name)
		}
		if items.Min != nil && (a.Min == nil || *a.Min < *items.Min) {
			l.add(field, "%s is at least %v; arg %q allows less", what, *items.Min, name)
		}
	}
}

func describeType(s *openapi3.Schema) string {
	t := typeOf(s)
	if t == "" {
		return "untyped"
	}
	if t == "array" && s.Items != nil && s.Items.Value != nil {
		if it := typeOf(s.Items.Value); it != "" {
			return "an array of " + it
		}
	}
	if t == "integer" || t == "array" || t == "object" {
		return "an " + t
	}
	return "a " + t
}

// enumStrings renders an enum's values as the text they travel as.
func enumStrings(vs []any) []string {
	var out []string
	for _, v := range vs {
		switch v := v.(type) {
		case nil:
		case string:
			out = append(out, v)
		case float64:
			out = append(out, strconv.FormatFloat(v, 'f', -1, 64))
		default:
			out = append(out, fmt.Sprint(v))
		}
	}
	return out
}

// literalProblem says why the literal text v is not a value of schema s.
func literalProblem(v string, s *openapi3.Schema) string {
	if s == nil {
		return ""
	}
	t := typeOf(s)
	check := func(v string, s *openapi3.Schema) string {
		switch typeOf(s) {
		case "integer":
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				return "the description wants an integer"
			}
		case "number":
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				return "the description wants a number"
			}
		case "boolean":
			if v != "true" && v != "false" {
				return "the description wants true or false"
			}
		}
		if e := enumStrings(s.Enum); len(e) > 0 && !slices.Contains(e, v) {
			return "the description allows only " + listed(e)
		}
		return ""
	}
	if t == "array" && s.Items != nil && s.Items.Value != nil {
		for _, part := range strings.Split(v, ",") {
			if msg := check(part, s.Items.Value); msg != "" {
				return fmt.Sprintf("item %q: %s", part, msg)
			}
		}
		return ""
	}
	return check(v, s)
}

// typeArray is the arg type of a list of values.
const typeArray = "array"

// listed writes allowed values for a message, at most 16 of them.
func listed(vs []string) string {
	if len(vs) > 16 {
		return strings.Join(vs[:16], ", ") + fmt.Sprintf(", … (%d in all)", len(vs))
	}
	return strings.Join(vs, ", ")
}

// standardHeaders may be sent whether or not a description declares them.
var standardHeaders = []string{"accept", "accept-language", "user-agent", "cache-control"}

// headers checks the manifest's and the op's static headers.
func (l *linter) headers() {
	sent := map[string]string{}
	for k, v := range l.m.Headers {
		sent[strings.ToLower(k)] = v
	}
	for _, k := range slices.Sorted(maps.Keys(sent)) {
		field := "headers." + k
		param := l.o.parameter("header", k)
		if param == nil {
			continue // undeclared headers (Accept, a version pin) are the provider's convention
		}
		if param.Schema != nil {
			if msg := literalProblem(sent[k], param.Schema.Value); msg != "" {
				l.add(field, "%q for header parameter %s: %s", sent[k], param.Name, msg)
			}
		}
	}
	for _, p := range l.o.parameters() {
		if p.In != "header" || !p.Required {
			continue
		}
		switch n := strings.ToLower(p.Name); {
		case registry.HostOwnedHeader(n), slices.Contains(standardHeaders, n), strings.EqualFold(n, l.m.Auth.Header), secretName(n):
		default:
			if _, ok := sent[n]; !ok {
				l.add("headers", "the description requires header %q, which the op does not send", p.Name)
			}
		}
	}
}

// body checks body_json and body_form against the request body schema.
func (l *linter) body() {
	if l.m.GraphQL {
		return
	}
	if l.op.BodyJSON != nil {
		s := l.o.requestBody("application/json")
		if s == nil {
			l.add("body_json", "%s %s takes no JSON body (its body: %s)", l.o.Method, l.o.Path, mediaList(l.o.bodyMedia()))
			return
		}
		var v any
		if json.Unmarshal(l.op.BodyJSON, &v) == nil {
			l.jsonValue("body_json", v, s)
		}
	}
	if l.op.BodyForm != nil {
		s := l.o.requestBody("application/x-www-form-urlencoded")
		if s == nil {
			l.add("body_form", "%s %s takes no form body (its body: %s)", l.o.Method, l.o.Path, mediaList(l.o.bodyMedia()))
			return
		}
		for _, k := range l.op.FormKeys() {
			ps, closed := property(s, k)
			if ps == nil {
				if closed {
					l.add("body_form."+k, "%q is not a form field of %s %s (%s)", k, l.o.Method, l.o.Path, propNames(s))
				}
				continue
			}
			l.template("body_form."+k, l.op.BodyForm[k], ps, "form field "+k, true)
		}
		for _, r := range requiredOf(s) {
			if _, ok := l.op.BodyForm[r]; !ok {
				l.add("body_form", "the description requires form field %q, which the op does not send", r)
			}
		}
	}
}

func mediaList(ms []string) string {
	if len(ms) == 0 {
		return "none"
	}
	return strings.Join(ms, ", ")
}

// jsonValue checks a body_json template value against schema s.
func (l *linter) jsonValue(field string, v any, s *openapi3.Schema) {
	if s == nil {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		if t := typeOf(s); t != "" && t != "object" {
			l.add(field, "the description wants %s here, the template has an object", describeType(s))
			return
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			ps, closed := property(s, k)
			if ps == nil {
				if closed {
					l.add(field+"."+k, "%q is not a member the description declares here (%s)", k, propNames(s))
				}
				continue
			}
			l.jsonValue(field+"."+k, v[k], ps)
		}
		for _, r := range requiredOf(s) {
			if _, ok := v[r]; !ok {
				l.add(field, "the description requires member %q, which the template does not send", r)
			}
		}
	case []any:
		if t := typeOf(s); t != "" && t != "array" {
			l.add(field, "the description wants %s here, the template has an array", describeType(s))
			return
		}
		var items *openapi3.Schema
		if s.Items != nil {
			items = s.Items.Value
		}
		for i, e := range v {
			l.jsonValue(field+"["+strconv.Itoa(i)+"]", e, items)
		}
	case string:
		pieces, err := registry.ParseTemplate(v)
		if err != nil {
			return
		}
		if len(pieces) == 1 && pieces[0].Arg != "" {
			if a := l.op.Args[pieces[0].Arg]; a != nil {
				l.argAgainst(field, a, pieces[0].Arg, s, "member "+strings.TrimPrefix(field, "body_json."), false)
			}
			return
		}
		if t := typeOf(s); t != "" && t != "string" {
			l.add(field, "the description wants %s here, the template has a string", describeType(s))
		} else if len(pieces) == 1 && pieces[0].Arg == "" {
			if e := enumStrings(s.Enum); len(e) > 0 && !slices.Contains(e, v) {
				l.add(field, "%q: the description allows only %s", v, strings.Join(e, ", "))
			}
		}
	case float64:
		if t := typeOf(s); t != "" && t != "number" && t != "integer" {
			l.add(field, "the description wants %s here, the template has a number", describeType(s))
		} else if t == "integer" && v != math.Trunc(v) {
			l.add(field, "the description wants an integer here, the template has %v", v)
		}
	case bool:
		if t := typeOf(s); t != "" && t != "boolean" {
			l.add(field, "the description wants %s here, the template has a boolean", describeType(s))
		}
	}
}

// property returns the schema of member k of object schema s (following
// allOf, oneOf and anyOf), or nil; closed says s lists its members, so an
// absent one is unknown rather than allowed.
func property(s *openapi3.Schema, k string) (ps *openapi3.Schema, closed bool) {
	if s == nil {
		return nil, false
	}
	if p, ok := s.Properties[k]; ok && p != nil {
		return p.Value, true
	}
	open := len(s.Properties) == 0
	for _, sub := range s.AllOf {
		if sub == nil || sub.Value == nil {
			continue
		}
		ps, c := property(sub.Value, k)
		if ps != nil {
			return ps, true
		}
		open = open && !c
	}
	// Alternatives (oneOf, anyOf): the member as any of them has it, its
	// enum the union of theirs (Cloudflare's DNS record is one schema per
	// type, each with its own "type" value).
	var alts []*openapi3.Schema
	for _, sub := range append(slices.Clone(s.OneOf), s.AnyOf...) {
		if sub == nil || sub.Value == nil {
			continue
		}
		ps, c := property(sub.Value, k)
		if ps != nil {
			alts = append(alts, ps)
		}
		open = open && !c
	}
	if len(alts) == 1 {
		return alts[0], true
	}
	if len(alts) > 1 {
		u := *alts[0]
		u.Enum = nil
		for _, a := range alts {
			if len(a.Enum) == 0 {
				u.Enum = nil
				break
			}
			u.Enum = append(u.Enum, a.Enum...)
		}
		return &u, true
	}
	if ap := s.AdditionalProperties; ap.Schema != nil && ap.Schema.Value != nil {
		return ap.Schema.Value, true
	} else if ap.Has != nil && *ap.Has && len(s.Properties) > 0 {
		return &openapi3.Schema{}, true // any member is allowed, of any type
	}
	return nil, !open
}

// requiredOf lists the members a request must send to object schema s
// (allOf included): those it requires, less the read-only ones (which
// only an answer carries).
func requiredOf(s *openapi3.Schema) []string {
	var out []string
	for _, r := range s.Required {
		if ps, _ := property(s, r); ps == nil || !ps.ReadOnly {
			out = append(out, r)
		}
	}
	for _, sub := range s.AllOf {
		if sub != nil && sub.Value != nil {
			out = append(out, requiredOf(sub.Value)...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// propNames lists an object schema's members, for messages.
func propNames(s *openapi3.Schema) string {
	var names []string
	var collect func(s *openapi3.Schema)
	collect = func(s *openapi3.Schema) {
		for k := range s.Properties {
			names = append(names, k)
		}
		for _, sub := range append(append(slices.Clone(s.AllOf), s.OneOf...), s.AnyOf...) {
			if sub != nil && sub.Value != nil {
				collect(sub.Value)
			}
		}
	}
	collect(s)
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) == 0 {
		return "it declares none"
	}
	if len(names) > 24 {
		names = append(names[:24], "…")
	}
	return "it declares: " + strings.Join(names, ", ")
}

// at returns the schema at the dot path segs below s: an array on the way
// is stepped into (a path through an array maps over its elements, as in
// pick). open is true when the path leaves what the schema describes (an
// object of any members), so it cannot be checked; missing names the
// segment that is not there.
func at(s *openapi3.Schema, segs []string) (found *openapi3.Schema, open bool, missing string, in *openapi3.Schema) {
	for i := 0; i < len(segs); {
		if s == nil {
			return nil, true, "", nil
		}
		if typeOf(s) == "array" {
			if s.Items == nil || s.Items.Value == nil {
				return nil, true, "", nil
			}
			s = s.Items.Value
			continue
		}
		ps, closed := property(s, segs[i])
		if ps == nil {
			if !closed {
				return nil, true, "", nil
			}
			return nil, false, segs[i], s
		}
		s = ps
		i++
	}
	return s, false, "", nil
}

func splitDot(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, ".")
}

// pick checks that every picked path exists in the 2xx answer.
func (l *linter) pick() {
	s, has := l.o.success()
	if !has {
		l.add("pick", "%s %s describes no 2xx answer", l.o.Method, l.o.Path)
		return
	}
	if s == nil {
		if len(l.op.Pick.Fields) > 0 {
			l.add("pick", "%s %s describes no JSON answer, yet the op picks fields", l.o.Method, l.o.Path)
		}
		return
	}
	root, open, missing, in := at(s, splitDot(l.op.Pick.Root))
	switch {
	case missing != "":
		l.add("pick.root", "%q is not in the 2xx answer's schema: no %q (%s)", l.op.Pick.Root, missing, propNames(in))
		return
	case open:
		return
	}
	selected := l.selectedFields()
	for _, f := range l.op.Pick.Fields {
		_, _, missing, in := at(root, splitDot(f))
		if missing != "" && !selects(selected, f) {
			l.add("pick.fields."+f, "%q is not in the 2xx answer's schema: no %q (%s)", f, missing, propNames(in))
		}
	}
}

// selectedFields are the fields the op asks for by name: the literal
// comma list it sends in a query parameter whose values the description
// enumerates (Asana's opt_fields, "name,completed,assignee.name"), whose
// answer then holds more than the compact schema describes.
func (l *linter) selectedFields() []string {
	var out []string
	for k, t := range l.op.Query {
		p := l.o.parameter("query", k)
		if p == nil || p.Schema == nil || typeOf(p.Schema.Value) != "array" || p.Schema.Value.Items == nil || p.Schema.Value.Items.Value == nil {
			continue
		}
		enum := enumStrings(p.Schema.Value.Items.Value.Enum)
		if len(enum) == 0 || strings.Contains(t, "{") {
			continue
		}
		for _, f := range strings.Split(t, ",") {
			if slices.Contains(enum, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// selects says a picked path was asked for by name: it, or a field it
// lies under, is in the list.
func selects(selected []string, f string) bool {
	for _, s := range selected {
		if f == s || strings.HasPrefix(f, s+".") {
			return true
		}
	}
	return false
}

// paginate checks that the paths paginate reads exist in the 2xx answer,
// with the types it reads there.
func (l *linter) paginate() {
	pg := l.op.Paginate
	if pg == nil {
		return
	}
	s, _ := l.o.success()
	if pg.Style == registry.PaginateLink {
		hs := l.o.successHeaders()
		if len(hs) > 0 && !slices.ContainsFunc(hs, func(h string) bool { return strings.EqualFold(h, "Link") }) {
			l.add("paginate.style", "style link reads the Link header, which the 2xx answer does not declare (it declares: %s)", strings.Join(hs, ", "))
		}
		return
	}
	if s == nil {
		return
	}
	check := func(field, p string, base *openapi3.Schema, want string) {
		if p == "" {
			return
		}
		got, open, missing, in := at(base, splitDot(p))
		switch {
		case missing != "":
			l.add("paginate."+field, "%q is not in the 2xx answer's schema: no %q (%s)", p, missing, propNames(in))
		case open || got == nil:
		case want != "" && typeOf(got) != "" && typeOf(got) != want && !(want == "integer" && typeOf(got) == "number"):
			l.add("paginate."+field, "%q is %s in the description; paging reads %s there", p, describeType(got), want)
		}
	}
	check("cursor", pg.Cursor, s, "")
	check("has_more", pg.HasMore, s, "boolean")
	check("page", pg.Page, s, "integer")
	check("total_pages", pg.TotalPages, s, "integer")
	if pg.LastItem != "" {
		if root, open, missing, _ := at(s, splitDot(l.op.Pick.Root)); missing == "" && !open {
			check("last_item", pg.LastItem, root, "")
		}
	}
}
