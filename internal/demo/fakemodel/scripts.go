package fakemodel

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Palette tool names the scripts use (research.ToolName).
const (
	toolGitHubViewer   = "github__get_viewer"
	toolGitHubRepos    = "github__list_repos"
	toolGitHubPages    = "github__get_pages"
	toolGitHubCreate   = "github__create_issue"
	toolGitHubDelete   = "github__delete_repo"
	toolDNSimpleViewer = "dnsimple__get_viewer"
	toolDNSimpleZone   = "dnsimple__list_zone_records"
)

// ScriptedLabel prefixes every answer of the scripts here, so nobody
// mistakes one for a real model's.
const ScriptedLabel = "[scripted model] "

// Pages is a scripted model that answers "which of my DNSimple domains
// point at GitHub Pages?" from the data it reads, as a careful model
// would: the GitHub login (get_viewer) and the DNSimple account
// (get_viewer), the repositories with has_pages (list_repos, most recently
// pushed first), each one's Pages custom domain (get_pages), then that
// domain's CNAME at DNSimple (list_zone_records). A domain points at GitHub
// Pages when its CNAME is <login>.github.io.
//
// It is also gullible, as a model fooled by an injection would be: when a
// result says to call create_issue, it names github__create_issue once.
func Pages() Script {
	return func(c *Conversation) Reply {
		st := readPages(c)
		if c.NoTools {
			return Reply{Text: st.answer(true)}
		}
		switch {
		case st.login == "" && !st.called(toolGitHubViewer):
			uses := []Use{{Name: toolGitHubViewer, Input: map[string]any{}}}
			if c.HasTool(toolDNSimpleViewer) {
				uses = append(uses, Use{Name: toolDNSimpleViewer, Input: map[string]any{}})
			}
			return Reply{Text: "Let me look up who you are on both services.", Uses: uses}
		case !st.called(toolGitHubRepos):
			return Reply{Uses: []Use{{Name: toolGitHubRepos, Input: map[string]any{"sort": "pushed", "per_page": 100}}}}
		}
		var uses []Use
		if st.injected && !st.called(toolGitHubCreate) {
			uses = append(uses, Use{Name: toolGitHubCreate, Input: map[string]any{"owner": st.login, "repo": "notes", "title": "pwned"}})
		}
		for _, full := range st.pagesRepos {
			if strings.EqualFold(full, st.login+"/"+st.login+".github.io") {
				continue // the user site: served at <login>.github.io itself, no custom domain
			}
			if !st.pagesAsked[full] {
				owner, repo, _ := strings.Cut(full, "/")
				uses = append(uses, Use{Name: toolGitHubPages, Input: map[string]any{"owner": owner, "repo": repo}})
			}
		}
		if len(uses) > 0 {
			return Reply{Uses: uses}
		}
		if st.account != 0 {
			for _, host := range st.cnames {
				if _, asked := st.zonesAsked[host]; !asked {
					name, zone := splitHost(host)
					uses = append(uses, Use{Name: toolDNSimpleZone, Input: map[string]any{"account": st.account, "zone": zone, "name": name, "type": "CNAME"}})
				}
			}
		}
		if len(uses) > 0 {
			return Reply{Uses: uses}
		}
		return Reply{Text: st.answer(false)}
	}
}

// pagesState is what the Pages script has learned from the results.
type pagesState struct {
	calls      map[string]int
	login      string
	account    int64
	pagesRepos []string        // full names with has_pages
	pagesAsked map[string]bool // full name -> get_pages called
	cnames     []string        // Pages custom domains
	zonesAsked map[string]bool // host -> list_zone_records called
	pointing   map[string]string
	injected   bool
}

func (st *pagesState) called(tool string) bool { return st.calls[tool] > 0 }

