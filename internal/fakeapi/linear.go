package fakeapi

import (
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Linear fake: the GraphQL API at api.linear.app/graphql.
//
// Queries are parsed and executed against a small subset of Linear's
// schema (Query.viewer, organization, teams, team, issues, issue, users;
// Mutation.issueCreate; types User, Organization, Team, WorkflowState,
// Issue, IssueLabel and their connections), so an answer holds exactly the
// fields asked for, in Linear's shapes. A field outside the subset is a
// validation error, as it would be for a field Linear does not have.

// LinearOrgKey is the URL key of the fake Linear workspace.
const LinearOrgKey = "pinned-fake"

type linUser struct {
	id, name, displayName, email string
	admin                        bool
	created                      time.Time
}

type linState struct {
	id, name, typ, color string
	position             float64
}

type linTeam struct {
	id, key, name, description, color string
	private                           bool
	created                           time.Time
	states                            []*linState
	nextNumber                        int
}

type linLabel struct{ id, name, color, description string }

type linIssue struct {
	id          string
	team        *linTeam
	number      int
	title       string
	description *string
	priority    int
	estimate    *int
	dueDate     *string
	state       *linState
	assignee    *linUser
	creator     *linUser
	labels      []*linLabel
	created     time.Time
	updated     time.Time
	completed   *time.Time
}

func (i *linIssue) identifier() string { return i.team.key + "-" + strconv.Itoa(i.number) }

type linearAPI struct {
	mu       sync.Mutex
	orgID    string
	users    []*linUser
	teams    []*linTeam
	labels   []*linLabel
	issues   []*linIssue
	syncID   int
	created  time.Time
	idSource func() string
}

var linPriorityLabels = []string{"No priority", "Urgent", "High", "Medium", "Low"}

func newLinear() *linearAPI {
	r := newRand(5)
	l := &linearAPI{created: epoch.AddDate(1, 2, 0), syncID: 184467}
	idr := newRand(55)
	l.idSource = func() string { return uuid(idr) }
	l.orgID = uuid(r)
	names := [][2]string{{"Pinned", "Tester"}, {"Ada", "Novak"}, {"Bruno", "Okafor"}, {"Chiara", "Lindqvist"},
		{"Dmitri", "Tanaka"}, {"Elena", "Rossi"}, {"Farid", "Weber"}, {"Greta", "Zhang"}}
	for i, n := range names {
		l.users = append(l.users, &linUser{
			id: uuid(r), name: n[0] + " " + n[1], displayName: strings.ToLower(n[0]),
			email: strings.ToLower(n[0]+"."+n[1]) + "@example.org", admin: i == 0,
			created: randTime(r, l.created),
		})
	}
	l.users[0].email = "pinned-tester@example.org"
	teamDefs := []struct{ key, name, desc, color string }{
		{"ENG", "Engineering", "Product engineering and infrastructure", "#5e6ad2"},
		{"DES", "Design", "Product and brand design", "#f2994a"},
		{"OPS", "Operations", "Support, billing and internal tooling", "#26b5ce"},
		{"MKT", "Marketing", "", "#bb87fc"},
	}
	for _, d := range teamDefs {
		t := &linTeam{id: uuid(r), key: d.key, name: d.name, description: d.desc, color: d.color, created: randTime(r, l.created), nextNumber: 1}
		for i, s := range []struct{ name, typ, color string }{
			{"Backlog", "backlog", "#bec2c8"}, {"Todo", "unstarted", "#e2e2e2"}, {"In Progress", "started", "#f2c94c"},
			{"In Review", "started", "#0f783c"}, {"Done", "completed", "#5e6ad2"}, {"Canceled", "canceled", "#95a2b3"},
		} {
			t.states = append(t.states, &linState{id: uuid(r), name: s.name, typ: s.typ, color: s.color, position: float64(i)})
		}
		l.teams = append(l.teams, t)
	}
	for _, d := range [][3]string{{"Bug", "#eb5757", "Something is broken"}, {"Feature", "#bb87fc", "New functionality"},
		{"Improvement", "#4ea7fc", "Make something better"}, {"Chore", "#95a2b3", ""}} {
		l.labels = append(l.labels, &linLabel{id: uuid(r), name: d[0], color: d[1], description: d[2]})
	}
	for range 140 {
		t := l.teams[min(len(l.teams)-1, int(math.Abs(r.NormFloat64())*1.3))]
		created := randTime(r, t.created)
		is := &linIssue{
			id: uuid(r), team: t, number: t.nextNumber,
			title:    pick(r, verbs) + " " + pick(r, objects),
			priority: r.IntN(5),
			state:    pick(r, t.states),
			creator:  pick(r, l.users),
			created:  created,
			updated:  randTime(r, created),
		}
		t.nextNumber++
		if r.IntN(3) != 0 {
			d := fmt.Sprintf("## Context\n\nReported in the %s channel.\n\n## Acceptance\n\n- [ ] %s %s\n- [ ] Add a test", t.name, pick(r, verbs), pick(r, objects))
			is.description = &d
		}
		if r.IntN(4) != 0 {
			is.assignee = pick(r, l.users)
		}
		if r.IntN(3) == 0 {
			e := 1 + r.IntN(8)
			is.estimate = &e
		}
		if r.IntN(5) == 0 {
			d := randTime(r, dataNow.AddDate(0, -1, 0)).AddDate(0, 2, 0).Format("2006-01-02")
			is.dueDate = &d
		}
		for _, lb := range l.labels {
			if r.IntN(4) == 0 {
				is.labels = append(is.labels, lb)
			}
		}
		if is.state.typ == "completed" || is.state.typ == "canceled" {
			c := is.updated
			is.completed = &c
		}
		l.issues = append(l.issues, is)
	}
	return l
}

// gqlObj is an object value during execution: a type name and its
// fields. A field value is a scalar, *gqlObj, []*gqlObj, nil, or a
// resolver taking the field's arguments.
type gqlObj struct {
	typ    string
	fields map[string]any
}

type gqlResolver func(args map[string]any) (any, error)

// gqlErr is an error raised while resolving a field.
type gqlErr struct {
	msg, code, typ string
	userMsg        string
}

func (e *gqlErr) Error() string { return e.msg }

// gqlError builds one element of Linear's "errors" array.
func gqlError(msg, code string) ordered {
	typ := map[string]string{
		"AUTHENTICATION_ERROR":      "authentication error",
		"GRAPHQL_VALIDATION_FAILED": "graphql error",
		"GRAPHQL_PARSE_FAILED":      "graphql error",
		"BAD_USER_INPUT":            "graphql error",
		"INPUT_ERROR":               "invalid input",
		"INVALID_INPUT":             "invalid input",
		"FORBIDDEN":                 "forbidden",
		"RATELIMITED":               "ratelimited",
	}[code]
	if typ == "" {
		typ = "graphql error"
	}
	return ordered{{"message", msg}, {"extensions", ordered{{"type", typ}, {"code", code}, {"userPresentableMessage", msg}}}}
}

// linearErrors writes {"errors": [...]} with status.
func linearErrors(w http.ResponseWriter, status int, errs ...ordered) {
	writeJSON(w, status, ordered{{"errors", errs}})
}

func (l *linearAPI) serve(c *call) {
	h := c.w.Header()
	h.Set("X-RateLimit-Requests-Limit", "1500")
	h.Set("X-RateLimit-Requests-Remaining", "1499")
	h.Set("X-RateLimit-Requests-Reset", strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10))
	if !l.authenticate(c) {
		return
	}
	if c.r.URL.EscapedPath() != "/graphql" {
		linearErrors(c.w, http.StatusNotFound, gqlError("Not found: "+c.r.URL.Path, "NOT_FOUND"))
		return
	}
	if c.r.Method != http.MethodPost {
		c.w.Header().Set("Allow", "POST")
		linearErrors(c.w, http.StatusMethodNotAllowed, gqlError("GraphQL requests must be POST requests with a JSON body.", "BAD_REQUEST"))
		return
	}
	if mt, _, _ := mime.ParseMediaType(c.r.Header.Get("Content-Type")); mt != "application/json" {
		linearErrors(c.w, http.StatusBadRequest, gqlError("This operation has been blocked as a potential Cross-Site Request Forgery (CSRF). Send Content-Type: application/json.", "BAD_REQUEST"))
		return
	}
	var in struct {
		Query         *string         `json:"query"`
		Variables     json.RawMessage `json:"variables"`
		OperationName *string         `json:"operationName"`
	}
	if err := json.Unmarshal(c.body, &in); err != nil {
		linearErrors(c.w, http.StatusBadRequest, gqlError("POST body sent invalid JSON: "+err.Error(), "BAD_REQUEST"))
		return
	}
	if in.Query == nil || strings.TrimSpace(*in.Query) == "" {
		linearErrors(c.w, http.StatusBadRequest, gqlError("GraphQL operations must contain a non-empty `query`.", "BAD_REQUEST"))
		return
	}
	var vars map[string]any
	if len(in.Variables) > 0 && string(in.Variables) != "null" {
		dec := json.NewDecoder(strings.NewReader(string(in.Variables)))
		dec.UseNumber()
		if err := dec.Decode(&vars); err != nil {
			linearErrors(c.w, http.StatusBadRequest, gqlError("`variables` in a POST body should be provided as an object.", "BAD_REQUEST"))
			return
		}
	}
	doc, err := parseGraphQL(*in.Query)
	if err != nil {
		linearErrors(c.w, http.StatusBadRequest, gqlError(err.Error(), "GRAPHQL_PARSE_FAILED"))
		return
	}
	var op *gqlOperation
	switch {
	case in.OperationName != nil && *in.OperationName != "":
		for _, o := range doc.ops {
			if o.name == *in.OperationName {
				op = o
			}
		}
		if op == nil {
			linearErrors(c.w, http.StatusBadRequest, gqlError(fmt.Sprintf("Unknown operation named %q.", *in.OperationName), "OPERATION_RESOLUTION_FAILURE"))
			return
		}
	case len(doc.ops) == 1:
		op = doc.ops[0]
	default:
		linearErrors(c.w, http.StatusBadRequest, gqlError("Must provide operation name if query contains multiple operations.", "OPERATION_RESOLUTION_FAILURE"))
		return
	}
	status, body := l.execute(op, vars)
	writeJSON(c.w, status, body)
}

