package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/elevenmessenger/pinned/registry"
)

// ImportOptions says what [Import] writes.
type ImportOptions struct {
	// Ops names the operations to import: operationIds or "METHOD /path"
	// (see [Description.Find]). At least one.
	Ops []string
	// ID is the manifest id; default: derived from the description's title.
	ID string
	// Name is the service's human name; default: the title.
	Name string
	// Viewer names the imported op (by operationId, "METHOD /path" or its
	// manifest op name) that says who the credential belongs to; default:
	// a read op without required args whose path ends in me, user, self,
	// whoami or account.
	Viewer string
}

// Limits of what Import proposes (the loader's own limits).
const (
	maxProposedFields = 64
	maxFieldDepth     = 3
	maxImportArgs     = 32
)

// Import writes a draft manifest for the chosen operations of d: the host
// of its first server, the auth its security scheme says, and per
// operation the method, the path with the server's base path, args from
// its parameters and request body (types, required, enums, patterns,
// bounds, defaults), the body kind, pagination where it is recognisable,
// a write's confirm sentence naming every arg it always sends, and a
// proposed pick from the 2xx answer's schema with each field's data-flow
// class. Free text is left out of pick and listed under draft.text_off.
// The result carries a "draft" mark that the loader refuses until a
// reviewer deletes it (docs/MANIFEST.md, "Adding a service in an
// afternoon"); with the mark deleted it passes the loader.
func Import(d *Description, opts ImportOptions) ([]byte, error) {
	if len(opts.Ops) == 0 {
		return nil, fmt.Errorf("no operations given: name them by operationId or as \"METHOD /path\"")
	}
	im := &importer{d: d, draft: &registry.Draft{TextOff: map[string][]string{}}}
	m := &registry.Manifest{Manifest: registry.FormatVersion, Ops: map[string]*registry.Op{}}
	m.Name = strings.TrimSpace(opts.Name)
	if m.Name == "" {
		m.Name = oneLine(d.Title(), 64)
	}
	if m.Name == "" {
		m.Name = "Service"
	}
	m.ID = opts.ID
	if m.ID == "" {
		m.ID = serviceID(m.Name)
	}
	m.Host = d.Host()
	if m.Host == "" || !strings.Contains(m.Host, ".") || strings.ContainsAny(m.Host, "{}") {
		im.note("the description names no usable server host (%q): set host", m.Host)
		m.Host = "api.example.com"
	}
	src := "openapi: " + d.Name
	if t := d.Title(); t != "" {
		src += " (" + oneLine(t, 80)
		if d.doc.Info != nil && d.doc.Info.Version != "" {
			src += " " + oneLine(d.doc.Info.Version, 40)
		}
		src += ")"
	}
	if d.Source != "" {
		src += "; " + oneLine(d.Source, 300)
	}
	im.draft.Source = src
	var chosen []Operation
	names := map[string]Operation{}
	for _, ref := range opts.Ops {
		o, err := d.Find(ref)
		if err != nil {
			return nil, err
		}
		name := opName(o)
		for i := 2; names[name].op != nil; i++ {
			name = fmt.Sprintf("%s_%d", opName(o), i)
		}
		names[name] = o
		chosen = append(chosen, o)
		op, err := im.op(name, o)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %v", o.Method, o.Path, err)
		}
		m.Ops[name] = op
	}
	im.auth(m, chosen, names)
	m.ErrorMessage = im.errorMessage(chosen)
	m.Viewer = im.viewer(opts.Viewer, m, names)
	if len(im.draft.TextOff) == 0 {
		im.draft.TextOff = nil
	}
	return encode(m, im.draft)
}

type importer struct {
	d     *Description
	draft *registry.Draft
}

func (im *importer) note(format string, a ...any) {
	im.draft.Review = append(im.draft.Review, fmt.Sprintf(format, a...))
}

// serviceID makes a manifest id of a name: lower-case letters and digits.
func serviceID(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' && b.Len() > 0 {
			b.WriteRune(r)
		}
		if b.Len() == 31 {
			break
		}
	}
	if b.Len() < 2 {
		return "service"
	}
	return b.String()
}

// snake makes an op or arg name of an identifier: "teamId" → "team_id",
// "page[size]" → "page_size"; "" when nothing is left.
func snake(s string) string {
	var b strings.Builder
	prevLower := false
	for _, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			if prevLower {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			prevLower = false
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			prevLower = true
		default:
			b.WriteByte('_')
			prevLower = false
		}
	}
	out := strings.Trim(regexp.MustCompile(`_+`).ReplaceAllString(b.String(), "_"), "_")
	for out != "" && (out[0] < 'a' || out[0] > 'z') {
		out = strings.TrimLeft(out[1:], "_")
	}
	if len(out) > 48 {
		out = strings.TrimRight(out[:48], "_")
	}
	return out
}

// opName names an imported op: its operationId in snake case, or the
// method and path words.
func opName(o Operation) string {
	if n := snake(o.ID); n != "" {
		return n
	}
	words := []string{strings.ToLower(o.Method)}
	for _, seg := range strings.Split(o.Path, "/") {
		if seg != "" && !strings.Contains(seg, "{") {
			words = append(words, seg)
		}
	}
	if n := snake(strings.Join(words, "_")); n != "" {
		return n
	}
	return "op"
}

// oneLine is s on one line, without control characters, at most n
// characters (cut at a word).
func oneLine(s string, n int) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n])
		if i := strings.LastIndexByte(s, ' '); i > n/2 {
			s = s[:i]
		}
	}
	return s
}