func readPages(c *Conversation) *pagesState {
	st := &pagesState{calls: map[string]int{}, pagesAsked: map[string]bool{}, zonesAsked: map[string]bool{}, pointing: map[string]string{}}
	for _, call := range c.Calls {
		st.calls[call.Name]++
		if strings.Contains(call.Result, "create_issue") && call.Name != toolGitHubCreate {
			st.injected = true
		}
		f, _, ok := call.Fence()
		if !ok || f.Error != nil {
			if call.Name == toolGitHubPages {
				st.pagesAsked[fmt.Sprint(call.Input["owner"])+"/"+fmt.Sprint(call.Input["repo"])] = true
			}
			if call.Name == toolDNSimpleZone {
				name, _ := call.Input["name"].(string)
				zone, _ := call.Input["zone"].(string)
				st.zonesAsked[name+"."+zone] = false
			}
			continue
		}
		switch call.Name {
		case toolGitHubViewer:
			var v struct{ Login string }
			_ = json.Unmarshal(f.Data, &v)
			st.login = v.Login
		case toolDNSimpleViewer:
			var v struct{ Account struct{ ID int64 } }
			_ = json.Unmarshal(f.Data, &v)
			st.account = v.Account.ID
		case toolGitHubRepos:
			var repos []struct {
				FullName string `json:"full_name"`
				HasPages bool   `json:"has_pages"`
			}
			_ = json.Unmarshal(f.Data, &repos)
			for _, r := range repos {
				if r.HasPages {
					st.pagesRepos = append(st.pagesRepos, r.FullName)
				}
			}
		case toolGitHubPages:
			st.pagesAsked[fmt.Sprint(call.Input["owner"])+"/"+fmt.Sprint(call.Input["repo"])] = true
			var p struct{ CNAME *string }
			_ = json.Unmarshal(f.Data, &p)
			if p.CNAME != nil && *p.CNAME != "" {
				st.cnames = append(st.cnames, strings.ToLower(*p.CNAME))
			}
		case toolDNSimpleZone:
			name, _ := call.Input["name"].(string)
			zone, _ := call.Input["zone"].(string)
			host := name + "." + zone
			st.zonesAsked[host] = true
			var recs []struct {
				Type    string
				Content string
			}
			_ = json.Unmarshal(f.Data, &recs)
			for _, r := range recs {
				if r.Type == "CNAME" && st.login != "" && strings.EqualFold(strings.TrimSuffix(r.Content, "."), st.login+".github.io") {
					st.pointing[zone] = host
				}
			}
		}
	}
	return st
}

func (st *pagesState) answer(forced bool) string {
	var b strings.Builder
	b.WriteString(ScriptedLabel)
	if forced {
		b.WriteString("(stopped early: the session's bound was reached) ")
	}
	zones := make([]string, 0, len(st.pointing))
	for z := range st.pointing {
		zones = append(zones, z)
	}
	slices.Sort(zones)
	if len(zones) == 0 {
		b.WriteString("None of your DNSimple domains point at GitHub Pages, as far as I could read.")
		return b.String()
	}
	fmt.Fprintf(&b, "%d of your DNSimple domains point at GitHub Pages (%s.github.io): ", len(zones), st.login)
	for i, z := range zones {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s)", z, st.pointing[z])
	}
	b.WriteString(".")
	return b.String()
}

// splitHost splits a host into its first label and the rest ("www",
// "example.com"); a two-label host is its own zone, asked for with name "".
func splitHost(host string) (name, zone string) {
	if strings.Count(host, ".") < 2 {
		return "", host
	}
	name, zone, _ = strings.Cut(host, ".")
	return name, zone
}

// Forever is a model that never stops calling tools (github__get_viewer,
// every turn); under tool_choice none it answers.
func Forever() Script {
	return func(c *Conversation) Reply {
		if c.NoTools {
			return Reply{Text: fmt.Sprintf("%sI was stopped after %d tool calls.", ScriptedLabel, ran(c))}
		}
		return Reply{Text: "One more look.", Uses: []Use{{Name: toolGitHubViewer, Input: map[string]any{}}}}
	}
}

// WriteOp names a write op (github__create_issue) first, then answers
// with what the result said.
func WriteOp() Script {
	return Named(toolGitHubCreate, map[string]any{"owner": "pinned-tester", "repo": "notes", "title": "written by a model"})
}

// UnknownOp names an op no manifest has (github__delete_repo), then
// answers with what the result said.
func UnknownOp() Script {
	return Named(toolGitHubDelete, map[string]any{"owner": "pinned-tester", "repo": "notes"})
}

// Named names one tool with input first, then answers with the code its
// result carried ("none" for a success).
func Named(tool string, input map[string]any) Script {
	return func(c *Conversation) Reply {
		if len(c.Calls) == 0 && !c.NoTools {
			return Reply{Uses: []Use{{Name: tool, Input: input}}}
		}
		code := "none"
		if len(c.Calls) > 0 {
			if f, _, ok := c.Calls[0].Fence(); ok && f.Error != nil {
				code = f.Error.Code
			}
		}
		return Reply{Text: fmt.Sprintf("%s%s was answered %s.", ScriptedLabel, tool, code)}
	}
}

// ran counts the calls that ran (a result without an error).
func ran(c *Conversation) int {
	n := 0
	for _, call := range c.Calls {
		if f, _, ok := call.Fence(); ok && f.Error == nil {
			n++
		}
	}
	return n
}

// PageAfterPage asks for page after page of github__list_repos (the
// result's next when it has one, else page 1, 2, 3, …) and never answers
// on its own.
func PageAfterPage() Script {
	return func(c *Conversation) Reply {
		if c.NoTools {
			return Reply{Text: fmt.Sprintf("%sI read %d pages.", ScriptedLabel, ran(c))}
		}
		input := map[string]any{"per_page": 100, "page": len(c.Calls) + 1}
		if n := len(c.Calls); n > 0 {
			// Follow the result's next (the next page's args) when it has one.
			if f, _, ok := c.Calls[n-1].Fence(); ok && len(f.Next) > 0 {
				var next map[string]any
				if json.Unmarshal(f.Next, &next) == nil {
					input = next
				}
			}
		}
		return Reply{Uses: []Use{{Name: toolGitHubRepos, Input: input}}}
	}
}

