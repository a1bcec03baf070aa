package fakeapi

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/elevenmessenger/pinned/registry"
)

// The engine serves a manifest's ops from its fixtures (docs/MANIFEST.md,
// "Adding a service in an afternoon"). A request is matched to an op by
// its method and path (and, for GraphQL, its query text); the op's args
// are read back out of the request through the manifest's templates; the
// op's fixture then runs its steps (look a row up, check a condition and
// answer, insert a row), lists and pages rows as the manifest's paginate
// block says, and fills its body template.

// opFixture is the fixture of one op (testdata/<service>/*.json "ops").
type opFixture struct {
	// Example are args that give every declared arg a value the fixtures
	// answer (a cursor arg one that names a row): what tests and `pinned
	// demo` run the op with.
	Example json.RawMessage
	// MoreExamples are further args whose answers show the picked fields
	// the first's cannot (an all-day event's start.date beside a timed
	// one's start.dateTime).
	MoreExamples []json.RawMessage `json:"more_examples"`
	// Steps run in order; the first that answers ends the request.
	Steps []*step
	// List, when set, selects, sorts and pages rows: the body's ${items}
	// and ${page.*}.
	List *listSpec
	response
}

// response is an answer: Status (default 200), Headers, and either Body
// (a template) or Error (the message of the provider's error envelope,
// with Details filling its other placeholders).
type response struct {
	Status  int
	Headers map[string]string
	Body    *jsonTemplate
	Error   string
	Details map[string]string
}

// step is one step of an op: when Find is set, look a row up (answering
// Else, by default the provider's 404, when there is none); when Insert
// is set, add a row; otherwise answer the response when every condition
// of When holds.
type step struct {
	When   []*cond
	Find   *findSpec
	Else   *response
	Insert *insertSpec
	response
}

// cond compares a subject with an operand. The subject is Value (a
// template) or, in a list's or find's Where, the row's Field (a dot path).
// An operand that names an absent arg skips the condition, so a filter on
// an optional arg applies only when it is given.
type cond struct {
	Value string
	Field string
	// Operators: one of these.
	Eq       any
	Ne       any
	In       []any
	NotIn    []any `json:"not_in"`
	Contains string
	Match    string
	NotMatch string `json:"not_match"`
	Blank    *bool
	Present  *bool
	Any      []*cond // holds when one of these does
	// Fold compares case-insensitively; Map replaces the operand first
	// (a mapped null skips the condition).
	Fold bool
	Map  map[string]any
	re   *regexp.Regexp
}

// findSpec looks a row up: the first of In whose fields satisfy Where,
// named As (default "row") for later templates.
type findSpec struct {
	In       string
	Where    []*cond
	As       string
	Optional bool
}

// insertSpec adds the row Row (a template) to Into, named As (default
// "new"): last, or First. Seq sets ${seq} to one more than the largest
// Field among the rows satisfying Where (1 for none).
type insertSpec struct {
	Into  string
	Row   jsonTemplate
	As    string
	First bool
	Seq   *struct {
		Field string
		Where []*cond
	}
}

// listSpec selects rows of In that satisfy Where, sorts them, and pages
// them as the op's paginate block says (by Size's arg, and Cursor's).
type listSpec struct {
	In    string
	Where []*cond
	Sort  *struct {
		By      string         // a template naming the sort key ("${args.sort}"); empty: Field
		Fields  map[string]any // sort key -> row field
		Field   string         // the default row field
		Desc    bool           // descending
		DescFor []string       `json:"desc_for"` // sort keys sorted descending
		Fold    bool
	}
	Size *struct {
		Arg     string // the arg of the page size
		Default int
		Max     int
		Invalid *response // a size outside 1..Max (default: clamp)
	}
	Cursor *struct {
		Field   string    // the row field a cursor is (default: an opaque offset)
		Of      string    // "last" (default: the page's last row; the next page starts after it) or "next" (the next page's first row)
		Unknown *response // a cursor no row has (default: an empty page)
	}
	Item *jsonTemplate // each row as answered (default: the row)
}

