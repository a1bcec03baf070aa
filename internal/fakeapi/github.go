package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// GitHub fake: REST API v3 at api.github.com, version 2022-11-28.
//
// Routes: GET /user, GET /user/repos, GET /repos/{owner}/{repo},
// GET /repos/{owner}/{repo}/issues, POST /repos/{owner}/{repo}/issues,
// GET /repos/{owner}/{repo}/pages (research.go).

// GitHubViewer is the login of the fake GitHub user the tokens belong to.
const GitHubViewer = "pinned-tester"

// GitHubRepoCount is how many repositories /user/repos lists in total.
const GitHubRepoCount = 250

const (
	ghAPI  = "https://api.github.com"
	ghWeb  = "https://github.com"
	ghDocs = "https://docs.github.com/rest"
)

type ghUser struct {
	Login             string `json:"login"`
	ID                int64  `json:"id"`
	NodeID            string `json:"node_id"`
	AvatarURL         string `json:"avatar_url"`
	GravatarID        string `json:"gravatar_id"`
	URL               string `json:"url"`
	HTMLURL           string `json:"html_url"`
	FollowersURL      string `json:"followers_url"`
	FollowingURL      string `json:"following_url"`
	GistsURL          string `json:"gists_url"`
	StarredURL        string `json:"starred_url"`
	SubscriptionsURL  string `json:"subscriptions_url"`
	OrganizationsURL  string `json:"organizations_url"`
	ReposURL          string `json:"repos_url"`
	EventsURL         string `json:"events_url"`
	ReceivedEventsURL string `json:"received_events_url"`
	Type              string `json:"type"`
	UserViewType      string `json:"user_view_type"`
	SiteAdmin         bool   `json:"site_admin"`
}

func newGHUser(login string, id int64, typ string) ghUser {
	u := ghAPI + "/users/" + login
	return ghUser{
		Login:             login,
		ID:                id,
		NodeID:            nodeID("U_kgDO", id),
		AvatarURL:         fmt.Sprintf("https://avatars.githubusercontent.com/u/%d?v=4", id),
		URL:               u,
		HTMLURL:           ghWeb + "/" + login,
		FollowersURL:      u + "/followers",
		FollowingURL:      u + "/following{/other_user}",
		GistsURL:          u + "/gists{/gist_id}",
		StarredURL:        u + "/starred{/owner}{/repo}",
		SubscriptionsURL:  u + "/subscriptions",
		OrganizationsURL:  u + "/orgs",
		ReposURL:          u + "/repos",
		EventsURL:         u + "/events{/privacy}",
		ReceivedEventsURL: u + "/received_events",
		Type:              typ,
		UserViewType:      "public",
	}
}

// nodeID makes a GraphQL-style global id.
func nodeID(prefix string, id int64) string {
	const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var b strings.Builder
	b.WriteString(prefix)
	x := uint64(id)*2654435761 + 0x9e3779b97f4a7c15
	for range 10 {
		b.WriteByte(b64[x%64])
		x /= 64
		if x == 0 {
			x = uint64(id) + 7
		}
	}
	return b.String()
}

type ghLicense struct {
	Key    string  `json:"key"`
	Name   string  `json:"name"`
	SPDXID string  `json:"spdx_id"`
	URL    *string `json:"url"`
	NodeID string  `json:"node_id"`
}

type ghStatus struct {
	Status string `json:"status"`
}