// authenticate checks Linear's two schemes: a personal API key is the bare
// Authorization value; an OAuth access token is sent as Bearer.
func (l *linearAPI) authenticate(c *call) bool {
	v, ok := c.authHeader()
	fail := func(status int, msg string) bool {
		linearErrors(c.w, status, gqlError(msg, "AUTHENTICATION_ERROR"))
		return false
	}
	if !ok || v == "" {
		return fail(http.StatusUnauthorized, "Authentication required, not authenticated")
	}
	if tok, bearer := strings.CutPrefix(v, "Bearer "); bearer {
		switch k, found := c.srv.lookupToken(Linear, tok); {
		case found && k == kindOAuth:
			return true
		case found && k == kindPAT:
			return fail(http.StatusBadRequest, "It looks like you're trying to use an API key as a Bearer token. Remove the Bearer prefix from the Authorization header.")
		}
		return fail(http.StatusUnauthorized, "Authentication failed: invalid or expired OAuth access token")
	}
	if k, found := c.srv.lookupToken(Linear, v); found && k == kindPAT {
		return true
	}
	return fail(http.StatusUnauthorized, "Authentication failed: invalid API key")
}

// execution state of one operation.
type gqlExec struct {
	l          *linearAPI
	op         *gqlOperation
	vars       map[string]any // coerced, only provided/defaulted ones
	validation []ordered
	exec       []ordered
}