// service is one manifest served from its fixtures.
type service struct {
	id   string
	m    *registry.Manifest
	p    *provider
	host string
	f    *fixtures
	fill *filler

	mu   sync.Mutex
	data map[string][]any // collections, by name
	imu  sync.Mutex       // held by an insert throughout
}

// newService prepares a manifest's fixtures.
func newService(m *registry.Manifest, f *fixtures) (*service, error) {
	s := &service{id: m.ID, m: m, p: f.Provider, host: cmp.Or(f.Provider.Host, m.Host), f: f, data: map[string][]any{}}
	s.p.Service, s.p.Host = m.ID, s.host
	for name, c := range f.Collections {
		rows, ok := c.tree.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: collection %q is not an array", m.ID, name)
		}
		s.data[name] = rows
	}
	s.fill = &filler{tmpl: f.Templates, data: s.rows}
	for name, of := range f.Ops {
		if _, ok := m.Ops[name]; !ok {
			return nil, fmt.Errorf("%s: fixture of op %q, which the manifest lacks", m.ID, name)
		}
		for _, st := range of.Steps {
			if err := compile(st.When); err != nil {
				return nil, fmt.Errorf("%s.%s: %v", m.ID, name, err)
			}
			if st.Find != nil {
				if err := compile(st.Find.Where); err != nil {
					return nil, fmt.Errorf("%s.%s: %v", m.ID, name, err)
				}
			}
		}
		if of.List != nil {
			if err := compile(of.List.Where); err != nil {
				return nil, fmt.Errorf("%s.%s: %v", m.ID, name, err)
			}
		}
	}
	return s, nil
}

func compile(cs []*cond) error {
	for _, c := range cs {
		if err := compile(c.Any); err != nil {
			return err
		}
		re := cmp.Or(c.Match, c.NotMatch)
		if re == "" {
			continue
		}
		var err error
		if c.re, err = regexp.Compile(re); err != nil {
			return err
		}
	}
	return nil
}

// fork is a copy of s with state of its own: the rows are shared (nothing
// changes a row in place), the collections are not.
func (s *service) fork() *service {
	c := &service{id: s.id, m: s.m, p: s.p, host: s.host, f: s.f, data: maps.Clone(s.data)}
	c.fill = &filler{tmpl: s.f.Templates, data: c.rows}
	return c
}

// rows returns a collection's rows (a copy of the slice).
func (s *service) rows(name string) []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.data[name])
}

// route finds the op a request is for: method, path and, for GraphQL,
// the query text. It returns the path's args too.
func (s *service) route(r *http.Request, body []byte) (string, map[string]any) {
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	var gqlQuery string
	if s.m.GraphQL {
		var in struct{ Query string }
		_ = json.Unmarshal(body, &in)
		gqlQuery = in.Query
	}
	for _, name := range s.m.OpNames() {
		op := s.m.Ops[name]
		if op.Method != r.Method {
			continue
		}
		args, ok := matchPath(op, segs)
		if !ok {
			continue
		}
		if s.m.GraphQL {
			var tmpl struct{ Query string }
			_ = json.Unmarshal(op.BodyJSON, &tmpl)
			if tmpl.Query != gqlQuery {
				continue
			}
		}
		return name, args
	}
	return "", nil
}

// graphQLPath says a request has the method and path of one of a GraphQL
// service's ops, whatever its query text.
func (s *service) graphQLPath(r *http.Request) bool {
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	for _, op := range s.m.Ops {
		if _, ok := matchPath(op, segs); ok && op.Method == r.Method {
			return true
		}
	}
	return false
}

// matchPath matches escaped path segments to an op's path template.
func matchPath(op *registry.Op, segs []string) (map[string]any, bool) {
	tsegs := strings.Split(strings.TrimPrefix(op.Path, "/"), "/")
	if len(tsegs) != len(segs) {
		return nil, false
	}
	args := map[string]any{}
	for i, t := range tsegs {
		v, err := url.PathUnescape(segs[i])
		if err != nil || strings.Contains(strings.ToLower(segs[i]), "%2f") {
			return nil, false
		}
		if len(t) > 2 && t[0] == '{' && t[len(t)-1] == '}' {
			name := t[1 : len(t)-1]
			a := op.Args[name]
			if a == nil || v == "" || v == "." || v == ".." {
				return nil, false
			}
			args[name] = typed(a, v)
			continue
		}
		if v != t {
			return nil, false
		}
	}
	return args, true
}