type ghRepo struct {
	ID                       int64      `json:"id"`
	NodeID                   string     `json:"node_id"`
	Name                     string     `json:"name"`
	FullName                 string     `json:"full_name"`
	Private                  bool       `json:"private"`
	Owner                    ghUser     `json:"owner"`
	HTMLURL                  string     `json:"html_url"`
	Description              *string    `json:"description"`
	Fork                     bool       `json:"fork"`
	URL                      string     `json:"url"`
	ForksURL                 string     `json:"forks_url"`
	KeysURL                  string     `json:"keys_url"`
	CollaboratorsURL         string     `json:"collaborators_url"`
	TeamsURL                 string     `json:"teams_url"`
	HooksURL                 string     `json:"hooks_url"`
	IssueEventsURL           string     `json:"issue_events_url"`
	EventsURL                string     `json:"events_url"`
	AssigneesURL             string     `json:"assignees_url"`
	BranchesURL              string     `json:"branches_url"`
	TagsURL                  string     `json:"tags_url"`
	BlobsURL                 string     `json:"blobs_url"`
	GitTagsURL               string     `json:"git_tags_url"`
	GitRefsURL               string     `json:"git_refs_url"`
	TreesURL                 string     `json:"trees_url"`
	StatusesURL              string     `json:"statuses_url"`
	LanguagesURL             string     `json:"languages_url"`
	StargazersURL            string     `json:"stargazers_url"`
	ContributorsURL          string     `json:"contributors_url"`
	SubscribersURL           string     `json:"subscribers_url"`
	SubscriptionURL          string     `json:"subscription_url"`
	CommitsURL               string     `json:"commits_url"`
	GitCommitsURL            string     `json:"git_commits_url"`
	CommentsURL              string     `json:"comments_url"`
	IssueCommentURL          string     `json:"issue_comment_url"`
	ContentsURL              string     `json:"contents_url"`
	CompareURL               string     `json:"compare_url"`
	MergesURL                string     `json:"merges_url"`
	ArchiveURL               string     `json:"archive_url"`
	DownloadsURL             string     `json:"downloads_url"`
	IssuesURL                string     `json:"issues_url"`
	PullsURL                 string     `json:"pulls_url"`
	MilestonesURL            string     `json:"milestones_url"`
	NotificationsURL         string     `json:"notifications_url"`
	LabelsURL                string     `json:"labels_url"`
	ReleasesURL              string     `json:"releases_url"`
	DeploymentsURL           string     `json:"deployments_url"`
	CreatedAt                string     `json:"created_at"`
	UpdatedAt                string     `json:"updated_at"`
	PushedAt                 string     `json:"pushed_at"`
	GitURL                   string     `json:"git_url"`
	SSHURL                   string     `json:"ssh_url"`
	CloneURL                 string     `json:"clone_url"`
	SVNURL                   string     `json:"svn_url"`
	Homepage                 *string    `json:"homepage"`
	Size                     int        `json:"size"`
	StargazersCount          int        `json:"stargazers_count"`
	WatchersCount            int        `json:"watchers_count"`
	Language                 *string    `json:"language"`
	HasIssues                bool       `json:"has_issues"`
	HasProjects              bool       `json:"has_projects"`
	HasDownloads             bool       `json:"has_downloads"`
	HasWiki                  bool       `json:"has_wiki"`
	HasPages                 bool       `json:"has_pages"`
	HasDiscussions           bool       `json:"has_discussions"`
	ForksCount               int        `json:"forks_count"`
	MirrorURL                *string    `json:"mirror_url"`
	Archived                 bool       `json:"archived"`
	Disabled                 bool       `json:"disabled"`
	OpenIssuesCount          int        `json:"open_issues_count"`
	License                  *ghLicense `json:"license"`
	AllowForking             bool       `json:"allow_forking"`
	IsTemplate               bool       `json:"is_template"`
	WebCommitSignoffRequired bool       `json:"web_commit_signoff_required"`
	Topics                   []string   `json:"topics"`
	Visibility               string     `json:"visibility"`
	Forks                    int        `json:"forks"`
	OpenIssues               int        `json:"open_issues"`
	Watchers                 int        `json:"watchers"`
	DefaultBranch            string     `json:"default_branch"`
	Permissions              struct {
		Admin    bool `json:"admin"`
		Maintain bool `json:"maintain"`
		Push     bool `json:"push"`
		Triage   bool `json:"triage"`
		Pull     bool `json:"pull"`
	} `json:"permissions"`
	SecurityAndAnalysis *struct {
		SecretScanning                    ghStatus `json:"secret_scanning"`
		SecretScanningPushProtection      ghStatus `json:"secret_scanning_push_protection"`
		DependabotSecurityUpdates         ghStatus `json:"dependabot_security_updates"`
		SecretScanningNonProviderPatterns ghStatus `json:"secret_scanning_non_provider_patterns"`
		SecretScanningValidityChecks      ghStatus `json:"secret_scanning_validity_checks"`
	} `json:"security_and_analysis,omitempty"`
}

// ghRepoFull is the single-repository representation: the list fields
// plus merge settings and counts.
type ghRepoFull struct {
	*ghRepo
	TempCloneToken            string         `json:"temp_clone_token"`
	AllowSquashMerge          bool           `json:"allow_squash_merge"`
	AllowMergeCommit          bool           `json:"allow_merge_commit"`
	AllowRebaseMerge          bool           `json:"allow_rebase_merge"`
	AllowAutoMerge            bool           `json:"allow_auto_merge"`
	DeleteBranchOnMerge       bool           `json:"delete_branch_on_merge"`
	AllowUpdateBranch         bool           `json:"allow_update_branch"`
	UseSquashPRTitleAsDefault bool           `json:"use_squash_pr_title_as_default"`
	SquashMergeCommitMessage  string         `json:"squash_merge_commit_message"`
	SquashMergeCommitTitle    string         `json:"squash_merge_commit_title"`
	MergeCommitMessage        string         `json:"merge_commit_message"`
	MergeCommitTitle          string         `json:"merge_commit_title"`
	CustomProperties          map[string]any `json:"custom_properties"`
	Organization              *ghUser        `json:"organization,omitempty"`
	NetworkCount              int            `json:"network_count"`
	SubscribersCount          int            `json:"subscribers_count"`
}

