package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// testResourceLimit: the member limits the GitHub connection to
// pinned-tester/notes in the catalog (choosing from list_repos, every
// page); the GitHub app then lists only that repository, its consent
// shows the limit, and an issue opens there. A write to another
// repository is refused by the sidecar (resource_denied, naming the arg)
// before any request reaches the fake.
func testResourceLimit(t *testing.T, e *browserEnv) {
	e.openCatalog()
	e.do(chromedp.Click(chromedp.ID("limit-github-repository-choose")))
	e.waitFor("every repository to choose from", `document.querySelectorAll('#limit-github-repository-list input[type=checkbox]').length === `+fmt.Sprint(fakeapi.GitHubRepoCount))
	if n := eval[int](e, `document.querySelectorAll('#limit-github-repository-list input:checked').length`); n != 0 {
		t.Errorf("%d repositories checked before any limit", n)
	}
	e.do(chromedp.SendKeys(chromedp.ID("limit-github-repository-filter"), "notes"))
	e.waitFor("the filtered choices", `[...document.querySelectorAll('#limit-github-repository-list li')].filter(li => !li.hidden).length === 1`)
	e.audit("the catalog, choosing repositories")
	e.do(chromedp.Click(chromedp.CSS(`#limit-github-repository-list input[value="pinned-tester/notes"]`)),
		chromedp.Click(chromedp.ID("limit-github-repository-save")))
	e.waitFor("the limit", `(document.querySelector('#connected-github .limit-now') || {}).textContent === ' · limited to Repositories: pinned-tester/notes'`)

	e.st.Fake.Reset()
	e.open("/apps/github")
	e.waitFor("the limited list", `document.getElementById('app').dataset.loaded === 'true' && document.getElementById('repo-count').textContent === '(1)'`)
	if got := eval[[]string](e, `[...document.querySelectorAll('#repos button.repo')].map(b => b.dataset.repo)`); len(got) != 1 || got[0] != "pinned-tester/notes" {
		t.Errorf("the app lists %q under the limit", got)
	}
	if got := e.text("#account"); !strings.Contains(got, "limited to Repositories: pinned-tester/notes") {
		t.Errorf("the account line = %q", got)
	}
	e.do(chromedp.Click(chromedp.CSS(`button[data-repo="pinned-tester/notes"]`)))
	e.waitFor("the issues", `document.querySelectorAll('#issues li.issue').length > 0`)
	title := "Opened under a limited grant"
	e.do(chromedp.SendKeys(chromedp.ID("issue-title"), title))
	e.waitFor("the consent with the limit", `(document.querySelector('#confirm .confirm-limit') || {}).textContent === 'Limited to chosen Repositories: pinned-tester/notes'`)
	e.audit("the GitHub app, a limited consent")
	e.st.Fake.Reset()
	e.do(chromedp.Click(chromedp.ID("issue-submit")))
	e.waitFor("the new issue", `document.getElementById('issue-status').textContent.startsWith('Opened #')`)
	var posts []string
	for _, r := range e.st.Fake.Requests() {
		if r.Method == http.MethodPost {
			posts = append(posts, r.Path)
		}
	}
	if len(posts) != 1 || posts[0] != "/repos/pinned-tester/notes/issues" {
		t.Fatalf("POSTs = %q, want one to pinned-tester/notes", posts)
	}

	// Another repository, through the page's own client: the grant carries
	// the limit, and the sidecar refuses it before the sandbox.
	e.st.Fake.Reset()
	got := eval[string](e, `pinned.runOp('github', 'create_issue', {owner: 'pinned-tester', repo: 'hello-world', title: 'outside the limit'})
		.then(() => 'ran', (err) => err.code + ' ' + err.arg + ' ' + err.status)`)
	if got != "resource_denied repo 403" {
		t.Errorf("a write to another repository: %s, want resource_denied repo 403", got)
	}
	for _, spelled := range []string{"NOTES", "notes/", "notes/../hello-world", "not%65s"} {
		got := eval[string](e, `pinned.runOp('github', 'list_issues', {owner: 'pinned-tester', repo: `+jsString(spelled)+`})
			.then(() => 'ran', (err) => err.code)`)
		if got != "resource_denied" {
			t.Errorf("list_issues on %q: %s, want resource_denied", spelled, got)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if reqs := e.st.Fake.Requests(); len(reqs) != 0 {
		t.Errorf("the fake received %d requests outside the limit: first %s %s", len(reqs), reqs[0].Method, reqs[0].Path)
	}
}

// testCapNarrowsAndActivity: the catalog's Activity lists what bots ran
// under the member's GitHub grants (time, bot, op, result), refusals
// included. Changing the cap to read-only without reconnecting narrows
// the very next grant: a write is refused in the page, nothing is sent,
// and the next grant the page seals (opened here with the bot's key) is
// a read grant that still carries the resource limit.
func testCapNarrowsAndActivity(t *testing.T, e *browserEnv) {
	e.openCatalog()
	e.do(chromedp.Click(chromedp.CSS(`#activity-box-github summary`)))
	e.waitFor("the activity", `document.querySelectorAll('#activity-github tr.activity-row').length > 0`)
	rows := eval[[]string](e, `[...document.querySelectorAll('#activity-github tr.activity-row')].map(tr => [...tr.cells].slice(1).map(c => c.textContent).join(' '))`)
	joined := strings.Join(rows, "\n")
	for _, want := range []string{"demo-bot create_issue done", "demo-bot create_issue resource_denied", "demo-bot list_issues resource_denied", "demo-bot list_repos done"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the activity lacks %q:\n%s", want, joined)
		}
	}
	if first := rows[0]; !strings.HasPrefix(first, "demo-bot list_issues resource_denied") {
		t.Errorf("the newest row is %q, want the last refusal", first)
	}
	if when := eval[string](e, `document.querySelector('#activity-github tr.activity-row time').getAttribute('datetime')`); !strings.HasPrefix(when, time.Now().UTC().Format("2006-01-02")) {
		t.Errorf("the newest row's time = %q", when)
	}
	e.audit("the catalog, activity shown")

	// read & write → read-only, in place.
	e.do(chromedp.Click(chromedp.ID("cap-github-read")), chromedp.Click(chromedp.ID("savecap-github")))
	e.waitFor("the narrowed cap", `(document.querySelector('#connected-github .cap-now') || {}).textContent === 'read-only'`)
	e.st.Fake.Reset()
	got := eval[string](e, `pinned.runOp('github', 'create_issue', {owner: 'pinned-tester', repo: 'notes', title: 'after narrowing'}).then(() => 'ran', (err) => err.code)`)
	if got != "cap_refused" {
		t.Errorf("a write after narrowing: %s, want cap_refused in the page", got)
	}
	e.mu.Lock()
	before := len(e.requests)
	e.mu.Unlock()
	if got := eval[string](e, `pinned.runOp('github', 'list_issues', {owner: 'pinned-tester', repo: 'notes'}).then(() => 'ran', (err) => err.code)`); got != "ran" {
		t.Fatalf("a read after narrowing: %s", got)
	}
	for _, r := range e.st.Fake.Requests() {
		if r.Method != http.MethodGet {
			t.Errorf("after narrowing the fake received %s %s", r.Method, r.Path)
		}
	}
	e.mu.Lock()
	sent := slices.Clone(e.requests[before:])
	e.mu.Unlock()
	var sealed string
	for _, r := range sent {
		if url, body, _ := strings.Cut(r, "\n"); strings.HasSuffix(url, "/ops") {
			var req struct{ Grant string }
			if err := json.Unmarshal([]byte(body), &req); err == nil {
				sealed = req.Grant
			}
		}
	}
	g, err := grant.Open(sealed, e.st.BotKey)
	if err != nil {
		t.Fatalf("the next grant (%d requests seen) does not open: %v", len(sent), err)
	}
	if g.Access != grant.AccessRead || g.Op != "list_issues" || g.Resources != `{"repository":["pinned-tester/notes"]}` {
		t.Errorf("the next grant: access %q, op %q, resources %s; want read, list_issues, the limit", g.Access, g.Op, g.Resources)
	}
}