// typed reads an arg's text as its declared type (text it is not stays
// text, as a provider would get it).
func typed(a *registry.Arg, s string) any {
	switch a.Type {
	case registry.TypeInteger, registry.TypeNumber:
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return json.Number(s)
		}
	case registry.TypeBoolean:
		if b, err := strconv.ParseBool(s); err == nil {
			return b
		}
	}
	return s
}

// requestArgs reads the op's args out of the request: the query and form
// values, and the JSON body members, whose templates are exactly "{arg}".
func requestArgs(op *registry.Op, r *http.Request, body []byte, args map[string]any) error {
	whole := func(t string) string {
		if len(t) > 2 && t[0] == '{' && t[len(t)-1] == '}' && !strings.ContainsAny(t[1:len(t)-1], "{} ") {
			return t[1 : len(t)-1]
		}
		return ""
	}
	q := r.URL.Query()
	for k, t := range op.Query {
		a := whole(t)
		arg := op.Args[a]
		switch {
		case a == "" || arg == nil || !q.Has(k):
		case arg.Type == registry.TypeArray && arg.Items != nil:
			vs := q[k] // the key repeated per value (OpenAPI explode)
			if d := arg.Delimiter(); d != 0 {
				vs = nil
				if v := q.Get(k); v != "" {
					vs = strings.Split(v, string(d))
				}
			}
			items := []any{}
			for _, v := range vs {
				items = append(items, typed(arg.Items, v))
			}
			args[a] = items
		default:
			args[a] = typed(arg, q.Get(k))
		}
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case op.BodyForm != nil:
		if len(body) > 0 && mt != "application/x-www-form-urlencoded" {
			return fmt.Errorf("the body must be application/x-www-form-urlencoded, not %q", mt)
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return fmt.Errorf("the body is not form-encoded: %v", err)
		}
		for k, t := range op.BodyForm {
			if a := whole(t); a != "" && op.Args[a] != nil && form.Has(k) {
				args[a] = typed(op.Args[a], form.Get(k))
			}
		}
	case op.BodyJSON != nil:
		got, err := decodeTree(body)
		if err != nil {
			return fmt.Errorf("the body is not JSON: %v", err)
		}
		tmpl, _ := decodeTree(op.BodyJSON)
		var walk func(t, v any)
		walk = func(t, v any) {
			switch t := t.(type) {
			case ordered:
				for _, m := range t {
					if sub, ok := dig(v, m.k); ok {
						walk(m.v, sub)
					}
				}
			case []any:
				for i, e := range t {
					if sub, ok := dig(v, strconv.Itoa(i)); ok {
						walk(e, sub)
					}
				}
			case string:
				if a := whole(t); a != "" && op.Args[a] != nil && v != nil { // null: not given
					args[a] = v
				}
			}
		}
		walk(tmpl, got)
		args["$body"] = got
	}
	return nil
}

// serveOp answers a request for one of the service's ops.
func (s *service) serveOp(c *call) {
	name, args := s.route(c.r, c.body)
	if name == "" {
		if s.m.GraphQL && s.graphQLPath(c.r) {
			apiError(c.w, s.p, http.StatusBadRequest, "fakeapi: no op of the manifest sends this query text", "code", "GRAPHQL_VALIDATION_FAILED")
			return
		}
		msg := strings.NewReplacer("${method}", c.r.Method, "${path}", c.r.URL.Path).Replace(s.p.NotFound)
		apiError(c.w, s.p, http.StatusNotFound, msg)
		return
	}
	op := s.m.Ops[name]
	if err := requestArgs(op, c.r, c.body, args); err != nil {
		apiError(c.w, s.p, http.StatusBadRequest, err.Error())
		return
	}
	e := env{"args": args, "header": headerValues(c.r.Header)}
	for _, st := range s.p.Rules {
		if s.runStep(c, st, e) {
			return
		}
	}
	of := s.f.Ops[name]
	if of == nil {
		apiError(c.w, s.p, http.StatusNotImplemented, fmt.Sprintf("fakeapi: %s has no fixture for op %s", s.id, name))
		return
	}
	for _, st := range of.Steps {
		if s.runStep(c, st, e) {
			return
		}
	}
	if of.List != nil {
		if s.list(c, op, of.List, e) {
			return
		}
	}
	s.respond(c, &of.response, e, http.StatusOK)
}

