package fakeapi

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/tidwall/gjson"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// GitHub fake: REST API v3 at api.github.com, version 2022-11-28 (its
// routes: the table in newGitHub).
//
// Every answer is a recorded-shape template of testdata/github/templates.json
// filled with the recorded rows of repos.json and issues.json; the code
// keeps auth, routing, paging (Link headers), sorting and the issue write.

// GitHubViewer is the login of the fake GitHub user the tokens belong to.
const GitHubViewer = "pinned-tester"

// GitHubRepoCount is how many repositories /user/repos lists in total.
const GitHubRepoCount = 250

const (
	ghAPI  = "https://api.github.com"
	ghWeb  = "https://github.com"
	ghDocs = "https://docs.github.com/rest"
)

// ghRepo is one repository: the values its template is filled with
// (a row of testdata/github/repos.json), and the ones the code reads.
type ghRepo struct {
	vals  map[string]any
	id    int64
	full  string
	open  int
	pages ordered // the Pages site, or nil
}

type githubAPI struct {
	mu     sync.Mutex
	tmpl   map[string]gjson.Result
	viewer map[string]any
	people map[any]map[string]any // users and organizations by login
	rows   []ghIssue              // testdata/github/issues.json
	repos  []*ghRepo
	byName map[string]*ghRepo         // lower-case full name
	issues map[int64][]map[string]any // the values of the issue template
	nextID int64
	mux    *http.ServeMux
}

// newGitHub loads the recorded repositories and fills each one's owner,
// license, security settings and Pages site from the templates.
func newGitHub() *githubAPI {
	var d struct{ Users, Orgs, Repos []map[string]any }
	loadData("github/repos.json", &d)
	var is struct{ Issues []ghIssue }
	loadData("github/issues.json", &is)
	g := &githubAPI{
		tmpl:   loadTemplates("github/templates.json"),
		viewer: d.Users[0],
		people: map[any]map[string]any{},
		rows:   is.Issues,
		byName: map[string]*ghRepo{},
		issues: map[int64][]map[string]any{},
		nextID: 3100000000,
	}
	for _, u := range append(d.Users, d.Orgs...) {
		g.people[u["login"]] = u
	}
	for _, v := range d.Repos {
		v["owner"] = fill(g.tmpl["user"], g.people[v["owner"]])
		if g.people[v["owner"].(ordered).get1("login")]["type"] == "Organization" {
			v["organization"] = v["owner"]
		}
		if k, ok := v["license"].(string); ok {
			v["license"] = fill(g.tmpl["licenses"], nil).(ordered).get1(k)
		}
		if _, ok := v["dependabot"]; ok {
			v["security_and_analysis"] = fill(g.tmpl["security_and_analysis"], v)
		}
		repo := &ghRepo{vals: v, id: int64(v["id"].(float64)), full: v["full"].(string), open: int(v["open_issues_count"].(float64))}
		if v["has_pages"] == true {
			repo.pages = fill(g.tmpl["pages"], v).(ordered)
		}
		g.repos = append(g.repos, repo)
		g.byName[strings.ToLower(repo.full)] = repo
	}
	g.mux = routes{
		"GET /user": g.getUser, "GET /user/repos": g.listRepos, "GET /repos/{owner}/{repo}": g.getRepo,
		"GET /repos/{owner}/{repo}/pages": g.getPages, "GET /repos/{owner}/{repo}/issues": g.listIssues,
		"POST /repos/{owner}/{repo}/issues": g.createIssue,
	}.mux()
	return g
}

// nodeID makes a GraphQL-style global id, deterministic in id.
func nodeID(prefix string, id int64) string {
	h := sha256.Sum256(strconv.AppendInt(nil, id, 10))
	return prefix + base64.RawURLEncoding.EncodeToString(h[:])[:10]
}

// ghIssue is a row of testdata/github/issues.json.
type ghIssue struct {
	Title, Body, User, Assignee string
	CreatedAt                   string `json:"created_at"`
	ClosedAt                    string `json:"closed_at"`
	Comments                    int
	Labels                      []string
	PullRequest                 bool `json:"pull_request"`
}