type ghLabel struct {
	ID          int64  `json:"id"`
	NodeID      string `json:"node_id"`
	URL         string `json:"url"`
	Name        string `json:"name"`
	Color       string `json:"color"`
	Default     bool   `json:"default"`
	Description string `json:"description"`
}

type ghReactions struct {
	URL        string `json:"url"`
	TotalCount int    `json:"total_count"`
	PlusOne    int    `json:"+1"`
	MinusOne   int    `json:"-1"`
	Laugh      int    `json:"laugh"`
	Hooray     int    `json:"hooray"`
	Confused   int    `json:"confused"`
	Heart      int    `json:"heart"`
	Rocket     int    `json:"rocket"`
	Eyes       int    `json:"eyes"`
}

type ghPullRef struct {
	URL      string  `json:"url"`
	HTMLURL  string  `json:"html_url"`
	DiffURL  string  `json:"diff_url"`
	PatchURL string  `json:"patch_url"`
	MergedAt *string `json:"merged_at"`
}

type ghIssue struct {
	URL               string      `json:"url"`
	RepositoryURL     string      `json:"repository_url"`
	LabelsURL         string      `json:"labels_url"`
	CommentsURL       string      `json:"comments_url"`
	EventsURL         string      `json:"events_url"`
	HTMLURL           string      `json:"html_url"`
	ID                int64       `json:"id"`
	NodeID            string      `json:"node_id"`
	Number            int         `json:"number"`
	Title             string      `json:"title"`
	User              ghUser      `json:"user"`
	Labels            []ghLabel   `json:"labels"`
	State             string      `json:"state"`
	Locked            bool        `json:"locked"`
	Assignee          *ghUser     `json:"assignee"`
	Assignees         []ghUser    `json:"assignees"`
	Milestone         any         `json:"milestone"`
	Comments          int         `json:"comments"`
	CreatedAt         string      `json:"created_at"`
	UpdatedAt         string      `json:"updated_at"`
	ClosedAt          *string     `json:"closed_at"`
	AuthorAssociation string      `json:"author_association"`
	Type              any         `json:"type"`
	ActiveLockReason  *string     `json:"active_lock_reason"`
	Draft             *bool       `json:"draft,omitempty"`
	PullRequest       *ghPullRef  `json:"pull_request,omitempty"`
	Body              *string     `json:"body"`
	ClosedBy          *ghUser     `json:"closed_by,omitempty"`
	Reactions         ghReactions `json:"reactions"`
	TimelineURL       string      `json:"timeline_url"`
	PerformedViaApp   any         `json:"performed_via_github_app"`
	StateReason       *string     `json:"state_reason"`
}

type githubAPI struct {
	mu      sync.Mutex
	viewer  ghUser
	users   []ghUser
	orgs    map[string]ghUser
	repos   []*ghRepo
	byName  map[string]*ghRepo // lower-case full name
	issues  map[int64][]*ghIssue
	pages   map[string]*ghPages // lower-case full name -> Pages site (research.go)
	nextID  int64
	created time.Time
}