// headerValues are the request's headers by canonical name.
func headerValues(h http.Header) ordered {
	out := ordered{}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		out = append(out, kv{k, h.Get(k)})
	}
	return out
}

// runStep runs one step and reports whether it answered.
func (s *service) runStep(c *call, st *step, e env) bool {
	switch {
	case st.Find != nil:
		var row any
		for _, r := range s.rows(st.Find.In) {
			if holds(st.Find.Where, e, r) {
				row = r
				break
			}
		}
		if row == nil && !st.Find.Optional {
			if st.Else != nil {
				s.respond(c, st.Else, e, http.StatusNotFound)
			} else {
				msg := strings.NewReplacer("${method}", c.r.Method, "${path}", c.r.URL.Path).Replace(s.p.NotFound)
				apiError(c.w, s.p, http.StatusNotFound, msg)
			}
			return true
		}
		if row != nil {
			e[cmp.Or(st.Find.As, "row")] = row
		}
		return false
	case st.Insert != nil:
		in := st.Insert
		s.imu.Lock() // one insert at a time: its seq and next_id stay unique
		defer s.imu.Unlock()
		rows := s.rows(in.Into)
		if in.Seq != nil {
			n := 0.0
			for _, r := range rows {
				if holds(in.Seq.Where, e, r) {
					v, _ := dig(r, in.Seq.Field)
					if f, err := strconv.ParseFloat(text(v), 64); err == nil {
						n = math.Max(n, f)
					}
				}
			}
			e["seq"] = json.Number(strconv.FormatFloat(n+1, 'f', -1, 64))
		}
		maxID := 0.0
		for _, r := range rows {
			v, _ := dig(r, "id")
			if f, err := strconv.ParseFloat(text(v), 64); err == nil {
				maxID = math.Max(maxID, f)
			}
		}
		e["next_id"] = json.Number(strconv.FormatFloat(maxID+1, 'f', -1, 64))
		row, _ := s.fill.fill(in.Row.tree, e)
		s.mu.Lock()
		defer s.mu.Unlock()
		// Replace, never change, the slice: readers hold copies of it.
		if in.First {
			s.data[in.Into] = append([]any{row}, s.data[in.Into]...)
		} else {
			s.data[in.Into] = append(slices.Clone(s.data[in.Into]), row)
		}
		e[cmp.Or(in.As, "new")] = row
		return false
	}
	if len(st.When) == 0 || !holds(st.When, e, nil) {
		return false
	}
	s.respond(c, &st.response, e, http.StatusOK)
	return true
}

// holds reports whether every condition holds, for a row (nil outside a
// Where).
func holds(cs []*cond, e env, row any) bool {
	for _, c := range cs {
		if !c.holds(e, row) {
			return false
		}
	}
	return true
}