func (l *linearAPI) execute(op *gqlOperation, raw map[string]any) (int, any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	x := &gqlExec{l: l, op: op, vars: map[string]any{}}
	opName := op.name
	// Every variable used is declared, every declared one used.
	declared := map[string]gqlVarDef{}
	for _, d := range op.vars {
		if _, dup := declared[d.name]; dup {
			x.validation = append(x.validation, gqlError(fmt.Sprintf("There can be only one variable named \"$%s\".", d.name), "GRAPHQL_VALIDATION_FAILED"))
		}
		declared[d.name] = d
	}
	used := map[string]bool{}
	walkVars(op.sel, func(n string) { used[n] = true })
	for n := range used {
		if _, ok := declared[n]; !ok {
			x.validation = append(x.validation, gqlError(fmt.Sprintf("Variable \"$%s\" is not defined by operation \"%s\".", n, opName), "GRAPHQL_VALIDATION_FAILED"))
		}
	}
	for _, d := range op.vars {
		if !used[d.name] {
			x.validation = append(x.validation, gqlError(fmt.Sprintf("Variable \"$%s\" is never used in operation \"%s\".", d.name, opName), "GRAPHQL_VALIDATION_FAILED"))
		}
	}
	if len(x.validation) > 0 {
		return http.StatusBadRequest, ordered{{"errors", x.validation}}
	}
	// Coerce the variables.
	var bad []ordered
	for _, d := range op.vars {
		v, provided := raw[d.name]
		if !provided {
			if d.defVal != nil {
				dv, _, err := x.literal(d.defVal)
				if err == nil {
					x.vars[d.name] = dv
				}
				continue
			}
			if d.typ.nonNull {
				bad = append(bad, gqlError(fmt.Sprintf("Variable \"$%s\" of required type \"%s\" was not provided.", d.name, d.typ), "BAD_USER_INPUT"))
			}
			continue
		}
		cv, err := coerceVar(d.typ, fromJSON(v))
		if err != nil {
			bad = append(bad, gqlError(fmt.Sprintf("Variable \"$%s\" got invalid value %s; %v", d.name, jsonText(v), err), "BAD_USER_INPUT"))
			continue
		}
		x.vars[d.name] = cv
	}
	if len(bad) > 0 {
		return http.StatusBadRequest, ordered{{"errors", bad}}
	}
	root := l.queryRoot()
	if op.kind == "mutation" {
		root = l.mutationRoot()
	}
	data := x.selectObj(op.sel, root)
	if len(x.validation) > 0 {
		return http.StatusBadRequest, ordered{{"errors", x.validation}}
	}
	if len(x.exec) > 0 {
		return http.StatusOK, ordered{{"data", nil}, {"errors", x.exec}}
	}
	return http.StatusOK, ordered{{"data", data}}
}