func newGitHub() *githubAPI {
	r := newRand(1)
	g := &githubAPI{
		viewer:  newGHUser(GitHubViewer, 90210001, "User"),
		orgs:    map[string]ghUser{},
		byName:  map[string]*ghRepo{},
		issues:  map[int64][]*ghIssue{},
		nextID:  3100000000,
		created: time.Date(2017, 8, 21, 13, 5, 44, 0, time.UTC),
	}
	g.users = []ghUser{g.viewer,
		newGHUser("alice-fake", 90210002, "User"),
		newGHUser("bob-fake", 90210003, "User"),
		newGHUser("carol-fake", 90210004, "User"),
		newGHUser("dependabot[bot]", 49699333, "Bot"),
	}
	g.orgs["fake-org-labs"] = newGHUser("fake-org-labs", 90220001, "Organization")
	g.orgs["acme-fake"] = newGHUser("acme-fake", 90220002, "Organization")

	// Unique names: every adjective-noun pair, shuffled, plus a few
	// names with dots and underscores as real accounts have.
	var names []string
	names = append(names, GitHubViewer+".github.io", "dotfiles", "hello-world", "api_client.py", "notes")
	for _, a := range adjectives {
		for _, n := range nouns {
			names = append(names, a+"-"+n)
		}
	}
	r.Shuffle(len(names)-5, func(i, j int) { names[i+5], names[j+5] = names[j+5], names[i+5] })
	langs := []string{"Go", "Go", "TypeScript", "Python", "Rust", "Shell", "JavaScript", "HCL", ""}
	licenses := []*ghLicense{
		nil,
		{Key: "mit", Name: "MIT License", SPDXID: "MIT", URL: strptr(ghAPI + "/licenses/mit"), NodeID: "MDc6TGljZW5zZTEz"},
		{Key: "apache-2.0", Name: "Apache License 2.0", SPDXID: "Apache-2.0", URL: strptr(ghAPI + "/licenses/apache-2.0"), NodeID: "MDc6TGljZW5zZTI="},
		{Key: "bsd-3-clause", Name: "BSD 3-Clause \"New\" or \"Revised\" License", SPDXID: "BSD-3-Clause", URL: strptr(ghAPI + "/licenses/bsd-3-clause"), NodeID: "MDc6TGljZW5zZTU="},
	}
	for i := range GitHubRepoCount {
		owner := g.viewer
		switch {
		case i%5 == 3:
			owner = g.orgs["fake-org-labs"]
		case i%7 == 6:
			owner = g.orgs["acme-fake"]
		}
		name := names[i]
		if i < 5 {
			owner = g.viewer
		}
		id := int64(612000000 + i*7919)
		created := randTime(r, g.created)
		updated := randTime(r, created)
		pushed := randTime(r, created)
		var desc *string
		if r.IntN(6) != 0 {
			desc = strptr(sentence(r))
		}
		var lang *string
		if l := choose(r, langs); l != "" {
			lang = &l
		}
		stars := r.IntN(400)
		if r.IntN(10) == 0 {
			stars += r.IntN(12000)
		}
		forks := stars / (3 + r.IntN(8))
		open := r.IntN(25)
		private := r.IntN(3) == 0
		visibility := "public"
		if private {
			visibility = "private"
		}
		var homepage *string
		if r.IntN(4) == 0 {
			homepage = strptr("https://" + strings.ReplaceAll(name, "_", "-") + ".example.org")
		}
		var topics []string
		for _, t := range topicsList {
			if r.IntN(8) == 0 {
				topics = append(topics, t)
			}
		}
		if topics == nil {
			topics = []string{}
		}
		repo := newGHRepo(owner, name, id)
		repo.Private = private
		repo.Description = desc
		repo.Fork = r.IntN(9) == 0
		repo.CreatedAt, repo.UpdatedAt, repo.PushedAt = iso(created), iso(updated), iso(pushed)
		repo.Homepage = homepage
		repo.Size = r.IntN(90000)
		repo.StargazersCount, repo.WatchersCount, repo.Watchers = stars, stars, stars
		repo.Language = lang
		repo.HasIssues = i%17 != 16
		repo.HasProjects = true
		repo.HasDownloads = true
		repo.HasWiki = r.IntN(2) == 0
		repo.HasPages = i == 0
		repo.HasDiscussions = r.IntN(6) == 0
		repo.ForksCount, repo.Forks = forks, forks
		repo.Archived = i%23 == 22
		repo.OpenIssuesCount, repo.OpenIssues = open, open
		repo.License = choose(r, licenses)
		repo.AllowForking = true
		repo.Topics = topics
		repo.Visibility = visibility
		repo.DefaultBranch = choose(r, []string{"main", "main", "main", "master", "trunk"})
		admin := owner.Login == GitHubViewer || r.IntN(3) == 0
		repo.Permissions.Admin = admin
		repo.Permissions.Maintain = admin
		repo.Permissions.Push = admin || r.IntN(2) == 0
		repo.Permissions.Triage = repo.Permissions.Push
		repo.Permissions.Pull = true
		if !private {
			repo.SecurityAndAnalysis = &struct {
				SecretScanning                    ghStatus `json:"secret_scanning"`
				SecretScanningPushProtection      ghStatus `json:"secret_scanning_push_protection"`
				DependabotSecurityUpdates         ghStatus `json:"dependabot_security_updates"`
				SecretScanningNonProviderPatterns ghStatus `json:"secret_scanning_non_provider_patterns"`
				SecretScanningValidityChecks      ghStatus `json:"secret_scanning_validity_checks"`
			}{ghStatus{"enabled"}, ghStatus{"enabled"}, ghStatus{choose(r, []string{"enabled", "disabled"})}, ghStatus{"disabled"}, ghStatus{"disabled"}}
		}
		g.repos = append(g.repos, repo)
		g.byName[strings.ToLower(repo.FullName)] = repo
	}
	return g
}

func strptr(s string) *string { return &s }