// firstSentence is the first sentence of a description, one line.
func firstSentence(s string, n int) string {
	s = oneLine(s, 4*n)
	if i := strings.Index(s, ". "); i > 0 {
		s = s[:i+1]
	}
	return oneLine(s, n)
}

// humanize makes a summary of an operationId ("listProjects" → "List
// projects").
func humanize(id string) string {
	w := strings.ReplaceAll(snake(id), "_", " ")
	if w == "" {
		return ""
	}
	return strings.ToUpper(w[:1]) + w[1:]
}

// opBuild is one op being imported.
type opBuild struct {
	name  string
	o     Operation
	op    *registry.Op
	notes []string
	order []string // args in the order they are met (confirm)
}

func (b *opBuild) note(format string, a ...any) {
	b.notes = append(b.notes, fmt.Sprintf(format, a...))
}

// arg declares an arg, renaming it when the name is taken; it returns the
// name used.
func (b *opBuild) arg(want string, a *registry.Arg) string {
	name := want
	for i := 2; b.op.Args[name] != nil; i++ {
		name = fmt.Sprintf("%s_%d", want, i)
	}
	b.op.Args[name] = a
	b.order = append(b.order, name)
	return name
}

func (im *importer) op(name string, o Operation) (*registry.Op, error) {
	op := &registry.Op{Method: o.Method, Args: map[string]*registry.Arg{}}
	b := &opBuild{name: name, o: o, op: op}
	switch o.Method {
	case "GET":
		op.Access = registry.AccessRead
	case "POST", "PUT", "PATCH", "DELETE":
		op.Access = registry.AccessWrite
	default:
		return nil, fmt.Errorf("method %s: an op is GET, POST, PUT, PATCH or DELETE", o.Method)
	}
	op.Summary = oneLine(o.op.Summary, 200)
	if op.Summary == "" {
		op.Summary = humanize(o.ID)
	}
	if op.Summary == "" {
		op.Summary = o.Method + " " + o.Path
	}
	if err := im.path(b); err != nil {
		return nil, err
	}
	im.queryParams(b)
	im.headerParams(b)
	im.requestBody(b)
	if op.Access == registry.AccessWrite {
		im.confirm(b)
		if o.Method == "POST" && strings.Contains(strings.ToLower(o.ID+o.Path), "search") || strings.Contains(strings.ToLower(o.Path), "query") {
			b.note("POST that reads (a search or query): make it \"read\" if it changes nothing, and drop its confirm")
		}
	}
	im.pagination(b)
	im.pick(b)
	if len(op.Args) == 0 {
		op.Args = nil
	}
	for _, n := range b.notes {
		im.note("op %s: %s", name, n)
	}
	return op, nil
}

// path copies the path template, naming each placeholder's arg.
func (im *importer) path(b *opBuild) error {
	segs := strings.Split(strings.TrimPrefix(b.o.Path, "/"), "/")
	for i, seg := range segs {
		switch {
		case seg == "" && i == len(segs)-1 && i > 0:
			return fmt.Errorf("the path ends in \"/\"; a manifest path has no trailing slash, so this operation cannot be imported as written")
		case seg == "":
			return fmt.Errorf("the path has an empty segment")
		case descPlaceholder.FindString(seg) == seg:
			pname := seg[1 : len(seg)-1]
			p := b.o.parameter("path", pname)
			a := &registry.Arg{Type: registry.TypeString, Required: true}
			var s *openapi3.Schema
			if p != nil && p.Schema != nil {
				s = p.Schema.Value
				a.Description = firstSentence(p.Description, 200)
			}
			im.constrain(b, a, s, pname, true)
			if a.Type != registry.TypeString && a.Type != registry.TypeInteger {
				a.Type = registry.TypeString
			}
			name := b.arg(argName(pname), a)
			segs[i] = "{" + name + "}"
		case strings.ContainsAny(seg, "{}"):
			return fmt.Errorf("segment %q puts text beside a placeholder; a manifest placeholder fills a whole segment, so this operation cannot be imported as written", seg)
		}
	}
	b.op.Path = "/" + strings.Join(segs, "/")
	return nil
}

// argName makes an arg name of a parameter or property name.
func argName(s string) string {
	if n := snake(s); n != "" {
		return n
	}
	return "value"
}

var queryKey = regexp.MustCompile(`^[A-Za-z0-9\-._~\[\]]+$`)

