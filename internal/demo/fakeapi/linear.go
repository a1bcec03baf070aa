package fakeapi

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
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
// The fake does not parse GraphQL: the host sends a manifest's query text
// as the manifest wrote it, so the fake answers from canned entries keyed
// by that text (testdata/linear/queries.json, whose "about" says what an
// entry holds), resolved against the recorded workspace (workspace.json).
// Code is left for paging (first/after cursors, pageInfo), the team
// filter, ordering and the issueCreate write.

// LinearOrgKey is the URL key of the fake Linear workspace.
const LinearOrgKey = "pinned-fake"

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

type linearAPI struct {
	mu      sync.Mutex
	queries []*linQuery
	types   map[string]string // error code -> extensions.type
	users   []obj
	byName  map[string]obj // displayName -> user
	teams   []any          // of obj
	issues  []obj          // each with its team obj
}

var linPriorityLabels = []string{"No priority", "Urgent", "High", "Medium", "Low"}

// newLinear loads the canned queries and the recorded workspace, and
// fills in the references of the members the queries select.
func newLinear() *linearAPI {
	var qs struct {
		Queries []*linQuery
		Types   map[string]string `json:"error_types"` // extensions.type by code
	}
	loadData("linear/queries.json", &qs)
	var ws struct {
		Organization         obj
		Users, Teams, Issues []obj
		Labels               map[string]obj // by name
	}
	loadData("linear/workspace.json", &ws)
	l := &linearAPI{queries: qs.Queries, types: qs.Types, users: ws.Users, byName: map[string]obj{}}
	for _, q := range qs.Queries {
		if q.Pattern != "" {
			q.re = regexp.MustCompile(q.Pattern)
		}
	}
	for _, u := range ws.Users {
		u["__typename"], u["organization"] = "User", ws.Organization
		l.byName[u["displayName"].(string)] = u
	}
	teams := map[any]obj{}
	for _, t := range ws.Teams {
		l.teams, teams[t["key"]] = append(l.teams, t), t
	}
	for _, is := range ws.Issues {
		var ls []any
		for _, n := range is["labels"].([]any) {
			ls = append(ls, ws.Labels[n.(string)])
		}
		l.addIssue(is, teams[is["team"]], is["state"].(string), ls)
	}
	return l
}

// addIssue completes an issue (its identifier, url and references) and
// appends it. Caller holds l.mu or owns l.
func (l *linearAPI) addIssue(is, team obj, state string, labels []any) obj {
	n := 1
	for _, i := range l.issues {
		if i["team"].(obj)["key"] == team["key"] {
			n++
		}
	}
	ident := team["key"].(string) + "-" + strconv.Itoa(n)
	is["identifier"] = ident
	if _, ok := is["id"]; !ok {
		// A created issue's id: a UUID deterministic in its identifier,
		// as the recorded issues' ids are fixed.
		h := sha256.Sum256([]byte(ident))
		x := hex.EncodeToString(h[:16])
		is["id"] = x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
	}
	is["url"] = "https://linear.app/" + LinearOrgKey + "/issue/" + ident + "/" + slug(is["title"].(string))
	p, _ := is["priority"].(float64)
	is["priority"], is["priorityLabel"] = int(p), linPriorityLabels[int(p)]
	for _, s := range team["states"].([]any) {
		if s.(obj)["name"] == state {
			is["state"] = s
		}
	}
	if a, ok := is["assignee"].(string); ok {
		is["assignee"] = l.byName[a]
	}
	is["team"], is["creator"], is["labels"] = team, l.byName[is["creator"].(string)], obj{"nodes": append([]any{}, labels...)}
	l.issues = append(l.issues, is)
	return is
}

// linErr is one error of Linear's "errors" array.
type linErr struct{ msg, code string }

// answerError writes Linear's error envelope (testdata/providers.json)
// with e, its extensions.type by its code, and for a 200 "data": null.
func (l *linearAPI) answerError(w http.ResponseWriter, status int, e *linErr) {
	body := errorBody(Linear, 0, e.msg, "code", e.code, "type", cmp.Or(l.types[e.code], "graphql error"))
	if status == http.StatusOK {
		body = append(ordered{{"data", nil}}, body...)
	}
	writeJSON(w, status, body)
}