func newGHRepo(owner ghUser, name string, id int64) *ghRepo {
	full := owner.Login + "/" + name
	u := ghAPI + "/repos/" + full
	return &ghRepo{
		ID:               id,
		NodeID:           nodeID("R_kgDO", id),
		Name:             name,
		FullName:         full,
		Owner:            owner,
		HTMLURL:          ghWeb + "/" + full,
		URL:              u,
		ForksURL:         u + "/forks",
		KeysURL:          u + "/keys{/key_id}",
		CollaboratorsURL: u + "/collaborators{/collaborator}",
		TeamsURL:         u + "/teams",
		HooksURL:         u + "/hooks",
		IssueEventsURL:   u + "/issues/events{/number}",
		EventsURL:        u + "/events",
		AssigneesURL:     u + "/assignees{/user}",
		BranchesURL:      u + "/branches{/branch}",
		TagsURL:          u + "/tags",
		BlobsURL:         u + "/git/blobs{/sha}",
		GitTagsURL:       u + "/git/tags{/sha}",
		GitRefsURL:       u + "/git/refs{/sha}",
		TreesURL:         u + "/git/trees{/sha}",
		StatusesURL:      u + "/statuses/{sha}",
		LanguagesURL:     u + "/languages",
		StargazersURL:    u + "/stargazers",
		ContributorsURL:  u + "/contributors",
		SubscribersURL:   u + "/subscribers",
		SubscriptionURL:  u + "/subscription",
		CommitsURL:       u + "/commits{/sha}",
		GitCommitsURL:    u + "/git/commits{/sha}",
		CommentsURL:      u + "/comments{/number}",
		IssueCommentURL:  u + "/issues/comments{/number}",
		ContentsURL:      u + "/contents/{+path}",
		CompareURL:       u + "/compare/{base}...{head}",
		MergesURL:        u + "/merges",
		ArchiveURL:       u + "/{archive_format}{/ref}",
		DownloadsURL:     u + "/downloads",
		IssuesURL:        u + "/issues{/number}",
		PullsURL:         u + "/pulls{/number}",
		MilestonesURL:    u + "/milestones{/number}",
		NotificationsURL: u + "/notifications{?since,all,participating}",
		LabelsURL:        u + "/labels{/name}",
		ReleasesURL:      u + "/releases{/id}",
		DeploymentsURL:   u + "/deployments",
		GitURL:           "git://github.com/" + full + ".git",
		SSHURL:           "git@github.com:" + full + ".git",
		CloneURL:         ghWeb + "/" + full + ".git",
		SVNURL:           ghWeb + "/" + full,
		Topics:           []string{},
		Visibility:       "public",
		DefaultBranch:    "main",
	}
}

// ghLabels is the label set every repository has (GitHub's defaults).
var ghLabelDefs = []struct{ name, color, desc string }{
	{"bug", "d73a4a", "Something isn't working"},
	{"documentation", "0075ca", "Improvements or additions to documentation"},
	{"enhancement", "a2eeef", "New feature or request"},
	{"good first issue", "7057ff", "Good for newcomers"},
	{"help wanted", "008672", "Extra attention is needed"},
	{"question", "d876e3", "Further information is requested"},
}

func (g *githubAPI) labels(repo *ghRepo) []ghLabel {
	out := make([]ghLabel, len(ghLabelDefs))
	for i, d := range ghLabelDefs {
		id := repo.ID*10 + int64(i)
		out[i] = ghLabel{ID: id, NodeID: nodeID("LA_kwDO", id), URL: repo.URL + "/labels/" + url.PathEscape(d.name),
			Name: d.name, Color: d.color, Default: true, Description: d.desc}
	}
	return out
}

