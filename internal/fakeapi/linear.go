package fakeapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Linear fake: the GraphQL API at api.linear.app/graphql.
//
// The fake does not parse GraphQL. The host sends a manifest's query text
// exactly as the manifest wrote it, so the fake answers from canned
// entries keyed by that text (testdata/linear/queries.json): each names
// the root field it answers, its arguments (literals or "$variable"), the
// declared variable types (checked as Linear does) and the selected fields
// as dot paths. The workspace (users, teams and their workflow states,
// labels, 140 issues, their ids) is recorded-shape data in
// testdata/linear/workspace.json. Code is left for authentication, paging (first/after cursors,
// pageInfo), the team filter, ordering and the issueCreate write.

// LinearOrgKey is the URL key of the fake Linear workspace.
const LinearOrgKey = "pinned-fake"

// obj is a recorded-shape JSON object of the fake's data.
type obj = map[string]any

// linQuery is one canned entry of testdata/linear/queries.json.
type linQuery struct {
	Query   string            `json:"query"`
	Pattern string            `json:"pattern"`
	Vars    map[string]string `json:"vars"`
	Field   string            `json:"field"`
	Args    map[string]any    `json:"args"`
	Select  []string          `json:"select"`
	Status  int               `json:"status"`
	Error   *struct{ Message, Code string }
	re      *regexp.Regexp
}

type linTeam struct {
	id, key    string
	obj        obj
	states     []obj
	nextNumber int
}

type linIssue struct {
	team *linTeam
	obj  obj
}

type linearAPI struct {
	mu      sync.Mutex
	queries map[string]*linQuery
	pattern []*linQuery
	users   []obj
	byName  map[string]obj // displayName -> user
	teams   []*linTeam
	issues  []*linIssue
}

var linPriorityLabels = []string{"No priority", "Urgent", "High", "Medium", "Low"}

// newLinear loads the canned queries and the recorded workspace, and
// fills in the ids and references of the members the queries select.
func newLinear() *linearAPI {
	var qs struct{ Queries []*linQuery }
	loadData("linear/queries.json", &qs)
	var ws struct {
		Organization                 obj
		Users, Teams, Labels, Issues []obj
	}
	loadData("linear/workspace.json", &ws)
	l := &linearAPI{queries: map[string]*linQuery{}, byName: map[string]obj{}}
	for _, q := range qs.Queries {
		if q.Pattern != "" {
			q.re = regexp.MustCompile(q.Pattern)
			l.pattern = append(l.pattern, q)
		} else {
			l.queries[q.Query] = q
		}
	}
	for _, u := range ws.Users {
		u["__typename"], u["organization"] = "User", ws.Organization
		l.users = append(l.users, u)
		l.byName[u["displayName"].(string)] = u
	}
	for _, t := range ws.Teams {
		team := &linTeam{id: t["id"].(string), key: t["key"].(string), obj: t, nextNumber: 1}
		for _, s := range t["states"].([]any) {
			team.states = append(team.states, s.(obj))
		}
		l.teams = append(l.teams, team)
	}
	labels := map[any]obj{}
	for _, lb := range ws.Labels {
		labels[lb["name"]] = lb
	}
	for _, is := range ws.Issues {
		var ls []any
		for _, n := range is["labels"].([]any) {
			ls = append(ls, labels[n])
		}
		l.addIssue(is, is["team"].(string), is["state"].(string), ls)
	}
	return l
}

// addIssue completes a recorded issue (its identifier, url and
// references) and appends it. Caller holds l.mu or owns l.
func (l *linearAPI) addIssue(is obj, teamKey, state string, labels []any) *linIssue {
	var team *linTeam
	for _, t := range l.teams {
		if t.key == teamKey {
			team = t
		}
	}
	ident := team.key + "-" + strconv.Itoa(team.nextNumber)
	team.nextNumber++
	is["identifier"] = ident
	is["url"] = "https://linear.app/" + LinearOrgKey + "/issue/" + ident + "/" + slug(is["title"].(string))
	p, _ := is["priority"].(float64)
	is["priority"], is["priorityLabel"] = int(p), linPriorityLabels[int(p)]
	for _, s := range team.states {
		if s["name"] == state {
			is["state"] = s
		}
	}
	if a, ok := is["assignee"].(string); ok {
		is["assignee"] = l.byName[a]
	}
	is["team"], is["creator"], is["labels"] = team.obj, l.byName[is["creator"].(string)], obj{"nodes": append([]any{}, labels...)}
	li := &linIssue{team: team, obj: is}
	l.issues = append(l.issues, li)
	return li
}

// gqlTypes are Linear's extensions.type of each error code
// (testdata/linear/queries.json "error_types").
var gqlTypes = func() (d struct {
	ErrorTypes map[string]string `json:"error_types"`
}) {
	loadData("linear/queries.json", &d)
	return d
}().ErrorTypes

// linErr is one error of Linear's "errors" array.
type linErr struct{ msg, code string }