// queryParams declares the query parameters: required ones first, all
// of them while fewer than 32 args are declared.
func (im *importer) queryParams(b *opBuild) {
	ps := b.o.parameters()
	slices.SortStableFunc(ps, func(x, y *openapi3.Parameter) int {
		switch {
		case x.Required == y.Required:
			return 0
		case x.Required:
			return -1
		}
		return 1
	})
	for _, p := range ps {
		if p.In != "query" {
			continue
		}
		switch {
		case p.Deprecated:
			continue
		case secretName(p.Name):
			b.note("query parameter %q left out: it carries a credential, which only the host sends (in a header)", p.Name)
			continue
		case !queryKey.MatchString(p.Name):
			b.note("query parameter %q left out: a query key uses letters, digits, - . _ ~ [ ]", p.Name)
			continue
		case len(b.op.Args) >= maxImportArgs:
			b.note("query parameter %q left out: an op takes at most %d args", p.Name, maxImportArgs)
			continue
		}
		a := &registry.Arg{Type: registry.TypeString, Required: p.Required, Description: firstSentence(p.Description, 200)}
		var s *openapi3.Schema
		if p.Schema != nil {
			s = p.Schema.Value
		}
		if typeOf(s) == "array" {
			if !im.arrayArg(b, a, s, p.Name) {
				continue
			}
			switch p.Style {
			case "", registry.StyleForm:
			case registry.StyleSpaceDelimited, registry.StylePipeDelimited:
				a.Style = p.Style
			default:
				b.note("query parameter %q left out: style %q is not one a manifest sends (form, spaceDelimited, pipeDelimited)", p.Name, p.Style)
				continue
			}
			if p.Explode != nil && !*p.Explode {
				f := false
				a.Explode = &f
			} else if a.Style != "" {
				b.note("query parameter %q: style %s with explode true repeats the key, as style form does", p.Name, a.Style)
				a.Style = ""
			}
		} else if !im.constrain(b, a, s, p.Name, false) {
			continue
		}
		if b.op.Query == nil {
			b.op.Query = map[string]string{}
		}
		b.op.Query[p.Name] = "{" + b.arg(argName(p.Name), a) + "}"
	}
}

func scalar(t string) bool {
	return t == "string" || t == "integer" || t == "number" || t == "boolean"
}

// headerParams notes the header parameters the op needs: a required
// header with one allowed value becomes a static header; others are left
// to the reviewer.
func (im *importer) headerParams(b *opBuild) {
	for _, p := range b.o.parameters() {
		if p.In != "header" || registry.HostOwnedHeader(p.Name) || slices.Contains(standardHeaders, strings.ToLower(p.Name)) || secretName(p.Name) {
			continue
		}
		var s *openapi3.Schema
		if p.Schema != nil {
			s = p.Schema.Value
		}
		if s != nil && len(s.Enum) == 1 {
			b.note("header %q must be %v: add it to the manifest's headers", p.Name, s.Enum[0])
		} else if p.Required {
			b.note("header %q is required by the description and is not sent: add a static value to the manifest's headers or drop the op", p.Name)
		}
	}
}

// arrayArg makes a an array arg of the list schema s: its items' type and
// constraints, and its maxItems (within the loader's 1 to 1000). It
// returns false (after a note) when the items are no scalar.
func (im *importer) arrayArg(b *opBuild, a *registry.Arg, s *openapi3.Schema, what string) bool {
	var is *openapi3.Schema
	if s.Items != nil {
		is = merged(s.Items.Value)
	}
	if is == nil || !scalar(typeOf(is)) && typeOf(is) != "" {
		b.note("%q left out: a list of %s, which an arg cannot hold (its values are strings, integers, numbers or booleans)", what, describeType(is))
		return false
	}
	it := &registry.Arg{Required: true} // no default for a value
	if !im.constrain(b, it, is, what, false) {
		return false
	}
	it.Required = false
	a.Type, a.Items = registry.TypeArray, it
	if s.MaxItems != nil && *s.MaxItems >= 1 {
		n := int(min(*s.MaxItems, 1000))
		a.MaxItems = &n
	}
	return true
}

// constrain copies a schema's type and constraints onto a. It returns
// false (after a note) when the value cannot be an arg.
func (im *importer) constrain(b *opBuild, a *registry.Arg, s *openapi3.Schema, what string, path bool) bool {
	if s == nil {
		if path {
			im.proposePattern(b, a, what)
		}
		return true
	}
	switch t := typeOf(s); t {
	case "", "string":
		a.Type = registry.TypeString
	case "integer", "number", "boolean":
		a.Type = t
	default:
		b.note("%q left out: it is %s, which an arg cannot hold", what, describeType(s))
		return false
	}
	switch a.Type {
	case registry.TypeString:
		if e := enumStrings(s.Enum); len(e) > 0 && len(e) == len(s.Enum) {
			for _, v := range e {
				if !slices.Contains(a.Enum, v) {
					a.Enum = append(a.Enum, v)
				}
			}
		}
		if s.MaxLength != nil && *s.MaxLength >= 1 && *s.MaxLength <= 65536 {
			n := int(*s.MaxLength)
			a.MaxLength = &n
		}
		if s.Pattern != "" && a.Enum == nil {
			if p, ok := anchored(s.Pattern); ok {
				a.Pattern = p
			} else {
				b.note("%q: the description's pattern %q is not RE2; left out", what, s.Pattern)
			}
		}
		if a.Enum == nil && a.Pattern == "" && (path || identifierName(what)) {
			im.proposePattern(b, a, what)
		}
	case registry.TypeInteger, registry.TypeNumber:
		if s.Min != nil && !math.IsInf(*s.Min, 0) {
			v := *s.Min
			if a.Type == registry.TypeInteger {
				v = math.Ceil(v)
			}
			a.Min = &v
		}
		if s.Max != nil && !math.IsInf(*s.Max, 0) {
			v := *s.Max
			if a.Type == registry.TypeInteger {
				v = math.Floor(v)
			}
			a.Max = &v
		}
		if a.Min != nil && a.Max != nil && *a.Min > *a.Max {
			a.Min, a.Max = nil, nil
		}
	}
	if !a.Required && s.Default != nil {
		if raw, ok := defaultFor(a, s.Default); ok {
			a.Default = raw
		}
	}
	return true
}