// repoIssues returns the issues of a repository, generating them on first
// use (deterministically from the repository id). Caller holds g.mu.
func (g *githubAPI) repoIssues(repo *ghRepo) []*ghIssue {
	if is, ok := g.issues[repo.ID]; ok {
		return is
	}
	r := newRand(uint64(repo.ID))
	labels := g.labels(repo)
	total := repo.OpenIssuesCount + r.IntN(30)
	created, _ := time.Parse(time.RFC3339, repo.CreatedAt)
	var out []*ghIssue
	open := 0
	for n := 1; n <= total; n++ {
		c := randTime(r, created)
		title := choose(r, verbs) + " " + choose(r, objects)
		body := fmt.Sprintf("Steps to reproduce:\n\n1. Open %s\n2. Try the %s\n\nExpected it to work; it did not.", repo.FullName, choose(r, objects))
		is := g.newIssue(repo, n, title, &body, choose(r, g.users), c)
		is.Comments = r.IntN(12)
		for _, l := range labels {
			if r.IntN(5) == 0 {
				is.Labels = append(is.Labels, l)
			}
		}
		if r.IntN(3) == 0 {
			a := choose(r, g.users[:4])
			is.Assignee = &a
			is.Assignees = []ghUser{a}
		}
		if r.IntN(4) == 0 {
			is.PullRequest = &ghPullRef{
				URL:      repo.URL + "/pulls/" + strconv.Itoa(n),
				HTMLURL:  repo.HTMLURL + "/pull/" + strconv.Itoa(n),
				DiffURL:  repo.HTMLURL + "/pull/" + strconv.Itoa(n) + ".diff",
				PatchURL: repo.HTMLURL + "/pull/" + strconv.Itoa(n) + ".patch",
			}
			is.Draft = new(bool)
		}
		if open < repo.OpenIssuesCount && (total-n < repo.OpenIssuesCount-open || r.IntN(2) == 0) {
			open++
		} else {
			closed := iso(randTime(r, c))
			is.State = "closed"
			is.ClosedAt = &closed
			is.UpdatedAt = closed
			is.StateReason = strptr("completed")
			if is.PullRequest != nil {
				is.PullRequest.MergedAt = &closed
				is.StateReason = nil
			}
		}
		out = append(out, is)
	}
	g.issues[repo.ID] = out
	return out
}

func (g *githubAPI) newIssue(repo *ghRepo, n int, title string, body *string, user ghUser, created time.Time) *ghIssue {
	g.nextID++
	id := g.nextID
	u := repo.URL + "/issues/" + strconv.Itoa(n)
	assoc := "CONTRIBUTOR"
	if user.Login == repo.Owner.Login || user.Login == GitHubViewer {
		assoc = "OWNER"
	}
	return &ghIssue{
		URL:               u,
		RepositoryURL:     repo.URL,
		LabelsURL:         u + "/labels{/name}",
		CommentsURL:       u + "/comments",
		EventsURL:         u + "/events",
		HTMLURL:           repo.HTMLURL + "/issues/" + strconv.Itoa(n),
		ID:                id,
		NodeID:            nodeID("I_kwDO", id),
		Number:            n,
		Title:             title,
		User:              user,
		Labels:            []ghLabel{},
		State:             "open",
		Assignees:         []ghUser{},
		CreatedAt:         iso(created),
		UpdatedAt:         iso(created),
		AuthorAssociation: assoc,
		Body:              body,
		Reactions:         ghReactions{URL: u + "/reactions"},
		TimelineURL:       u + "/timeline",
	}
}

// githubError writes GitHub's error envelope.
func githubError(w http.ResponseWriter, status int, msg, doc string) {
	writeJSON(w, status, ordered{{"message", msg}, {"documentation_url", doc}, {"status", strconv.Itoa(status)}})
}

func (g *githubAPI) serve(c *call) {
	h := c.w.Header()
	h.Set("X-GitHub-Media-Type", "github.v3; format=json")
	h.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	h.Set("X-GitHub-Request-Id", fmt.Sprintf("FAKE:%04X:%06X", len(c.body)%65536, time.Now().UnixNano()%0xffffff))
	if v := c.r.Header.Get("X-GitHub-Api-Version"); v != "" && v != "2022-11-28" {
		githubError(c.w, http.StatusBadRequest, fmt.Sprintf("Unsupported 'X-GitHub-Api-Version' header. The requested version %q is not supported by this fake; use 2022-11-28.", v), ghDocs+"/about-the-rest-api/api-versions")
		return
	}
	switch c.checkBearer() {
	case authMissing:
		githubError(c.w, http.StatusUnauthorized, "Requires authentication", ghDocs)
		return
	case authInvalid:
		githubError(c.w, http.StatusUnauthorized, "Bad credentials", ghDocs)
		return
	}
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Remaining", "4999")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	h.Set("X-RateLimit-Used", "1")
	h.Set("X-RateLimit-Resource", "core")

	segs, ok := segments(c.r.URL.EscapedPath())
	if !ok {
		githubError(c.w, http.StatusNotFound, "Not Found", ghDocs)
		return
	}
	m := c.r.Method
	if _, ok := match(segs, "user"); ok && m == http.MethodGet {
		g.getUser(c)
		return
	}
	if _, ok := match(segs, "user", "repos"); ok && m == http.MethodGet {
		g.listRepos(c)
		return
	}
	if v, ok := match(segs, "repos", "*", "*"); ok && m == http.MethodGet {
		g.getRepo(c, v[0], v[1])
		return
	}
	if v, ok := match(segs, "repos", "*", "*", "pages"); ok && m == http.MethodGet {
		g.getPages(c, v[0], v[1])
		return
	}
	if v, ok := match(segs, "repos", "*", "*", "issues"); ok {
		switch m {
		case http.MethodGet:
			g.listIssues(c, v[0], v[1])
			return
		case http.MethodPost:
			g.createIssue(c, v[0], v[1])
			return
		}
	}
	githubError(c.w, http.StatusNotFound, "Not Found", ghDocs)
}