// repoIssues returns the issues of a repository, made on first use of the
// recorded rows as testdata/github/issues.json says. Caller holds g.mu.
func (g *githubAPI) repoIssues(repo *ghRepo) []map[string]any {
	if is, ok := g.issues[repo.id]; ok {
		return is
	}
	labels := map[any]any{} // the label set every repository has (GitHub's defaults), by name
	for i, d := range fill(g.tmpl["labels"], nil).([]any) {
		d, id := d.([]any), repo.id*10+int64(i)
		labels[d[0]] = fill(g.tmpl["label"], map[string]any{"id": id, "node_id": nodeID("LA_kwDO", id),
			"repo_url": ghAPI + "/repos/" + repo.full, "escaped": url.PathEscape(d[0].(string)), "name": d[0], "color": d[1], "description": d[2]})
	}
	total, out := int(repo.vals["issue_count"].(float64)), []map[string]any{}
	for n := 1; n <= total; n++ {
		row := g.rows[(int(repo.id)+n)%len(g.rows)]
		created, closed := max(row.CreatedAt, repo.vals["created_at"].(string)), max(row.ClosedAt, repo.vals["created_at"].(string))
		is := g.newIssue(repo, n, row.Title, strings.ReplaceAll(row.Body, "${repo}", repo.full), g.people[row.User], created)
		is["comments"], is["labels"] = row.Comments, []any{}
		for _, name := range row.Labels {
			is["labels"] = append(is["labels"].([]any), labels[name])
		}
		if a, ok := g.people[row.Assignee]; ok {
			is["assignee"] = fill(g.tmpl["user"], a)
			is["assignees"] = []any{is["assignee"]}
		}
		if n <= total-repo.open {
			is["state"], is["closed_at"], is["updated_at"], is["state_reason"] = "closed", closed, closed, "completed"
		}
		if row.PullRequest {
			is["draft"], is["merged_at"] = false, is["closed_at"]
			if is["state"] == "closed" {
				is["state_reason"] = nil
			}
			is["pull_request"] = fill(g.tmpl["pull_request"], is)
		}
		out = append(out, is)
	}
	g.issues[repo.id] = out
	return out
}

func (g *githubAPI) newIssue(repo *ghRepo, n int, title string, body any, user map[string]any, created string) map[string]any {
	g.nextID++
	id := g.nextID
	ru := ghAPI + "/repos/" + repo.full
	assoc := "CONTRIBUTOR"
	if user["login"] == repo.vals["owner"].(ordered).get1("login") || user["login"] == GitHubViewer {
		assoc = "OWNER"
	}
	return map[string]any{
		"u": ru + "/issues/" + strconv.Itoa(n), "repo_url": ru, "repo_html": ghWeb + "/" + repo.full,
		"id": id, "node_id": nodeID("I_kwDO", id), "number": n, "title": title, "user": fill(g.tmpl["user"], user),
		"labels": []any{}, "state": "open", "assignee": nil, "assignees": []any{}, "comments": 0,
		"created_at": created, "updated_at": created, "closed_at": nil, "author_association": assoc,
		"body": body, "state_reason": nil,
	}
}

func (g *githubAPI) serve(c *call) {
	if v := c.r.Header.Get("X-GitHub-Api-Version"); v != "" && v != "2022-11-28" {
		apiError(c.w, GitHub, http.StatusBadRequest, fmt.Sprintf("Unsupported 'X-GitHub-Api-Version' header. The requested version %q is not supported by this fake; use 2022-11-28.", v), "doc", ghDocs+"/about-the-rest-api/api-versions")
		return
	}
	c.route(g.mux)
}

func (g *githubAPI) getUser(c *call) {
	me := maps.Clone(g.viewer)
	me["user_view_type"] = "private"
	writeJSON(c.w, http.StatusOK, append(fill(g.tmpl["user"], me).(ordered), fill(g.tmpl["viewer"], nil).(ordered)...))
}