func walkVars(sel []*gqlField, f func(string)) {
	var val func(v *gqlValue)
	val = func(v *gqlValue) {
		switch v.kind {
		case "var":
			f(v.str)
		case "list":
			for _, e := range v.list {
				val(e)
			}
		case "object":
			for _, m := range v.fields {
				val(m.val)
			}
		}
	}
	for _, fl := range sel {
		for _, a := range fl.args {
			val(a.val)
		}
		walkVars(fl.sel, f)
	}
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return string(b)
}

// fromJSON turns json.Number into int64 or float64, recursively.
func fromJSON(v any) any {
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = fromJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = fromJSON(e)
		}
		return out
	}
	return v
}

// coerceVar checks a variable value against its declared type (built-in
// scalars strictly; input objects and enums loosely).
func coerceVar(t gqlType, v any) (any, error) {
	if v == nil {
		if t.nonNull {
			return nil, fmt.Errorf("expected non-nullable type \"%s\" not to be null.", t)
		}
		return nil, nil
	}
	if t.elem != nil {
		list, ok := v.([]any)
		if !ok {
			list = []any{v}
		}
		out := make([]any, len(list))
		for i, e := range list {
			ce, err := coerceVar(*t.elem, e)
			if err != nil {
				return nil, err
			}
			out[i] = ce
		}
		return out, nil
	}
	switch t.name {
	case "Int":
		n, ok := v.(int64)
		if !ok || n < math.MinInt32 || n > math.MaxInt32 {
			return nil, fmt.Errorf("Int cannot represent non-integer value: %s", jsonText(v))
		}
		return n, nil
	case "Float":
		switch n := v.(type) {
		case int64:
			return float64(n), nil
		case float64:
			return n, nil
		}
		return nil, fmt.Errorf("Float cannot represent non numeric value: %s", jsonText(v))
	case "String", "DateTime", "TimelessDate", "DateTimeOrDuration", "TimelessDateOrDuration", "JSON":
		if _, ok := v.(string); !ok {
			return nil, fmt.Errorf("%s cannot represent a non string value: %s", t.name, jsonText(v))
		}
		return v, nil
	case "ID":
		switch n := v.(type) {
		case string:
			return n, nil
		case int64:
			return strconv.FormatInt(n, 10), nil
		}
		return nil, fmt.Errorf("ID cannot represent value: %s", jsonText(v))
	case "Boolean":
		if _, ok := v.(bool); !ok {
			return nil, fmt.Errorf("Boolean cannot represent a non boolean value: %s", jsonText(v))
		}
		return v, nil
	}
	return v, nil
}

// literal evaluates an argument value; present is false for a variable
// that was not provided (the argument or member is then left out, as the
// GraphQL spec says).
func (x *gqlExec) literal(v *gqlValue) (any, bool, error) {
	switch v.kind {
	case "var":
		val, ok := x.vars[v.str]
		return val, ok, nil
	case "int":
		n, err := strconv.ParseInt(v.str, 10, 64)
		return n, true, err
	case "float":
		f, err := strconv.ParseFloat(v.str, 64)
		return f, true, err
	case "string", "enum":
		return v.str, true, nil
	case "bool":
		return v.str == "true", true, nil
	case "null":
		return nil, true, nil
	case "list":
		out := make([]any, 0, len(v.list))
		for _, e := range v.list {
			ev, ok, err := x.literal(e)
			if err != nil {
				return nil, false, err
			}
			if !ok {
				ev = nil
			}
			out = append(out, ev)
		}
		return out, true, nil
	case "object":
		out := map[string]any{}
		for _, m := range v.fields {
			ev, ok, err := x.literal(m.val)
			if err != nil {
				return nil, false, err
			}
			if ok {
				out[m.name] = ev
			}
		}
		return out, true, nil
	}
	return nil, false, fmt.Errorf("bad value")
}

func (x *gqlExec) invalid(format string, a ...any) {
	x.validation = append(x.validation, gqlError(fmt.Sprintf(format, a...), "GRAPHQL_VALIDATION_FAILED"))
}