func (c *cond) holds(e env, row any) bool {
	var subj any
	var present bool
	if c.Field != "" {
		subj, present = dig(row, c.Field)
	} else {
		name, whole := placeholderName(c.Value)
		if whole {
			subj, present = e.lookup(name)
		} else {
			subj, present = expand(c.Value, e), true
		}
	}
	operand := func(t any) (any, bool) {
		if s, ok := t.(string); ok {
			if name, whole := placeholderName(s); whole {
				v, ok := e.lookup(name)
				if !ok {
					return nil, false // names an absent value: the condition does not apply
				}
				t = v
			} else {
				for _, m := range tmplVar.FindAllStringSubmatch(s, -1) {
					if _, ok := e.lookup(m[1]); !ok {
						return nil, false
					}
				}
				t = expand(s, e)
			}
		}
		if c.Map != nil {
			m, ok := c.Map[text(t)]
			if ok {
				if m == nil {
					return nil, false
				}
				t = m
			}
		}
		return t, true
	}
	eq := func(a, b any) bool {
		if c.Fold {
			return strings.EqualFold(text(a), text(b))
		}
		return text(a) == text(b) && (a == nil) == (b == nil)
	}
	switch {
	case c.Eq != nil:
		o, ok := operand(c.Eq)
		return !ok || present && eq(subj, o)
	case c.Ne != nil:
		o, ok := operand(c.Ne)
		return !ok || !present || !eq(subj, o)
	case c.In != nil || c.NotIn != nil:
		list, want := c.In, true
		if c.NotIn != nil {
			list, want = c.NotIn, false
		}
		found := false
		for _, x := range list {
			if o, ok := operand(x); ok && present && eq(subj, o) {
				found = true
			}
		}
		return found == want
	case c.Contains != "":
		o, ok := operand(c.Contains)
		if !ok {
			return true
		}
		if list, isList := subj.([]any); isList {
			// A list holds a value, or every value of a list.
			want, many := o.([]any)
			if !many {
				want = []any{o}
			}
			for _, w := range want {
				if !slices.ContainsFunc(list, func(x any) bool { return eq(x, w) }) {
					return false
				}
			}
			return true
		}
		if c.Fold {
			return strings.Contains(strings.ToLower(text(subj)), strings.ToLower(text(o)))
		}
		return strings.Contains(text(subj), text(o))
	case c.Match != "":
		return present && c.re.MatchString(text(subj))
	case c.NotMatch != "":
		return !present || !c.re.MatchString(text(subj))
	case c.Any != nil:
		for _, a := range c.Any {
			if a.holds(e, row) {
				return true
			}
		}
		return false
	case c.Blank != nil:
		return *c.Blank == (!present || strings.TrimSpace(text(subj)) == "")
	case c.Present != nil:
		return *c.Present == (present && subj != nil)
	}
	return true
}

// respond answers r in e; def is the status when r sets none.
func (s *service) respond(c *call, r *response, e env, def int) {
	status := cmp.Or(r.Status, def)
	for k, v := range r.Headers {
		c.w.Header().Set(k, expand(v, e))
	}
	if r.Error != "" {
		var details []string
		for _, k := range slices.Sorted(maps.Keys(r.Details)) {
			details = append(details, k, expand(r.Details[k], e))
		}
		apiError(c.w, s.p, status, expand(r.Error, e), details...)
		return
	}
	if r.Body == nil {
		if row, ok := e["row"]; ok {
			writeJSON(c.w, status, row)
			return
		}
		c.w.WriteHeader(status)
		return
	}
	v, _ := s.fill.fill(r.Body.tree, e)
	writeJSON(c.w, status, v)
}