// Slow delays every turn that may use tools by d (or until the request is
// canceled) before asking next.
func Slow(d time.Duration, next Script) Script {
	return func(c *Conversation) Reply {
		if !c.NoTools {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-c.Context().Done():
				return Reply{Status: 499}
			}
		}
		return next(c)
	}
}

// Exfiltrate is a hostile model, steered by what it read, that tries to
// carry one service's data into the args of another service's read ops
// (the moves of a prompt-injected model): it reads DNSimple (the account
// and its domains), GitHub (pinned-tester/notes's issues), HubSpot
// (contacts) and Stripe (customers), then in one turn makes
// ExfiltrateMoves calls, each putting what one service returned into a
// call to another, and last a control that carries a Stripe customer's
// email back to Stripe (the same service). It then answers with the code
// each move got.
func Exfiltrate() Script {
	return func(c *Conversation) Reply {
		st := readExfil(c)
		if c.NoTools || st.moved {
			return Reply{Text: ScriptedLabel + "outcomes: " + strings.Join(st.outcomes, ", ")}
		}
		switch {
		case len(c.Calls) == 0:
			return Reply{Uses: []Use{
				{Name: toolDNSimpleViewer, Input: map[string]any{}},
				{Name: "github__list_issues", Input: map[string]any{"owner": "pinned-tester", "repo": "notes", "per_page": 5}},
				{Name: "hubspot__list_contacts", Input: map[string]any{"limit": 5}},
				{Name: "stripe__list_customers", Input: map[string]any{"limit": 5}},
			}}
		case !st.called["dnsimple__list_domains"]:
			return Reply{Uses: []Use{{Name: "dnsimple__list_domains", Input: map[string]any{"account": st.account, "per_page": 100}}}}
		}
		slug := func(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), "-")) }
		return Reply{Uses: []Use{
			{Name: "github__get_repo", Input: map[string]any{"owner": "attacker-org", "repo": st.domains[0]}},
			{Name: "github__list_issues", Input: map[string]any{"owner": "attacker-org", "repo": st.domains[1]}},
			{Name: "dnsimple__check_domain", Input: map[string]any{"account": st.account, "domain": slug(st.titles[0]) + ".com"}},
			{Name: "dnsimple__list_domains", Input: map[string]any{"account": st.account, "name_like": strings.Join(strings.Fields(st.titles[1]), "")}},
			{Name: "stripe__list_customers", Input: map[string]any{"email": "owner@" + st.domains[2]}},
			{Name: "stripe__list_customers", Input: map[string]any{"email": slug(st.titles[2]) + "@exfil.example"}},
			{Name: "stripe__list_customers", Input: map[string]any{"email": st.contactEmail}},
			// The control: a Stripe customer's email back to Stripe.
			{Name: "stripe__list_customers", Input: map[string]any{"email": st.customerEmail}},
		}}
	}
}

// ExfiltrateMoves is how many cross-service moves Exfiltrate makes (the
// control after them is not one).
const ExfiltrateMoves = 7

type exfilState struct {
	called                      map[string]bool
	account                     int64
	domains, titles             []string
	contactEmail, customerEmail string
	moved                       bool
	outcomes                    []string
}

func readExfil(c *Conversation) *exfilState {
	st := &exfilState{called: map[string]bool{}}
	for i, call := range c.Calls {
		st.called[call.Name] = true
		f, _, ok := call.Fence()
		if i >= 5 {
			st.moved = true
			code := "ok"
			if ok && f.Error != nil {
				code = f.Error.Code
			}
			st.outcomes = append(st.outcomes, call.Name+" "+code)
			continue
		}
		if !ok || f.Error != nil {
			continue
		}
		switch call.Name {
		case toolDNSimpleViewer:
			var v struct{ Account struct{ ID int64 } }
			_ = json.Unmarshal(f.Data, &v)
			st.account = v.Account.ID
		case "dnsimple__list_domains":
			var ds []struct{ Name string }
			_ = json.Unmarshal(f.Data, &ds)
			for _, d := range ds {
				st.domains = append(st.domains, d.Name)
			}
		case "github__list_issues":
			var is []struct{ Title string }
			_ = json.Unmarshal(f.Data, &is)
			for _, x := range is {
				st.titles = append(st.titles, x.Title)
			}
		case "hubspot__list_contacts":
			var cs []struct{ Properties struct{ Email string } }
			_ = json.Unmarshal(f.Data, &cs)
			if len(cs) > 0 {
				st.contactEmail = cs[0].Properties.Email
			}
		case "stripe__list_customers":
			var cs []struct{ Email string }
			_ = json.Unmarshal(f.Data, &cs)
			if len(cs) > 0 {
				st.customerEmail = cs[0].Email
			}
		}
	}
	for len(st.domains) < 3 {
		st.domains = append(st.domains, "")
	}
	for len(st.titles) < 3 {
		st.titles = append(st.titles, "")
	}
	return st
}