// selectObj executes a selection set on an object.
func (x *gqlExec) selectObj(sel []*gqlField, o *gqlObj) ordered {
	out := ordered{}
	for _, f := range sel {
		if f.name == "__typename" {
			out = append(out, kv{f.key(), o.typ})
			continue
		}
		val, ok := o.fields[f.name]
		if !ok {
			x.invalid("Cannot query field \"%s\" on type \"%s\".", f.name, o.typ)
			continue
		}
		if res, isRes := val.(gqlResolver); isRes {
			args := map[string]any{}
			for _, a := range f.args {
				v, present, err := x.literal(a.val)
				if err != nil {
					x.invalid("Argument \"%s\" has an invalid value.", a.name)
					continue
				}
				if present {
					args[a.name] = v
				}
			}
			v, err := res(args)
			if err != nil {
				if ge, ok := err.(*gqlErr); ok && ge.code == "GRAPHQL_VALIDATION_FAILED" {
					x.invalid("%s", ge.msg)
				} else {
					msg, code, user := err.Error(), "INPUT_ERROR", ""
					if ge, ok := err.(*gqlErr); ok {
						code, user = ge.code, ge.userMsg
					}
					e := gqlError(msg, code)
					ext, _ := e.get("extensions")
					if user != "" {
						ext = append(ext.(ordered)[:2:2], kv{"userPresentableMessage", user})
					}
					x.exec = append(x.exec, ordered{{"message", msg}, {"path", []string{f.key()}}, {"extensions", ext}})
				}
				out = append(out, kv{f.key(), nil})
				continue
			}
			val = v
		} else if len(f.args) > 0 {
			x.invalid("Unknown argument \"%s\" on field \"%s.%s\".", f.args[0].name, o.typ, f.name)
			continue
		}
		out = append(out, kv{f.key(), x.complete(f, o.typ, val)})
	}
	return out
}

func (x *gqlExec) complete(f *gqlField, parent string, val any) any {
	switch v := val.(type) {
	case nil:
		return nil
	case *gqlObj:
		if v == nil {
			return nil
		}
		if f.sel == nil {
			x.invalid("Field \"%s\" of type \"%s!\" must have a selection of subfields. Did you mean \"%s { ... }\"?", f.name, v.typ, f.name)
			return nil
		}
		return x.selectObj(f.sel, v)
	case []*gqlObj:
		if f.sel == nil {
			x.invalid("Field \"%s\" of type \"[%s!]!\" must have a selection of subfields.", f.name, parent)
			return nil
		}
		out := make([]ordered, 0, len(v))
		for _, e := range v {
			out = append(out, x.selectObj(f.sel, e))
		}
		return out
	default:
		if f.sel != nil {
			x.invalid("Field \"%s\" must not have a selection since its type has no subfields.", f.name)
			return nil
		}
		return v
	}
}

// ---- schema ----

func (l *linearAPI) orgObj() *gqlObj {
	return &gqlObj{typ: "Organization", fields: map[string]any{
		"id": l.orgID, "name": "Pinned Fake Org", "urlKey": LinearOrgKey, "createdAt": isoMilli(l.created),
		"userCount": len(l.users), "logoUrl": nil,
	}}
}

func (l *linearAPI) userObj(u *linUser) *gqlObj {
	if u == nil {
		return nil
	}
	return &gqlObj{typ: "User", fields: map[string]any{
		"id": u.id, "name": u.name, "displayName": u.displayName, "email": u.email, "active": true,
		"admin": u.admin, "guest": false, "isMe": u == l.users[0], "createdAt": isoMilli(u.created),
		"updatedAt": isoMilli(u.created), "avatarUrl": nil, "timezone": "Europe/Berlin",
		"url":          "https://linear.app/" + LinearOrgKey + "/profiles/" + u.displayName,
		"organization": gqlResolver(func(map[string]any) (any, error) { return l.orgObj(), nil }),
	}}
}

func (l *linearAPI) stateObj(s *linState, t *linTeam) *gqlObj {
	return &gqlObj{typ: "WorkflowState", fields: map[string]any{
		"id": s.id, "name": s.name, "type": s.typ, "color": s.color, "position": s.position,
		"team": gqlResolver(func(map[string]any) (any, error) { return l.teamObj(t), nil }),
	}}
}

func (l *linearAPI) labelObj(lb *linLabel) *gqlObj {
	var desc any
	if lb.description != "" {
		desc = lb.description
	}
	return &gqlObj{typ: "IssueLabel", fields: map[string]any{"id": lb.id, "name": lb.name, "color": lb.color, "description": desc}}
}

func (l *linearAPI) teamObj(t *linTeam) *gqlObj {
	var desc any
	if t.description != "" {
		desc = t.description
	}
	return &gqlObj{typ: "Team", fields: map[string]any{
		"id": t.id, "key": t.key, "name": t.name, "description": desc, "color": t.color, "icon": nil,
		"private": t.private, "createdAt": isoMilli(t.created), "updatedAt": isoMilli(t.created),
		"issueCount":   t.nextNumber - 1,
		"organization": gqlResolver(func(map[string]any) (any, error) { return l.orgObj(), nil }),
		"states": gqlResolver(func(args map[string]any) (any, error) {
			var nodes []*gqlObj
			for _, s := range t.states {
				nodes = append(nodes, l.stateObj(s, t))
			}
			return connection("WorkflowStateConnection", nodes, args)
		}),
		"members": gqlResolver(func(args map[string]any) (any, error) {
			var nodes []*gqlObj
			for _, u := range l.users {
				nodes = append(nodes, l.userObj(u))
			}
			return connection("UserConnection", nodes, args)
		}),
		"issues": gqlResolver(func(args map[string]any) (any, error) {
			return l.issueConnection(args, func(i *linIssue) bool { return i.team == t })
		}),
	}}
}