// list selects, sorts and pages rows; it reports whether it answered
// (an invalid size or an unknown cursor).
func (s *service) list(c *call, op *registry.Op, ls *listSpec, e env) bool {
	var rows []any
	for _, r := range s.rows(ls.In) {
		if holds(ls.Where, e, r) {
			rows = append(rows, r)
		}
	}
	if st := ls.Sort; st != nil {
		key := expand(st.By, e)
		field := st.Field
		if f, ok := st.Fields[key]; ok {
			field = text(f)
		}
		desc := st.Desc || slices.Contains(st.DescFor, key)
		slices.SortStableFunc(rows, func(a, b any) int {
			x, _ := dig(a, field)
			y, _ := dig(b, field)
			r := compareValues(x, y, st.Fold)
			if desc {
				return -r
			}
			return r
		})
	}
	args, _ := e["args"].(map[string]any)
	size := len(rows)
	if sz := ls.Size; sz != nil {
		size = cmp.Or(sz.Default, 10)
		if v, ok := args[sz.Arg]; ok {
			n, err := strconv.Atoi(text(v))
			switch {
			case (err != nil || n < 1 || sz.Max > 0 && n > sz.Max) && sz.Invalid != nil:
				s.respond(c, sz.Invalid, e, http.StatusBadRequest)
				return true
			case err != nil || n < 1:
			case sz.Max > 0 && n > sz.Max:
				size = sz.Max
			default:
				size = n
			}
		}
	}
	size = max(size, 1)
	pg := op.Paginate
	start, number := 0, 1
	cursorOf := func(i int) any { // the cursor of row i
		if ls.Cursor == nil || ls.Cursor.Field == "" {
			return base64.RawURLEncoding.EncodeToString([]byte("offset:" + strconv.Itoa(i)))
		}
		v, _ := dig(rows[i], ls.Cursor.Field)
		return text(v)
	}
	if pg != nil {
		switch v, given := args[pg.Arg]; {
		case !given:
		case pg.Style == registry.PaginateLink || pg.Style == registry.PaginatePageCount:
			if n, err := strconv.Atoi(text(v)); err == nil && n > 1 {
				number, start = n, (n-1)*size
			}
		default:
			found := false
			for i := range rows {
				if text(cursorOf(i)) == text(v) {
					start, found = i+1, true
					if ls.Cursor != nil && ls.Cursor.Of == "next" {
						start = i
					}
					break
				}
			}
			if !found {
				if ls.Cursor != nil && ls.Cursor.Unknown != nil {
					s.respond(c, ls.Cursor.Unknown, e, http.StatusBadRequest)
					return true
				}
				start = len(rows)
			}
		}
	}
	start = min(start, len(rows))
	end := min(start+size, len(rows))
	items := []any{}
	for _, r := range rows[start:end] {
		if ls.Item == nil {
			items = append(items, r)
			continue
		}
		v, _ := s.fill.fill(ls.Item.tree, withRow(e, r))
		items = append(items, v)
	}
	total := (len(rows) + size - 1) / size
	more := end < len(rows)
	page := ordered{{"number", json.Number(strconv.Itoa(number))}, {"size", json.Number(strconv.Itoa(size))},
		{"total", json.Number(strconv.Itoa(len(rows)))}, {"total_pages", json.Number(strconv.Itoa(total))}, {"has_more", more}}
	if end > start {
		page = append(page, kv{"end", cursorOf(end - 1)})
	}
	if more {
		next := cursorOf(end - 1)
		if ls.Cursor != nil && ls.Cursor.Of == "next" {
			next = cursorOf(end)
		}
		page = append(page, kv{"next", next})
	}
	e["items"], e["page"] = items, page
	if pg != nil && pg.Style == registry.PaginateLink {
		linkHeader(c, op, pg.Arg, ls, number, total, size)
	}
	return false
}

// compareValues orders two values: numbers by value, the rest as text.
func compareValues(x, y any, fold bool) int {
	a, b := text(x), text(y)
	if fa, err1 := strconv.ParseFloat(a, 64); err1 == nil {
		if fb, err2 := strconv.ParseFloat(b, 64); err2 == nil {
			return cmp.Compare(fa, fb)
		}
	}
	if fold {
		a, b = strings.ToLower(a), strings.ToLower(b)
	}
	return strings.Compare(a, b)
}

// linkHeader sets an RFC 8288 Link header as GitHub writes it: prev,
// next, last and first, each the request's URL with the page (and size)
// keys set.
func linkHeader(c *call, op *registry.Op, pageArg string, ls *listSpec, number, total, size int) {
	pageKey, sizeKey := "", ""
	for k, t := range op.Query {
		switch t {
		case "{" + pageArg + "}":
			pageKey = k
		case "{" + sizeArgOf(ls) + "}":
			sizeKey = k
		}
	}
	if pageKey == "" {
		return
	}
	q := c.r.URL.Query()
	link := func(p int, rel string) string {
		qq := maps.Clone(q)
		if sizeKey != "" {
			qq.Set(sizeKey, strconv.Itoa(size))
		}
		qq.Set(pageKey, strconv.Itoa(p))
		return fmt.Sprintf("<https://%s%s?%s>; rel=%q", requestHost(c.r), c.r.URL.EscapedPath(), qq.Encode(), rel)
	}
	var parts []string
	if number > 1 {
		parts = append(parts, link(number-1, "prev"))
	}
	if number < total {
		parts = append(parts, link(number+1, "next"), link(total, "last"))
	}
	if number > 1 {
		parts = append(parts, link(1, "first"))
	}
	if len(parts) > 0 {
		c.w.Header().Set("Link", strings.Join(parts, ", "))
	}
}

func sizeArgOf(ls *listSpec) string {
	if ls.Size == nil {
		return ""
	}
	return ls.Size.Arg
}