// writePage answers one page (per_page: default 30, capped at 100; page:
// default 1) of items filled into template tmpl, with GitHub's Link header.
func (g *githubAPI) writePage(c *call, tmpl string, items []map[string]any) {
	q := c.r.URL.Query()
	perPage, ok := intParam(q, "per_page", 30)
	if !ok || perPage < 1 {
		perPage = 30
	}
	perPage = min(perPage, 100)
	page, ok := intParam(q, "page", 1)
	if !ok || page < 1 {
		page = 1
	}
	last := max(1, (len(items)+perPage-1)/perPage)
	link := func(p int, rel string) string {
		qq := maps.Clone(q)
		qq.Set("per_page", strconv.Itoa(perPage))
		qq.Set("page", strconv.Itoa(p))
		return fmt.Sprintf("<%s%s?%s>; rel=%q", ghAPI, c.r.URL.EscapedPath(), qq.Encode(), rel)
	}
	var parts []string
	if page > 1 {
		parts = append(parts, link(page-1, "prev"))
	}
	if page < last {
		parts = append(parts, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		parts = append(parts, link(1, "first"))
	}
	if len(parts) > 0 {
		c.w.Header().Set("Link", strings.Join(parts, ", "))
	}
	out := []any{}
	for _, v := range pageSlice(items, perPage, page) {
		out = append(out, fill(g.tmpl[tmpl], v))
	}
	writeJSON(c.w, http.StatusOK, out)
}

func pageSlice[T any](xs []T, perPage, page int) []T {
	start := (page - 1) * perPage
	if start >= len(xs) {
		return []T{}
	}
	return xs[start:min(len(xs), start+perPage)]
}

func (g *githubAPI) listRepos(c *call) {
	q := c.r.URL.Query()
	vis := q.Get("visibility") // "", "all", "public" or "private" (the manifest's enum)
	g.mu.Lock()
	defer g.mu.Unlock()
	repos := make([]map[string]any, 0, len(g.repos))
	for _, r := range g.repos {
		if p := r.vals["private"] == true; vis == "public" && p || vis == "private" && !p {
			continue
		}
		repos = append(repos, r.vals)
	}
	sortKey := q.Get("sort")
	desc := sortKey != "" && sortKey != "full_name" // GitHub's default direction
	key := func(r map[string]any) string {
		switch sortKey {
		case "created", "updated", "pushed":
			return r[sortKey+"_at"].(string)
		}
		return strings.ToLower(r["full"].(string))
	}
	slices.SortStableFunc(repos, func(a, b map[string]any) int {
		if desc {
			a, b = b, a
		}
		return strings.Compare(key(a), key(b))
	})
	g.writePage(c, "repo", repos)
}

// findRepo looks a repository up case-insensitively, as GitHub does.
func (g *githubAPI) findRepo(c *call) *ghRepo {
	return g.byName[strings.ToLower(c.r.PathValue("owner")+"/"+c.r.PathValue("repo"))]
}

func (g *githubAPI) getRepo(c *call) {
	g.mu.Lock()
	defer g.mu.Unlock()
	repo := g.findRepo(c)
	if repo == nil {
		apiError(c.w, GitHub, http.StatusNotFound, "Not Found", "doc", ghDocs+"/repos/repos#get-a-repository")
		return
	}
	writeJSON(c.w, http.StatusOK, append(fill(g.tmpl["repo"], repo.vals).(ordered), fill(g.tmpl["repo_full"], repo.vals).(ordered)...))
}

func (g *githubAPI) getPages(c *call) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if repo := g.findRepo(c); repo != nil && repo.pages != nil {
		writeJSON(c.w, http.StatusOK, repo.pages)
		return
	}
	apiError(c.w, GitHub, http.StatusNotFound, "Not Found", "doc", ghDocs+"/pages/pages#get-a-apiname-pages-site")
}

func (g *githubAPI) listIssues(c *call) {
	state := cmp.Or(c.r.URL.Query().Get("state"), "open") // or "closed", "all" (the manifest's enum)
	g.mu.Lock()
	defer g.mu.Unlock()
	repo := g.findRepo(c)
	if repo == nil {
		apiError(c.w, GitHub, http.StatusNotFound, "Not Found", "doc", ghDocs+"/issues/issues#list-repository-issues")
		return
	}
	var list []map[string]any
	if repo.vals["has_issues"] == true {
		all := g.repoIssues(repo)
		// Newest first (sort=created, direction=desc is GitHub's default).
		for i := len(all) - 1; i >= 0; i-- {
			if state == "all" || all[i]["state"] == state {
				list = append(list, all[i])
			}
		}
	}
	g.writePage(c, "issue", list)
}

func (g *githubAPI) createIssue(c *call) {
	const doc = ghDocs + "/issues/issues#create-an-issue"
	var in struct {
		Title string `json:"title"`
		Body  any    `json:"body"` // a string or null
	}
	if err := json.Unmarshal(c.body, &in); err != nil {
		apiError(c.w, GitHub, http.StatusBadRequest, "Problems parsing JSON", "doc", doc)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	repo := g.findRepo(c)
	switch {
	case repo == nil:
		apiError(c.w, GitHub, http.StatusNotFound, "Not Found", "doc", doc)
	case repo.vals["archived"] == true:
		apiError(c.w, GitHub, http.StatusForbidden, "Repository was archived so is read-only.", "doc", doc)
	case repo.vals["has_issues"] != true:
		apiError(c.w, GitHub, http.StatusGone, "Issues are disabled for this repo", "doc", doc)
	case strings.TrimSpace(in.Title) == "":
		missing := []ordered{{{"resource", "Issue"}, {"code", "missing_field"}, {"field", "title"}}}
		writeJSON(c.w, http.StatusUnprocessableEntity, ordered{{"message", "Validation Failed"}, {"errors", missing}, {"documentation_url", doc}, {"status", "422"}})
	default:
		all := g.repoIssues(repo)
		is := g.newIssue(repo, len(all)+1, in.Title, in.Body, g.viewer, iso(time.Now()))
		g.issues[repo.id] = append(all, is)
		repo.open++
		repo.vals["open_issues_count"], repo.vals["open_issues"] = repo.open, repo.open
		c.w.Header().Set("Location", is["u"].(string))
		writeJSON(c.w, http.StatusCreated, fill(g.tmpl["issue"], is))
	}
}