func (l *linearAPI) issueObj(i *linIssue) *gqlObj {
	var completed, canceled any
	if i.completed != nil {
		if i.state.typ == "canceled" {
			canceled = isoMilli(*i.completed)
		} else {
			completed = isoMilli(*i.completed)
		}
	}
	var estimate any
	if i.estimate != nil {
		estimate = *i.estimate
	}
	var desc, due any
	if i.description != nil {
		desc = *i.description
	}
	if i.dueDate != nil {
		due = *i.dueDate
	}
	ident := i.identifier()
	return &gqlObj{typ: "Issue", fields: map[string]any{
		"id": i.id, "identifier": ident, "number": i.number, "title": i.title, "description": desc,
		"url":        "https://linear.app/" + LinearOrgKey + "/issue/" + ident + "/" + slug(i.title),
		"branchName": strings.ToLower(ident) + "-" + slug(i.title),
		"priority":   i.priority, "priorityLabel": linPriorityLabels[i.priority], "estimate": estimate,
		"dueDate": due, "createdAt": isoMilli(i.created), "updatedAt": isoMilli(i.updated),
		"completedAt": completed, "canceledAt": canceled, "archivedAt": nil, "startedAt": nil,
		"sortOrder": float64(i.number) * -1.5, "trashed": nil,
		"state":    l.stateObj(i.state, i.team),
		"team":     gqlResolver(func(map[string]any) (any, error) { return l.teamObj(i.team), nil }),
		"assignee": l.userObj(i.assignee), "creator": l.userObj(i.creator),
		"project": nil, "cycle": nil, "parent": nil,
		"labels": gqlResolver(func(args map[string]any) (any, error) {
			var nodes []*gqlObj
			for _, lb := range i.labels {
				nodes = append(nodes, l.labelObj(lb))
			}
			return connection("IssueLabelConnection", nodes, args)
		}),
	}}
}

// connection pages nodes by id cursors: first (default 50, at most 250),
// after.
func connection(typ string, nodes []*gqlObj, args map[string]any) (*gqlObj, error) {
	first := int64(50)
	if v, ok := args["first"]; ok && v != nil {
		n, isInt := v.(int64)
		if !isInt || n < 0 {
			return nil, &gqlErr{msg: "Argument Validation Error: first must be a non-negative integer", code: "INVALID_INPUT"}
		}
		if n > 250 {
			return nil, &gqlErr{msg: "Argument Validation Error: first must not be greater than 250", code: "INVALID_INPUT"}
		}
		first = n
	}
	start := 0
	if a, ok := args["after"].(string); ok && a != "" {
		found := false
		for i, n := range nodes {
			if n.fields["id"] == a {
				start, found = i+1, true
				break
			}
		}
		if !found {
			return nil, &gqlErr{msg: "Argument Validation Error: after is not a valid cursor", code: "INVALID_INPUT"}
		}
	}
	end := min(len(nodes), start+int(first))
	page := nodes[min(start, len(nodes)):end]
	if page == nil {
		page = []*gqlObj{}
	}
	var startCursor, endCursor any
	if len(page) > 0 {
		startCursor = page[0].fields["id"]
		endCursor = page[len(page)-1].fields["id"]
	}
	return &gqlObj{typ: typ, fields: map[string]any{
		"nodes": page,
		"pageInfo": &gqlObj{typ: "PageInfo", fields: map[string]any{
			"hasNextPage": end < len(nodes), "hasPreviousPage": start > 0,
			"startCursor": startCursor, "endCursor": endCursor,
		}},
	}}, nil
}

func (l *linearAPI) issueConnection(args map[string]any, keep func(*linIssue) bool) (any, error) {
	for k := range args {
		switch k {
		case "first", "after", "filter", "orderBy", "includeArchived":
		default:
			return nil, &gqlErr{msg: fmt.Sprintf("Unknown argument \"%s\" on field \"issues\".", k), code: "GRAPHQL_VALIDATION_FAILED"}
		}
	}
	issues := make([]*linIssue, 0, len(l.issues))
	for _, i := range l.issues {
		if keep == nil || keep(i) {
			issues = append(issues, i)
		}
	}
	order := "createdAt"
	if o, ok := args["orderBy"].(string); ok {
		if o != "createdAt" && o != "updatedAt" {
			return nil, &gqlErr{msg: fmt.Sprintf("Value \"%s\" does not exist in \"PaginationOrderBy\" enum.", o), code: "GRAPHQL_VALIDATION_FAILED"}
		}
		order = o
	}
	sort.SliceStable(issues, func(a, b int) bool {
		if order == "updatedAt" {
			return issues[a].updated.After(issues[b].updated)
		}
		return issues[a].created.After(issues[b].created)
	})
	var nodes []*gqlObj
	for _, i := range issues {
		o := l.issueObj(i)
		if f, ok := args["filter"]; ok && f != nil {
			fm, isMap := f.(map[string]any)
			if !isMap {
				return nil, &gqlErr{msg: "Expected type \"IssueFilter\" to be an object.", code: "GRAPHQL_VALIDATION_FAILED"}
			}
			m, err := matchFilter(o, fm)
			if err != nil {
				return nil, err
			}
			if !m {
				continue
			}
		}
		nodes = append(nodes, o)
	}
	return connection("IssueConnection", nodes, args)
}