func (g *githubAPI) getUser(c *call) {
	v := g.viewer
	writeJSON(c.w, http.StatusOK, ordered{
		{"login", v.Login}, {"id", v.ID}, {"node_id", v.NodeID}, {"avatar_url", v.AvatarURL},
		{"gravatar_id", ""}, {"url", v.URL}, {"html_url", v.HTMLURL}, {"followers_url", v.FollowersURL},
		{"following_url", v.FollowingURL}, {"gists_url", v.GistsURL}, {"starred_url", v.StarredURL},
		{"subscriptions_url", v.SubscriptionsURL}, {"organizations_url", v.OrganizationsURL},
		{"repos_url", v.ReposURL}, {"events_url", v.EventsURL}, {"received_events_url", v.ReceivedEventsURL},
		{"type", "User"}, {"user_view_type", "private"}, {"site_admin", false},
		{"name", "Pinned Tester"}, {"company", "@fake-org-labs"}, {"blog", "https://pinned.example.org"},
		{"location", "Berlin"}, {"email", "pinned-tester@example.org"}, {"hireable", nil},
		{"bio", "Fake account served by pinned's fakeapi."}, {"twitter_username", nil},
		{"notification_email", "pinned-tester@example.org"},
		{"public_repos", 161}, {"public_gists", 3}, {"followers", 42}, {"following", 7},
		{"created_at", iso(g.created)}, {"updated_at", iso(dataNow)},
		{"private_gists", 1}, {"total_private_repos", 89}, {"owned_private_repos", 52},
		{"disk_usage", 812345}, {"collaborators", 4}, {"two_factor_authentication", true},
		{"plan", ordered{{"name", "pro"}, {"space", 976562499}, {"collaborators", 0}, {"private_repos", 9999}}},
	})
}

// pageParams reads GitHub's per_page (default 30, capped at 100) and page
// (default 1).
func pageParams(q url.Values) (perPage, page int) {
	perPage, ok := intParam(q, "per_page", 30)
	if !ok || perPage < 1 {
		perPage = 30
	}
	perPage = min(perPage, 100)
	page, ok = intParam(q, "page", 1)
	if !ok || page < 1 {
		page = 1
	}
	return perPage, page
}

// setLink writes GitHub's Link header for a paged list.
func setLink(w http.ResponseWriter, path string, q url.Values, perPage, page, total int) {
	last := max(1, (total+perPage-1)/perPage)
	link := func(p int, rel string) string {
		qq := url.Values{}
		for k, v := range q {
			qq[k] = v
		}
		qq.Set("per_page", strconv.Itoa(perPage))
		qq.Set("page", strconv.Itoa(p))
		return fmt.Sprintf("<%s%s?%s>; rel=%q", ghAPI, path, qq.Encode(), rel)
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
		w.Header().Set("Link", strings.Join(parts, ", "))
	}
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
	perPage, page := pageParams(q)
	g.mu.Lock()
	repos := make([]*ghRepo, 0, len(g.repos))
	vis := q.Get("visibility")
	switch vis {
	case "", "all", "public", "private":
	default:
		g.mu.Unlock()
		githubError(c.w, http.StatusUnprocessableEntity, "Validation Failed", ghDocs+"/repos/repos#list-repositories-for-the-authenticated-user")
		return
	}
	for _, r := range g.repos {
		if vis == "public" && r.Private || vis == "private" && !r.Private {
			continue
		}
		cp := *r // a copy: writes change counts under g.mu
		repos = append(repos, &cp)
	}
	g.mu.Unlock()
	sortKey := q.Get("sort")
	desc := q.Get("direction") == "desc" || (q.Get("direction") == "" && sortKey != "" && sortKey != "full_name")
	less := func(a, b *ghRepo) bool {
		switch sortKey {
		case "created":
			return a.CreatedAt < b.CreatedAt
		case "updated":
			return a.UpdatedAt < b.UpdatedAt
		case "pushed":
			return a.PushedAt < b.PushedAt
		}
		return strings.ToLower(a.FullName) < strings.ToLower(b.FullName)
	}
	sort.SliceStable(repos, func(i, j int) bool {
		if desc {
			return less(repos[j], repos[i])
		}
		return less(repos[i], repos[j])
	})
	setLink(c.w, "/user/repos", q, perPage, page, len(repos))
	writeJSON(c.w, http.StatusOK, pageSlice(repos, perPage, page))
}