// proposedPattern is proposed for ids without a format of their own.
const proposedPattern = "^[A-Za-z0-9._:-]+$"

func (im *importer) proposePattern(b *opBuild, a *registry.Arg, what string) {
	a.Pattern = proposedPattern
	if a.MaxLength == nil {
		n := 256
		a.MaxLength = &n
	}
	b.note("%q: proposed pattern %s and max_length %d; check them against the provider's ids", what, proposedPattern, *a.MaxLength)
}

// identifierName says a parameter's name reads as an id.
func identifierName(s string) bool {
	l := strings.ToLower(s)
	for _, suffix := range []string{"id", "_gid", "gid", "key", "slug", "uuid", "sid"} {
		if strings.HasSuffix(l, suffix) {
			return true
		}
	}
	return false
}

// anchored makes an anchored RE2 pattern of a description's pattern.
func anchored(p string) (string, bool) {
	if _, err := regexp.Compile(p); err != nil || len(p) > 1000 {
		return "", false
	}
	if !strings.HasPrefix(p, "^") || !strings.HasSuffix(p, "$") || strings.Contains(p, "|") {
		p = "^(?:" + strings.TrimSuffix(strings.TrimPrefix(p, "^"), "$") + ")$"
	}
	if _, err := regexp.Compile(p); err != nil {
		return "", false
	}
	return p, true
}

// defaultFor encodes a description's default as the arg's, when it is a
// value of the arg's type within its constraints.
func defaultFor(a *registry.Arg, v any) (json.RawMessage, bool) {
	switch a.Type {
	case registry.TypeString:
		s, ok := v.(string)
		if !ok || a.Enum != nil && !slices.Contains(a.Enum, s) {
			return nil, false
		}
		if a.Pattern != "" && !regexp.MustCompile(a.Pattern).MatchString(s) || a.MaxLength != nil && len([]rune(s)) > *a.MaxLength {
			return nil, false
		}
	case registry.TypeInteger, registry.TypeNumber:
		f, ok := v.(float64)
		if !ok || a.Type == registry.TypeInteger && f != math.Trunc(f) || a.Min != nil && f < *a.Min || a.Max != nil && f > *a.Max || math.Abs(f) > 1<<53 {
			return nil, false
		}
		if a.Type == registry.TypeInteger {
			return json.RawMessage(strconv.FormatInt(int64(f), 10)), true
		}
	case registry.TypeBoolean:
		if _, ok := v.(bool); !ok {
			return nil, false
		}
	}
	return compactJSON(v), true
}

// requestBody turns a JSON or form request body into a template.
func (im *importer) requestBody(b *opBuild) {
	if js := b.o.requestBody("application/json"); js != nil {
		if b.o.Method == "GET" || b.o.Method == "DELETE" {
			b.note("the description has a body on %s, which a manifest cannot send; left out", b.o.Method)
			return
		}
		tmpl := im.jsonTemplate(b, js, nil, true, 0)
		if obj, ok := tmpl.(ordered); ok {
			b.op.BodyJSON = compactJSON(obj)
		} else {
			b.op.BodyJSON = json.RawMessage(`{}`)
		}
		return
	}
	if fs := b.o.requestBody("application/x-www-form-urlencoded"); fs != nil {
		b.op.BodyForm = map[string]string{}
		for _, k := range sortedProps(fs) {
			ps := fs.Properties[k].Value
			if ps == nil || ps.ReadOnly || !queryKey.MatchString(k) {
				continue
			}
			if len(b.op.Args) >= maxImportArgs {
				b.note("form field %q left out: an op takes at most %d args", k, maxImportArgs)
				continue
			}
			a := &registry.Arg{Required: slices.Contains(fs.Required, k), Description: firstSentence(ps.Description, 200)}
			if !scalar(typeOf(ps)) && typeOf(ps) != "" {
				b.note("form field %q left out: it is %s", k, describeType(ps))
				continue
			}
			im.constrain(b, a, ps, k, false)
			b.op.BodyForm[k] = "{" + b.arg(argName(k), a) + "}"
		}
		if len(b.op.BodyForm) == 0 {
			b.op.BodyForm = nil
		}
		return
	}
	if ms := b.o.bodyMedia(); len(ms) > 0 {
		b.note("request body of media %s left out: a manifest sends JSON or a form", strings.Join(ms, ", "))
	}
}

// ordered is a JSON object that keeps its members' order.
type ordered []member

type member struct {
	k string
	v any
}

// MarshalJSON writes the members in order.
func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(compactJSON(m.k))
		b.WriteByte(':')
		b.Write(compactJSON(m.v))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// sortedProps lists an object schema's properties: required ones first,
// then by name.
func sortedProps(s *openapi3.Schema) []string {
	keys := slices.Sorted(maps.Keys(s.Properties))
	slices.SortStableFunc(keys, func(x, y string) int {
		rx, ry := slices.Contains(s.Required, x), slices.Contains(s.Required, y)
		switch {
		case rx == ry:
			return 0
		case rx:
			return -1
		}
		return 1
	})
	return keys
}