var comparators = setOf("eq", "neq", "in", "nin", "lt", "lte", "gt", "gte", "contains", "notContains",
	"containsIgnoreCase", "startsWith", "endsWith", "eqIgnoreCase", "null")

// matchFilter applies a Linear filter object (field -> comparator or
// nested filter, plus and/or) to an object.
func matchFilter(o *gqlObj, filter map[string]any) (bool, error) {
	for k, cond := range filter {
		switch k {
		case "and", "or":
			list, _ := cond.([]any)
			matched := false
			for _, e := range list {
				em, _ := e.(map[string]any)
				m, err := matchFilter(o, em)
				if err != nil {
					return false, err
				}
				if k == "and" && !m {
					return false, nil
				}
				matched = matched || m
			}
			if k == "or" && len(list) > 0 && !matched {
				return false, nil
			}
			continue
		}
		val, ok := o.fields[k]
		if !ok {
			return false, &gqlErr{msg: fmt.Sprintf("Field \"%s\" is not defined by type \"%sFilter\".", k, o.typ), code: "GRAPHQL_VALIDATION_FAILED"}
		}
		if r, isRes := val.(gqlResolver); isRes {
			v, err := r(nil)
			if err != nil {
				return false, err
			}
			val = v
		}
		cm, _ := cond.(map[string]any)
		if cm == nil {
			continue
		}
		if sub, isObj := val.(*gqlObj); isObj || val == nil {
			nested := map[string]any{}
			for ck, cv := range cm {
				if ck == "null" {
					if (sub == nil) != (cv == true) {
						return false, nil
					}
					continue
				}
				nested[ck] = cv
			}
			if len(nested) == 0 {
				continue
			}
			if sub == nil {
				return false, nil
			}
			m, err := matchFilter(sub, nested)
			if err != nil || !m {
				return false, err
			}
			continue
		}
		for ck, cv := range cm {
			if !comparators[ck] {
				return false, &gqlErr{msg: fmt.Sprintf("Field \"%s\" is not defined by type \"Comparator\".", ck), code: "GRAPHQL_VALIDATION_FAILED"}
			}
			if !compare(ck, val, cv) {
				return false, nil
			}
		}
	}
	return true, nil
}

func compare(op string, val, want any) bool {
	vs, vIsStr := val.(string)
	ws, _ := want.(string)
	num := func(x any) (float64, bool) {
		switch n := x.(type) {
		case int:
			return float64(n), true
		case int64:
			return float64(n), true
		case float64:
			return n, true
		}
		return 0, false
	}
	eq := func(a, b any) bool {
		if an, ok := num(a); ok {
			bn, ok := num(b)
			return ok && an == bn
		}
		return a == b
	}
	switch op {
	case "eq":
		return eq(val, want)
	case "neq":
		return !eq(val, want)
	case "in", "nin":
		list, _ := want.([]any)
		found := false
		for _, e := range list {
			found = found || eq(val, e)
		}
		return found == (op == "in")
	case "null":
		return (val == nil) == (want == true)
	case "lt", "lte", "gt", "gte":
		a, ok1 := num(val)
		b, ok2 := num(want)
		if !ok1 || !ok2 {
			if vIsStr {
				c := strings.Compare(vs, ws)
				return map[string]bool{"lt": c < 0, "lte": c <= 0, "gt": c > 0, "gte": c >= 0}[op]
			}
			return false
		}
		return map[string]bool{"lt": a < b, "lte": a <= b, "gt": a > b, "gte": a >= b}[op]
	}
	if !vIsStr {
		return false
	}
	switch op {
	case "contains":
		return strings.Contains(vs, ws)
	case "notContains":
		return !strings.Contains(vs, ws)
	case "containsIgnoreCase":
		return strings.Contains(strings.ToLower(vs), strings.ToLower(ws))
	case "startsWith":
		return strings.HasPrefix(vs, ws)
	case "endsWith":
		return strings.HasSuffix(vs, ws)
	case "eqIgnoreCase":
		return strings.EqualFold(vs, ws)
	}
	return false
}