// findRepo looks a repository up case-insensitively, as GitHub does.
func (g *githubAPI) findRepo(owner, name string) *ghRepo {
	return g.byName[strings.ToLower(owner+"/"+name)]
}

func (g *githubAPI) getRepo(c *call, owner, name string) {
	g.mu.Lock()
	var repo *ghRepo
	if r := g.findRepo(owner, name); r != nil {
		cp := *r
		repo = &cp
	}
	g.mu.Unlock()
	if repo == nil {
		githubError(c.w, http.StatusNotFound, "Not Found", ghDocs+"/repos/repos#get-a-repository")
		return
	}
	full := ghRepoFull{
		ghRepo:                   repo,
		AllowSquashMerge:         true,
		AllowMergeCommit:         true,
		AllowRebaseMerge:         true,
		DeleteBranchOnMerge:      repo.ID%2 == 0,
		SquashMergeCommitMessage: "COMMIT_MESSAGES",
		SquashMergeCommitTitle:   "COMMIT_OR_PR_TITLE",
		MergeCommitMessage:       "PR_TITLE",
		MergeCommitTitle:         "MERGE_MESSAGE",
		CustomProperties:         map[string]any{},
		NetworkCount:             repo.ForksCount,
		SubscribersCount:         repo.WatchersCount/10 + 1,
	}
	if repo.Owner.Type == "Organization" {
		o := repo.Owner
		full.Organization = &o
	}
	writeJSON(c.w, http.StatusOK, full)
}

func (g *githubAPI) listIssues(c *call, owner, name string) {
	q := c.r.URL.Query()
	perPage, page := pageParams(q)
	state := q.Get("state")
	switch state {
	case "":
		state = "open"
	case "open", "closed", "all":
	default:
		githubError(c.w, http.StatusUnprocessableEntity, "Validation Failed", ghDocs+"/issues/issues#list-repository-issues")
		return
	}
	g.mu.Lock()
	repo := g.findRepo(owner, name)
	if repo == nil {
		g.mu.Unlock()
		githubError(c.w, http.StatusNotFound, "Not Found", ghDocs+"/issues/issues#list-repository-issues")
		return
	}
	var list []*ghIssue
	if repo.HasIssues {
		all := g.repoIssues(repo)
		// Newest first (sort=created, direction=desc is GitHub's default).
		for i := len(all) - 1; i >= 0; i-- {
			if state == "all" || all[i].State == state {
				cp := *all[i]
				list = append(list, &cp)
			}
		}
	}
	g.mu.Unlock()
	if list == nil {
		list = []*ghIssue{}
	}
	setLink(c.w, c.r.URL.EscapedPath(), q, perPage, page, len(list))
	writeJSON(c.w, http.StatusOK, pageSlice(list, perPage, page))
}

func (g *githubAPI) createIssue(c *call, owner, name string) {
	const doc = ghDocs + "/issues/issues#create-an-issue"
	var in struct {
		Title     json.RawMessage `json:"title"`
		Body      *string         `json:"body"`
		Labels    []string        `json:"labels"`
		Assignees []string        `json:"assignees"`
	}
	if err := json.Unmarshal(c.body, &in); err != nil {
		githubError(c.w, http.StatusBadRequest, "Problems parsing JSON", doc)
		return
	}
	var title string
	if err := json.Unmarshal(in.Title, &title); err != nil {
		var n json.Number
		if json.Unmarshal(in.Title, &n) == nil {
			title = n.String()
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	repo := g.findRepo(owner, name)
	if repo == nil {
		githubError(c.w, http.StatusNotFound, "Not Found", doc)
		return
	}
	if repo.Archived {
		githubError(c.w, http.StatusForbidden, "Repository was archived so is read-only.", doc)
		return
	}
	if !repo.HasIssues {
		githubError(c.w, http.StatusGone, "Issues are disabled for this repo", doc)
		return
	}
	if strings.TrimSpace(title) == "" {
		writeJSON(c.w, http.StatusUnprocessableEntity, ordered{
			{"message", "Validation Failed"},
			{"errors", []ordered{{{"resource", "Issue"}, {"code", "missing_field"}, {"field", "title"}}}},
			{"documentation_url", doc}, {"status", "422"},
		})
		return
	}
	all := g.repoIssues(repo)
	is := g.newIssue(repo, len(all)+1, title, in.Body, g.viewer, time.Now())
	for _, want := range in.Labels {
		for _, l := range g.labels(repo) {
			if strings.EqualFold(l.Name, want) {
				is.Labels = append(is.Labels, l)
			}
		}
	}
	g.issues[repo.ID] = append(all, is)
	repo.OpenIssuesCount++
	repo.OpenIssues++
	c.w.Header().Set("Location", is.URL)
	writeJSON(c.w, http.StatusCreated, is)
}