// body is Linear's error envelope (testdata/providers.json) with e.
func (e *linErr) body() ordered {
	return errorBody(Linear, 0, e.msg, "code", e.code, "type", cmp.Or(gqlTypes[e.code], "graphql error"))
}

// linearError writes Linear's error envelope with status.
func linearError(w http.ResponseWriter, status int, msg, code string) {
	writeJSON(w, status, (&linErr{msg, code}).body())
}

func (l *linearAPI) serve(c *call) {
	if !c.authenticate() {
		return
	}
	var in struct {
		Query     *string        `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	dec := json.NewDecoder(bytes.NewReader(c.body))
	dec.UseNumber()
	decodeErr := dec.Decode(&in)
	mt, _, _ := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	switch {
	case c.r.URL.EscapedPath() != "/graphql":
		linearError(c.w, http.StatusNotFound, "Not found: "+c.r.URL.Path, "NOT_FOUND")
	case c.r.Method != http.MethodPost:
		c.w.Header().Set("Allow", "POST")
		linearError(c.w, http.StatusMethodNotAllowed, "GraphQL requests must be POST requests with a JSON body.", "BAD_REQUEST")
	case mt != "application/json":
		linearError(c.w, http.StatusBadRequest, "This operation has been blocked as a potential Cross-Site Request Forgery (CSRF). Send Content-Type: application/json.", "BAD_REQUEST")
	case decodeErr != nil:
		linearError(c.w, http.StatusBadRequest, "POST body sent invalid JSON or `variables` not an object: "+decodeErr.Error(), "BAD_REQUEST")
	case in.Query == nil || strings.TrimSpace(*in.Query) == "":
		linearError(c.w, http.StatusBadRequest, "GraphQL operations must contain a non-empty `query`.", "BAD_REQUEST")
	default:
		l.answer(c, *in.Query, in.Variables)
	}
}

// answer answers a GraphQL request from its canned entry.
func (l *linearAPI) answer(c *call, query string, vars map[string]any) {
	q, args, bad := l.lookup(query, vars)
	switch {
	case q == nil:
		linearError(c.w, http.StatusBadRequest, "fakeapi: no canned answer for this query text; the Linear fake answers the queries listed in internal/fakeapi/testdata/linear/queries.json", "GRAPHQL_VALIDATION_FAILED")
		return
	case q.Error != nil:
		linearError(c.w, q.Status, q.Error.Message, q.Error.Code)
		return
	}
	if bad != nil {
		writeJSON(c.w, http.StatusBadRequest, bad.body())
		return
	}
	l.mu.Lock()
	v, err := l.resolve(q.Field, args)
	l.mu.Unlock()
	if err != nil {
		writeJSON(c.w, http.StatusOK, append(ordered{{"data", nil}}, err.body()...))
		return
	}
	writeJSON(c.w, http.StatusOK, ordered{{"data", ordered{{q.Field, selectFields(v, q.Select)}}}})
}

// lookup finds the canned entry of a query text and binds its arguments:
// "$name" from the variables (checked against the declared types), "$1"…
// from a pattern's groups (JSON literals), or returns a variable's error.
func (l *linearAPI) lookup(text string, vars map[string]any) (*linQuery, map[string]any, *linErr) {
	q, groups := l.queries[text], []string(nil)
	for _, p := range l.pattern {
		if m := p.re.FindStringSubmatch(text); q == nil && m != nil {
			q, groups = p, m
		}
	}
	if q == nil || q.Error != nil {
		return q, nil, nil
	}
	for _, n := range slices.Sorted(maps.Keys(q.Vars)) {
		typ := q.Vars[n]
		v, ok := vars[n]
		if (!ok || v == nil) && strings.HasSuffix(typ, "!") {
			return q, nil, &linErr{fmt.Sprintf("Variable \"$%s\" of required type \"%s\" was not provided.", n, typ), "BAD_USER_INPUT"}
		}
		if !ok || v == nil {
			continue
		}
		_, isNum := v.(json.Number)
		_, isStr := v.(string)
		if strings.HasPrefix(typ, "Int") && !isNum || strings.HasPrefix(typ, "String") && !isStr {
			b, _ := json.Marshal(v)
			return q, nil, &linErr{fmt.Sprintf("Variable \"$%s\" got invalid value %s; %s cannot represent value: %s", n, b, strings.TrimSuffix(typ, "!"), b), "BAD_USER_INPUT"}
		}
	}
	args := map[string]any{}
	for k, a := range q.Args {
		s, isRef := a.(string)
		switch {
		case isRef && strings.HasPrefix(s, "$") && q.re != nil:
			i, _ := strconv.Atoi(s[1:])
			var v any
			if json.Unmarshal([]byte(groups[i]), &v) == nil {
				args[k] = v
			}
		case isRef && strings.HasPrefix(s, "$"):
			if v, ok := vars[s[1:]]; ok {
				args[k] = v
			}
		default:
			args[k] = a
		}
	}
	return q, args, nil
}

// An error raised while resolving goes into "errors" with "data": null
// and status 200, as Linear answers.
func notFound(kind string) *linErr { return &linErr{"Entity not found: " + kind, "INPUT_ERROR"} }

// resolve answers one root field. Caller holds l.mu.
func (l *linearAPI) resolve(field string, args map[string]any) (any, *linErr) {
	str := func(k string) string { s, _ := args[k].(string); return s }
	switch field {
	case "viewer":
		return l.users[0], nil
	case "teams":
		nodes := make([]any, len(l.teams))
		for i, t := range l.teams {
			nodes[i] = t.obj
		}
		return connection(nodes, args)
	case "issue":
		for _, i := range l.issues {
			if i.obj["id"] == str("id") || strings.EqualFold(i.obj["identifier"].(string), str("id")) {
				return i.obj, nil
			}
		}
		return nil, notFound("Issue")
	case "issues":
		list := make([]*linIssue, 0, len(l.issues))
		for _, i := range l.issues {
			if team := str("team"); team == "" || i.team.key == team {
				list = append(list, i)
			}
		}
		order := "createdAt"
		if str("orderBy") == "updatedAt" {
			order = "updatedAt"
		}
		sort.SliceStable(list, func(a, b int) bool { return list[a].obj[order].(string) > list[b].obj[order].(string) })
		nodes := make([]any, len(list))
		for i, is := range list {
			nodes[i] = is.obj
		}
		return connection(nodes, args)
	case "issueCreate":
		var team *linTeam
		for _, t := range l.teams {
			if t.id == str("teamId") {
				team = t
			}
		}
		if team == nil {
			return nil, notFound("Team")
		}
		if strings.TrimSpace(str("title")) == "" {
			return nil, &linErr{"Argument Validation Error: title should not be empty", "INVALID_INPUT"}
		}
		now := isoMilli(time.Now())
		is := obj{"id": mint([]any{"", "uuid", 0.0}), "title": str("title"), "description": args["description"], "priority": 0.0, "estimate": nil, "dueDate": nil,
			"creator": l.users[0]["displayName"], "createdAt": now, "updatedAt": now}
		li := l.addIssue(is, team.key, team.states[1]["name"].(string), nil)
		return obj{"success": true, "issue": li.obj}, nil
	}
	return nil, &linErr{"fakeapi: no resolver for field " + field, "GRAPHQL_VALIDATION_FAILED"}
}

// connection pages nodes by id cursors: first (default 50, at most 250),
// after; pageInfo holds what the queries select (hasNextPage, endCursor).
func connection(nodes []any, args map[string]any) (any, *linErr) {
	first := 50
	if v, ok := args["first"]; ok && v != nil {
		n, err := strconv.Atoi(fmt.Sprint(v))
		switch {
		case err != nil || n < 0:
			return nil, &linErr{"Argument Validation Error: first must be a non-negative integer", "INVALID_INPUT"}
		case n > 250:
			return nil, &linErr{"Argument Validation Error: first must not be greater than 250", "INVALID_INPUT"}
		}
		first = n
	}
	start := 0
	if a, ok := args["after"].(string); ok && a != "" {
		start = -1
		for i, n := range nodes {
			if n.(obj)["id"] == a {
				start = i + 1
			}
		}
		if start < 0 {
			return nil, &linErr{"Argument Validation Error: after is not a valid cursor", "INVALID_INPUT"}
		}
	}
	end := min(len(nodes), start+first)
	page := nodes[min(start, len(nodes)):end]
	var endCursor any
	if len(page) > 0 {
		endCursor = page[len(page)-1].(obj)["id"]
	}
	return obj{"nodes": page, "pageInfo": obj{"hasNextPage": end < len(nodes), "endCursor": endCursor}}, nil
}

// selectFields keeps the selected fields (dot paths, in the query's order) of
// a value: an object, a list of objects, or null.
func selectFields(v any, paths []string) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = selectFields(e, paths)
		}
		return out
	case obj:
		var out ordered
		sub := map[string][]string{}
		for _, p := range paths {
			head, rest, nested := strings.Cut(p, ".")
			if _, seen := sub[head]; !seen {
				out = append(out, kv{k: head})
				sub[head] = []string{}
			}
			if nested {
				sub[head] = append(sub[head], rest)
			}
		}
		for i, m := range out {
			if len(sub[m.k]) == 0 {
				out[i].v = x[m.k]
			} else {
				out[i].v = selectFields(x[m.k], sub[m.k])
			}
		}
		return out
	}
	return v
}

// slug makes a URL slug of at most 60 characters from a title.
func slug(s string) string {
	s = strings.TrimLeft(nonSlug.ReplaceAllString(strings.ToLower(s), "-"), "-")
	return strings.TrimSuffix(s[:min(len(s), 60)], "-")
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)