func (l *linearAPI) serve(c *call) {
	var in struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	dec := json.NewDecoder(bytes.NewReader(c.body))
	dec.UseNumber()
	decodeErr := dec.Decode(&in)
	mt, _, _ := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	q, args, bad := l.lookup(in.Query, in.Variables)
	switch {
	case c.r.URL.EscapedPath() != "/graphql":
		l.answerError(c.w, http.StatusNotFound, &linErr{"Not found: " + c.r.URL.Path, "NOT_FOUND"})
	case c.r.Method != http.MethodPost:
		c.w.Header().Set("Allow", "POST")
		l.answerError(c.w, http.StatusMethodNotAllowed, &linErr{"GraphQL requests must be POST requests with a JSON body.", "BAD_REQUEST"})
	case mt != "application/json":
		l.answerError(c.w, http.StatusBadRequest, &linErr{"This operation has been blocked as a potential Cross-Site Request Forgery (CSRF). Send Content-Type: application/json.", "BAD_REQUEST"})
	case decodeErr != nil:
		l.answerError(c.w, http.StatusBadRequest, &linErr{"POST body sent invalid JSON or `variables` not an object: " + decodeErr.Error(), "BAD_REQUEST"})
	case strings.TrimSpace(in.Query) == "":
		l.answerError(c.w, http.StatusBadRequest, &linErr{"GraphQL operations must contain a non-empty `query`.", "BAD_REQUEST"})
	case bad != nil: // every canned error is a 400 (linear_test.go)
		l.answerError(c.w, http.StatusBadRequest, bad)
	default:
		l.mu.Lock()
		v, err := l.resolve(q.Field, args)
		l.mu.Unlock()
		if err != nil {
			l.answerError(c.w, http.StatusOK, err)
		} else {
			writeJSON(c.w, http.StatusOK, ordered{{"data", ordered{{q.Field, selectFields(v, q.Select)}}}})
		}
	}
}

// lookup finds the canned entry of a query text and binds its arguments:
// "$name" from the variables (checked against the declared types), "$1"…
// from a pattern's groups (JSON literals), or returns the entry's error, a
// variable's or that there is no entry.
func (l *linearAPI) lookup(text string, vars map[string]any) (*linQuery, map[string]any, *linErr) {
	var q *linQuery
	for _, e := range l.queries {
		if e.re == nil && e.Query == text || e.re != nil && e.re.MatchString(text) {
			q = e
		}
	}
	switch {
	case q == nil:
		return nil, nil, &linErr{"fakeapi: no canned answer for this query text; the Linear fake answers the queries listed in internal/demo/fakeapi/testdata/linear/queries.json", "GRAPHQL_VALIDATION_FAILED"}
	case q.Error != nil:
		return nil, nil, &linErr{q.Error.Message, q.Error.Code}
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
	args, groups := map[string]any{}, []string(nil)
	if q.re != nil {
		groups = q.re.FindStringSubmatch(text)
	}
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
		return connection(l.teams, args)
	case "issue":
		for _, i := range l.issues {
			if i["id"] == str("id") || strings.EqualFold(i["identifier"].(string), str("id")) {
				return i, nil
			}
		}
		return nil, notFound("Issue")
	case "issues":
		list := []any{}
		for _, i := range l.issues {
			if team := str("team"); team == "" || i["team"].(obj)["key"] == team {
				list = append(list, i)
			}
		}
		order := "createdAt"
		if str("orderBy") == "updatedAt" {
			order = "updatedAt"
		}
		sort.SliceStable(list, func(a, b int) bool { return list[a].(obj)[order].(string) > list[b].(obj)[order].(string) })
		return connection(list, args)
	case "issueCreate":
		i := slices.IndexFunc(l.teams, func(t any) bool { return t.(obj)["id"] == str("teamId") })
		if i < 0 {
			return nil, notFound("Team")
		}
		team := l.teams[i].(obj)
		if strings.TrimSpace(str("title")) == "" {
			return nil, &linErr{"Argument Validation Error: title should not be empty", "INVALID_INPUT"}
		}
		now := isoMilli(time.Now())
		is := obj{"title": str("title"), "description": args["description"], "priority": 0.0, "estimate": nil, "dueDate": nil,
			"creator": l.users[0]["displayName"], "createdAt": now, "updatedAt": now}
		is = l.addIssue(is, team, team["states"].([]any)[1].(obj)["name"].(string), nil)
		return obj{"success": true, "issue": is}, nil
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
	after, _ := args["after"].(string)
	start := slices.IndexFunc(nodes, func(n any) bool { return n.(obj)["id"] == after }) + 1
	if after != "" && start == 0 {
		return nil, &linErr{"Argument Validation Error: after is not a valid cursor", "INVALID_INPUT"}
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