// jsonTemplate makes the body_json template of schema s: each scalar
// member an "{arg}"; an object member a nested template. required says
// the member is required all the way up; path names it for args.
func (im *importer) jsonTemplate(b *opBuild, s *openapi3.Schema, path []string, required bool, depth int) any {
	s = merged(s)
	if typeOf(s) != "object" && typeOf(s) != "" || len(s.Properties) == 0 {
		return nil
	}
	var out ordered
	for _, k := range sortedProps(s) {
		ref := s.Properties[k]
		if ref == nil || ref.Value == nil || ref.Value.ReadOnly {
			continue
		}
		ps := merged(ref.Value)
		req := required && slices.Contains(s.Required, k)
		where := strings.Join(append(slices.Clone(path), k), ".")
		switch t := typeOf(ps); {
		case t == "object" || t == "" && len(ps.Properties) > 0:
			if depth+1 >= maxFieldDepth {
				b.note("body member %q left out: nested deeper than %d", where, maxFieldDepth)
				continue
			}
			if sub := im.jsonTemplate(b, ps, append(slices.Clone(path), k), req, depth+1); sub != nil {
				out = append(out, member{k, sub})
			}
		case scalar(t) || t == "":
			if len(b.op.Args) >= maxImportArgs {
				b.note("body member %q left out: an op takes at most %d args", where, maxImportArgs)
				continue
			}
			a := &registry.Arg{Required: req, Description: firstSentence(ps.Description, 200)}
			im.constrain(b, a, ps, k, false)
			want := argName(k)
			if len(path) > 0 && !(len(path) == 1 && wrapper(path[0])) {
				want = argName(path[len(path)-1] + "_" + k)
			}
			out = append(out, member{k, "{" + b.arg(want, a) + "}"})
		case t == "array":
			if len(b.op.Args) >= maxImportArgs {
				b.note("body member %q left out: an op takes at most %d args", where, maxImportArgs)
				continue
			}
			a := &registry.Arg{Required: req, Description: firstSentence(ps.Description, 200)}
			if !im.arrayArg(b, a, ps, where) {
				continue
			}
			want := argName(k)
			if len(path) > 0 && !(len(path) == 1 && wrapper(path[0])) {
				want = argName(path[len(path)-1] + "_" + k)
			}
			out = append(out, member{k, "{" + b.arg(want, a) + "}"})
		default:
			b.note("body member %q left out: it is %s, which an arg cannot hold yet", where, describeType(ps))
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// wrapper says a body member only wraps the object (Asana's "data").
func wrapper(k string) bool { return k == "data" || k == "attributes" }

// merged folds a schema's allOf into one schema (properties and required
// joined), so a body or answer written as allOf reads as one object.
func merged(s *openapi3.Schema) *openapi3.Schema {
	if s == nil || len(s.AllOf) == 0 {
		return s
	}
	out := *s
	out.Properties = maps.Clone(s.Properties)
	if out.Properties == nil {
		out.Properties = openapi3.Schemas{}
	}
	out.Required = slices.Clone(s.Required)
	out.AllOf = nil
	for _, sub := range s.AllOf {
		if sub == nil || sub.Value == nil {
			continue
		}
		m := merged(sub.Value)
		for k, v := range m.Properties {
			if _, ok := out.Properties[k]; !ok {
				out.Properties[k] = v
			}
		}
		out.Required = append(out.Required, m.Required...)
		if out.Type == nil {
			out.Type = m.Type
		}
	}
	return &out
}

// confirm writes a write op's sentence: its summary, then every arg the
// request always carries (required or defaulted), each quoted.
func (im *importer) confirm(b *opBuild) {
	var parts, optional []string
	for _, name := range b.order {
		a := b.op.Args[name]
		if (a.Required || len(a.Default) > 0) && a.Type != registry.TypeArray {
			if a.Type == registry.TypeString {
				parts = append(parts, fmt.Sprintf("%s \"{%s}\"", strings.ReplaceAll(name, "_", " "), name))
			} else {
				parts = append(parts, fmt.Sprintf("%s {%s}", strings.ReplaceAll(name, "_", " "), name))
			}
		} else {
			optional = append(optional, name)
		}
	}
	s := strings.TrimRight(b.op.Summary, ".?!")
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	b.op.Confirm = s + "?"
	if len(optional) > 0 {
		b.note("confirm names every arg always sent; optional %s, when given, show after it (the consent lists every value sent)", strings.Join(optional, ", "))
	}
}

// Names of the cursor a list answer carries, and of the args that send it
// back, by style (checked in order).
var (
	cursorParams  = []string{"cursor", "after", "starting_after", "start_cursor", "page_token", "pageToken", "page[after]", "next_cursor", "offset_token", "continuation", "offset"}
	cursorFields  = []string{"next_cursor", "response_metadata.next_cursor", "paging.next.after", "nextPageToken", "next_page_token", "pagination.next_cursor", "meta.next_cursor", "meta.after_cursor", "links.next_cursor", "next_page.offset", "cursor", "next", "nextCursor", "pageInfo.endCursor"}
	hasMoreFields = []string{"has_more", "hasMore", "has_next_page", "hasNextPage", "pageInfo.hasNextPage", "meta.has_more", "more"}
	pageFields    = [][2]string{{"pagination.current_page", "pagination.total_pages"}, {"meta.page", "meta.total_pages"}, {"page", "total_pages"}, {"meta.pagination.page", "meta.pagination.pages"}, {"page", "pages"}}
)

// pagination recognises how a read op pages: a cursor parameter with a
// cursor in the answer (gated by a has-more boolean when there is one),
// has_more with starting_after, or page numbers with a page count.
func (im *importer) pagination(b *opBuild) {
	if b.op.Access != registry.AccessRead {
		return
	}
	s, _ := b.o.success()
	if s == nil {
		return
	}
	argFor := func(key string) (string, *registry.Arg) {
		t := b.op.Query[key]
		if !strings.HasPrefix(t, "{") {
			return "", nil
		}
		name := t[1 : len(t)-1]
		return name, b.op.Args[name]
	}
	find := func(paths []string, want string) string {
		for _, p := range paths {
			if got, open, missing, _ := at(s, splitDot(p)); missing == "" && !open && got != nil && (want == "" || typeOf(got) == want) {
				return p
			}
		}
		return ""
	}
	hasMore := find(hasMoreFields, "boolean")
	for _, key := range cursorParams {
		name, a := argFor(key)
		if a == nil || a.Type != registry.TypeString || a.Required {
			continue
		}
		bound(a)
		if key == "starting_after" && hasMore != "" {
			b.op.Paginate = &registry.Paginate{Style: registry.PaginateLastItem, Arg: name, HasMore: hasMore, LastItem: "id", MaxPages: 10}
			b.note("pages by has_more and starting_after: check that each item's id is the cursor")
			return
		}
		if c := find(cursorFields, "string"); c != "" {
			b.op.Paginate = &registry.Paginate{Style: registry.PaginateCursor, Arg: name, Cursor: c, HasMore: hasMore, MaxPages: 10}
			b.note("pages by the cursor at %s; check it and the cursor arg's proposed pattern", c)
			return
		}
	}
	if name, a := argFor("page"); a != nil && a.Type == registry.TypeInteger && !a.Required {
		for _, pf := range pageFields {
			if find([]string{pf[0]}, "integer") != "" && find([]string{pf[1]}, "integer") != "" {
				if a.Max == nil {
					v := 1000.0
					a.Max = &v
				}
				a.Default = nil
				b.op.Paginate = &registry.Paginate{Style: registry.PaginatePageCount, Arg: name, Page: pf[0], TotalPages: pf[1], MaxPages: 10}
				return
			}
		}
		if slices.ContainsFunc(b.o.successHeaders(), func(h string) bool { return strings.EqualFold(h, "Link") }) {
			if a.Max == nil {
				v := 1000.0
				a.Max = &v
			}
			a.Default = nil
			b.op.Paginate = &registry.Paginate{Style: registry.PaginateLink, Arg: name, MaxPages: 10}
			return
		}
	}
}

// bound gives a cursor arg the declaration the loader wants of one: a
// pattern and a short max_length.
func bound(a *registry.Arg) {
	a.Default = nil
	if a.Pattern == "" && a.Enum == nil {
		a.Pattern = "^[A-Za-z0-9._~:=+/-]+$"
	}
	if a.MaxLength == nil || *a.MaxLength > registry.MaxCursorLength {
		n := registry.MaxCursorLength
		a.MaxLength = &n
	}
}

// listRoots are member names that hold a list answer's items.
var listRoots = []string{"data", "items", "results", "values", "records", "entries", "nodes", "members", "elements", "issues", "projects", "channels", "messages", "users", "objects"}

// pick proposes the projection: the items (or the object) of the 2xx
// answer, each field with its class; free text goes to draft.text_off.
func (im *importer) pick(b *opBuild) {
	b.op.Pick = &registry.Pick{Fields: []string{}, Classes: map[string]string{}}
	s, _ := b.o.success()
	if s == nil {
		b.note("the description has no JSON 2xx answer: the pick is empty")
		return
	}
	s = merged(s)
	root := ""
	if typeOf(s) == "object" {
		var arrays []string
		for k, p := range s.Properties {
			if p != nil && p.Value != nil && typeOf(p.Value) == "array" && p.Value.Items != nil && p.Value.Items.Value != nil && typeOf(merged(p.Value.Items.Value)) == "object" {
				arrays = append(arrays, k)
			}
		}
		slices.Sort(arrays)
		for _, k := range listRoots {
			if slices.Contains(arrays, k) {
				root = k
				break
			}
		}
		if root == "" && len(arrays) == 1 {
			root = arrays[0]
		}
		if root == "" && len(s.Properties) == 1 {
			for k, p := range s.Properties {
				if (k == "data" || k == "result") && p.Value != nil && typeOf(merged(p.Value)) == "object" {
					root = k
				}
			}
		}
	}
	node := s
	if root != "" {
		node = merged(s.Properties[root].Value)
	}
	if typeOf(node) == "array" && node.Items != nil {
		node = merged(node.Items.Value)
	}
	b.op.Pick.Root = root
	var fields []field
	collectFields(node, nil, &fields, 0)
	slices.SortStableFunc(fields, func(x, y field) int { return len(x.path) - len(y.path) })
	var off []string
	for _, f := range fields {
		p := strings.Join(f.path, ".")
		switch {
		case secretName(f.path[len(f.path)-1]):
			b.note("field %q left out: its name says it is a credential", p)
		case f.class == registry.ClassText:
			if len(b.op.Pick.Fields)+len(off) < maxProposedFields {
				off = append(off, p)
			}
		case len(b.op.Pick.Fields)+len(off) < maxProposedFields:
			b.op.Pick.Fields = append(b.op.Pick.Fields, p)
			b.op.Pick.Classes[p] = f.class
		}
	}
	if len(off) > 0 {
		im.draft.TextOff[b.name] = off
	}
}

// field is a proposed pick field.
type field struct {
	path  []string
	class string
}

var dotSeg = regexp.MustCompile(`^[A-Za-z0-9_\-$@:]+$`)

// collectFields lists the scalar fields of an answer schema, at most
// maxFieldDepth segments deep; an array of objects is stepped into.
func collectFields(s *openapi3.Schema, path []string, out *[]field, depth int) {
	s = merged(s)
	if s == nil {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		ref := s.Properties[k]
		if ref == nil || ref.Value == nil || !dotSeg.MatchString(k) {
			continue
		}
		ps := merged(ref.Value)
		p := append(slices.Clone(path), k)
		t := typeOf(ps)
		if t == "array" && ps.Items != nil && ps.Items.Value != nil {
			it := merged(ps.Items.Value)
			if typeOf(it) == "object" || len(it.Properties) > 0 {
				if depth+1 < maxFieldDepth {
					collectFields(it, p, out, depth+1)
				}
				continue
			}
			*out = append(*out, field{p, classify(k, it)})
			continue
		}
		if t == "object" || t == "" && len(ps.Properties) > 0 {
			if depth+1 < maxFieldDepth {
				collectFields(ps, p, out, depth+1)
			}
			continue
		}
		*out = append(*out, field{p, classify(k, ps)})
	}
}

// classify proposes a field's data-flow class from its schema and name.
func classify(name string, s *openapi3.Schema) string {
	l := strings.ToLower(name)
	has := func(suffixes ...string) bool {
		for _, x := range suffixes {
			if l == x || strings.HasSuffix(l, "_"+x) || strings.HasSuffix(name, strings.ToUpper(x[:1])+x[1:]) {
				return true
			}
		}
		return false
	}
	switch t := typeOf(s); {
	case t == "boolean":
		return registry.ClassBoolean
	case s.Format == "date" || s.Format == "date-time" || has("at", "date", "time", "timestamp", "created", "updated", "modified", "due", "expires"):
		return registry.ClassTime
	case t == "integer" || t == "number":
		if has("id", "gid", "number") {
			return registry.ClassIdentifier
		}
		return registry.ClassNumber
	case s.Format == "uri" || s.Format == "url" || has("url", "uri", "href", "link", "permalink"):
		return registry.ClassURL
	case len(s.Enum) > 0 || has("status", "state", "type", "kind", "role", "plan", "currency", "locale", "language", "timezone", "tz", "visibility", "priority", "color"):
		return registry.ClassEnum
	case s.Format == "email" || s.Format == "uuid" || has("id", "gid", "ids", "key", "slug", "login", "username", "handle", "sid", "uuid", "email", "identifier", "number", "domain", "subdomain", "sha", "ref"):
		return registry.ClassIdentifier
	}
	return registry.ClassText
}

// secretName says a field's name marks a credential.
func secretName(name string) bool {
	l := strings.ToLower(name)
	for _, w := range []string{"password", "secret", "token", "api_key", "apikey", "private_key", "deploy_hook", "signing_key", "auth_code"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// auth reads the security scheme the operations use.
func (im *importer) auth(m *registry.Manifest, chosen []Operation, names map[string]Operation) {
	m.Auth = registry.Auth{Scheme: registry.SchemeBearer}
	var schemes openapi3.SecuritySchemes
	if im.d.doc.Components != nil {
		schemes = im.d.doc.Components.SecuritySchemes
	}
	reqs := func(o Operation) openapi3.SecurityRequirements {
		if o.op.Security != nil {
			return *o.op.Security
		}
		return im.d.doc.Security
	}
	var used []string
	for _, o := range chosen {
		for _, r := range reqs(o) {
			for name := range r {
				if !slices.Contains(used, name) {
					used = append(used, name)
				}
			}
		}
	}
	if len(used) == 0 {
		for name := range schemes {
			used = append(used, name)
		}
	}
	slices.Sort(used)
	var chosenScheme string
	for _, name := range used {
		ref := schemes[name]
		if ref == nil || ref.Value == nil {
			continue
		}
		s := ref.Value
		switch {
		case s.Type == "http" && strings.EqualFold(s.Scheme, "bearer"):
			if chosenScheme == "" {
				chosenScheme = "bearer"
			}
		case s.Type == "http" && strings.EqualFold(s.Scheme, "basic"):
			if chosenScheme == "" {
				chosenScheme = "basic"
				im.note("auth: the description asks for HTTP Basic; the draft says bearer: set the scheme the provider takes")
			}
		case s.Type == "apiKey" && s.In == "header":
			if chosenScheme == "" {
				chosenScheme = "apikey"
				if strings.EqualFold(s.Name, "Authorization") {
					m.Auth.Scheme = registry.SchemeNone
					im.note("auth: the key goes in Authorization as the provider writes it; check whether it needs a prefix")
				} else {
					m.Auth.Scheme, m.Auth.Header = registry.SchemeHeader, s.Name
				}
			}
		case s.Type == "apiKey":
			im.note("auth: security scheme %q sends the key in the %s, which the host never does; left out", name, s.In)
		case s.Type == "oauth2" && s.Flows != nil && s.Flows.AuthorizationCode != nil:
			f := s.Flows.AuthorizationCode
			o := &registry.OAuth{AuthorizeURL: f.AuthorizationURL, TokenURL: f.TokenURL, Scopes: []string{}, ScopesWrite: []string{}}
			for opName, op := range names {
				for _, r := range reqs(op) {
					for _, sc := range r[name] {
						if m.Ops[opName].Access == registry.AccessRead && !slices.Contains(o.Scopes, sc) {
							o.Scopes = append(o.Scopes, sc)
						}
						if !slices.Contains(o.ScopesWrite, sc) {
							o.ScopesWrite = append(o.ScopesWrite, sc)
						}
					}
				}
			}
			slices.Sort(o.Scopes)
			slices.Sort(o.ScopesWrite)
			if u, err := url.Parse(o.AuthorizeURL); err == nil && u.Scheme == "https" && strings.HasPrefix(o.TokenURL, "https://") {
				m.Auth.OAuth = o
				im.note("auth.oauth: scopes per connection (read: %s; write: %s), refresh and pkce: check them against the provider's OAuth docs", strings.Join(o.Scopes, " "), strings.Join(o.ScopesWrite, " "))
			}
		}
	}
	im.note("auth.pat_help: add the provider page where a member makes a token")
}

// errorMessage guesses where an error answer's message is.
func (im *importer) errorMessage(chosen []Operation) string {
	for _, o := range chosen {
		if o.op.Responses == nil {
			continue
		}
		for code, r := range o.op.Responses.Map() {
			if code == "" || code[0] != '4' && code[0] != '5' && code != "default" || r == nil || r.Value == nil {
				continue
			}
			s := jsonSchema(r.Value.Content)
			if s == nil {
				continue
			}
			for _, p := range []string{"message", "error.message", "errors.message", "errorMessages", "error_description", "error", "detail", "title"} {
				if got, open, missing, _ := at(s, splitDot(p)); missing == "" && !open && got != nil && (typeOf(got) == "string" || p == "errorMessages" && typeOf(got) == "array") {
					if p == "message" {
						return ""
					}
					return p
				}
			}
		}
	}
	return ""
}

// viewer picks the op that says who the credential belongs to.
func (im *importer) viewer(want string, m *registry.Manifest, names map[string]Operation) string {
	ok := func(name string) bool {
		op := m.Ops[name]
		if op == nil || op.Access != registry.AccessRead {
			return false
		}
		for _, a := range op.Args {
			if a.Required {
				return false
			}
		}
		return true
	}
	if want != "" {
		for name, o := range names {
			if name == want || o.ID == want || o.Method+" "+o.Path == want {
				if ok(name) {
					return name
				}
				im.note("viewer: %s is not a read op without required args", want)
				return ""
			}
		}
		im.note("viewer: %q is not one of the imported ops", want)
		return ""
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		p := strings.ToLower(names[name].Path)
		for _, end := range []string{"/me", "/user", "/self", "/whoami", "/account", "/users/me", "/auth.test"} {
			if strings.HasSuffix(p, end) && ok(name) {
				return name
			}
		}
	}
	im.note("viewer: name the read op that says who the credential belongs to (the catalog runs it to verify a token)")
	return ""
}

// encode writes the manifest with its draft mark first.
func encode(m *registry.Manifest, d *registry.Draft) ([]byte, error) {
	for _, op := range m.Ops {
		if op.Query != nil && len(op.Query) == 0 {
			op.Query = nil
		}
	}
	body, mark := compactJSON(m), compactJSON(d)
	all := append(append([]byte(`{"draft":`), mark...), ',')
	all = append(all, body[1:]...)
	var tree any
	dec := json.NewDecoder(bytes.NewReader(all))
	dec.UseNumber()
	if err := decodeOrdered(dec, &tree); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	pretty(&out, tree, 0)
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// decodeOrdered decodes one JSON value, objects as ordered.
func decodeOrdered(dec *json.Decoder, v *any) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	switch t {
	case json.Delim('{'):
		obj := ordered{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			var e any
			if err := decodeOrdered(dec, &e); err != nil {
				return err
			}
			obj = append(obj, member{k.(string), e})
		}
		_, err := dec.Token()
		*v = obj
		return err
	case json.Delim('['):
		arr := []any{}
		for dec.More() {
			var e any
			if err := decodeOrdered(dec, &e); err != nil {
				return err
			}
			arr = append(arr, e)
		}
		_, err := dec.Token()
		*v = arr
		return err
	}
	*v = t
	return nil
}

// pretty writes v in the manifests' house style: objects and arrays on
// their own lines down to the op level, short ones (an arg, a pick's
// fields, an enum) on one line.
func pretty(b *bytes.Buffer, v any, depth int) {
	one := inline(v)
	if len(one) <= 100 && depth >= 2 || len(one) <= 60 {
		b.WriteString(one)
		return
	}
	ind := strings.Repeat("  ", depth+1)
	switch x := v.(type) {
	case ordered:
		b.WriteString("{\n")
		for i, m := range x {
			b.WriteString(ind)
			b.Write(compactJSON(m.k))
			b.WriteString(": ")
			pretty(b, m.v, depth+1)
			if i < len(x)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(strings.Repeat("  ", depth) + "}")
	case []any:
		b.WriteString("[\n")
		for i, e := range x {
			b.WriteString(ind)
			pretty(b, e, depth+1)
			if i < len(x)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(strings.Repeat("  ", depth) + "]")
	default:
		b.WriteString(one)
	}
}

// inline writes v on one line, as the manifests do: { "a": 1, "b": [2, 3] }.
func inline(v any) string {
	switch x := v.(type) {
	case ordered:
		if len(x) == 0 {
			return "{}"
		}
		parts := make([]string, len(x))
		for i, m := range x {
			parts[i] = string(compactJSON(m.k)) + ": " + inline(m.v)
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = inline(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return string(compactJSON(v))
}