func notFound(kind string) error {
	return &gqlErr{msg: "Entity not found: " + kind, code: "INPUT_ERROR", userMsg: "Could not find referenced " + kind + "."}
}

func (l *linearAPI) queryRoot() *gqlObj {
	return &gqlObj{typ: "Query", fields: map[string]any{
		"viewer":       gqlResolver(func(map[string]any) (any, error) { return l.userObj(l.users[0]), nil }),
		"organization": gqlResolver(func(map[string]any) (any, error) { return l.orgObj(), nil }),
		"users": gqlResolver(func(args map[string]any) (any, error) {
			var nodes []*gqlObj
			for _, u := range l.users {
				nodes = append(nodes, l.userObj(u))
			}
			return connection("UserConnection", nodes, args)
		}),
		"teams": gqlResolver(func(args map[string]any) (any, error) {
			var nodes []*gqlObj
			for _, t := range l.teams {
				o := l.teamObj(t)
				if f, ok := args["filter"].(map[string]any); ok {
					m, err := matchFilter(o, f)
					if err != nil {
						return nil, err
					}
					if !m {
						continue
					}
				}
				nodes = append(nodes, o)
			}
			return connection("TeamConnection", nodes, args)
		}),
		"team": gqlResolver(func(args map[string]any) (any, error) {
			id, _ := args["id"].(string)
			for _, t := range l.teams {
				if t.id == id || strings.EqualFold(t.key, id) {
					return l.teamObj(t), nil
				}
			}
			return nil, notFound("Team")
		}),
		"issues": gqlResolver(func(args map[string]any) (any, error) { return l.issueConnection(args, nil) }),
		"issue": gqlResolver(func(args map[string]any) (any, error) {
			id, ok := args["id"].(string)
			if !ok {
				return nil, &gqlErr{msg: "Field \"issue\" argument \"id\" of type \"String!\" is required, but it was not provided.", code: "GRAPHQL_VALIDATION_FAILED"}
			}
			for _, i := range l.issues {
				if i.id == id || strings.EqualFold(i.identifier(), id) {
					return l.issueObj(i), nil
				}
			}
			return nil, notFound("Issue")
		}),
	}}
}

func (l *linearAPI) mutationRoot() *gqlObj {
	return &gqlObj{typ: "Mutation", fields: map[string]any{
		"issueCreate": gqlResolver(l.issueCreate),
	}}
}

func (l *linearAPI) issueCreate(args map[string]any) (any, error) {
	in, ok := args["input"].(map[string]any)
	if !ok {
		return nil, &gqlErr{msg: "Field \"issueCreate\" argument \"input\" of type \"IssueCreateInput!\" is required, but it was not provided.", code: "GRAPHQL_VALIDATION_FAILED"}
	}
	for k := range in {
		switch k {
		case "teamId", "title", "description", "priority", "assigneeId", "stateId", "labelIds", "dueDate", "estimate", "id":
		default:
			return nil, &gqlErr{msg: fmt.Sprintf("Field \"%s\" is not defined by type \"IssueCreateInput\".", k), code: "GRAPHQL_VALIDATION_FAILED"}
		}
	}
	teamID, _ := in["teamId"].(string)
	if teamID == "" {
		return nil, &gqlErr{msg: "Field \"IssueCreateInput.teamId\" of required type \"String!\" was not provided.", code: "GRAPHQL_VALIDATION_FAILED"}
	}
	var team *linTeam
	for _, t := range l.teams {
		if t.id == teamID {
			team = t
		}
	}
	if team == nil {
		return nil, notFound("Team")
	}
	title, _ := in["title"].(string)
	if strings.TrimSpace(title) == "" {
		return nil, &gqlErr{msg: "Argument Validation Error: title should not be empty", code: "INVALID_INPUT", userMsg: "Title is required."}
	}
	now := time.Now().UTC()
	is := &linIssue{
		id: l.idSource(), team: team, number: team.nextNumber, title: title,
		state: team.states[1], creator: l.users[0], created: now, updated: now,
	}
	team.nextNumber++
	if d, ok := in["description"].(string); ok {
		is.description = &d
	}
	if p, ok := in["priority"].(int64); ok {
		if p < 0 || p > 4 {
			return nil, &gqlErr{msg: "Argument Validation Error: priority must be between 0 and 4", code: "INVALID_INPUT"}
		}
		is.priority = int(p)
	}
	if a, ok := in["assigneeId"].(string); ok {
		for _, u := range l.users {
			if u.id == a {
				is.assignee = u
			}
		}
		if is.assignee == nil {
			return nil, notFound("User")
		}
	}
	l.issues = append(l.issues, is)
	l.syncID++
	return &gqlObj{typ: "IssuePayload", fields: map[string]any{
		"success": true, "lastSyncId": float64(l.syncID), "issue": l.issueObj(is),
	}}, nil
}
