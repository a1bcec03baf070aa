package fakeapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestResearchData: the data behind "which of my DNSimple domains point at
// GitHub Pages?": the Pages repositories come first by push date, each
// custom domain's CNAME is where the package doc says, and the domain
// count is unchanged.
func TestResearchData(t *testing.T) {
	s := newServer(t)
	gh, dns := bearer(Token(GitHub)), bearer(Token(DNSimple))
	_, _, b := do(t, s, "GET", "https://api.github.com/user/repos?sort=pushed&per_page=5", gh, "")
	var repos []struct {
		FullName string `json:"full_name"`
		HasPages bool   `json:"has_pages"`
	}
	if err := json.Unmarshal(b, &repos); err != nil || len(repos) != 5 {
		t.Fatalf("repos: %v %.200s", err, b)
	}
	wantCNAME := map[string]string{"pinned-tester.github.io": "", "notes": "www.pinned-notes.dev", "hello-world": "docs.hello-fake.io",
		"dotfiles": "www.dotfiles-fake.net", "api_client.py": "www.elsewhere-fake.com"}
	for _, r := range repos {
		name := strings.TrimPrefix(r.FullName, GitHubViewer+"/")
		want, ok := wantCNAME[name]
		if !ok || !r.HasPages {
			t.Fatalf("repo %s (has_pages %v) among the first five by push", r.FullName, r.HasPages)
		}
		st, _, pb := do(t, s, "GET", "https://api.github.com/repos/"+r.FullName+"/pages", gh, "")
		var p struct{ CNAME *string }
		if st != 200 || json.Unmarshal(pb, &p) != nil || (p.CNAME == nil) != (want == "") || (p.CNAME != nil && *p.CNAME != want) {
			t.Errorf("%s pages: %d %s", r.FullName, st, pb)
		}
	}
	if st, _, _ := do(t, s, "GET", "https://api.github.com/repos/pinned-tester/hello-world/../pages", gh, ""); st != 404 {
		t.Errorf("a path with .. : %d", st)
	}
	if st, _, _ := do(t, s, "GET", "https://api.github.com/repos/acme-fake/"+"nope"+"/pages", gh, ""); st != 404 {
		t.Errorf("no such repo: %d", st)
	}
	cnames := map[string]string{"www.pinned-notes.dev": GitHubViewer + ".github.io", "docs.hello-fake.io": GitHubViewer + ".github.io",
		"www.dotfiles-fake.net": "dotfiles-fake.netlify.app", "www.shop-fake.co": "shops.myshopify.com"}
	for host, want := range cnames {
		name, zone, _ := strings.Cut(host, ".")
		_, _, rb := do(t, s, "GET", "https://api.dnsimple.com/v2/1385/zones/"+zone+"/records?type=CNAME&name="+name, dns, "")
		recs, _ := field(decode(t, rb), "data").([]any)
		if len(recs) != 1 || field(recs[0].(map[string]any), "content") != want {
			t.Errorf("%s: %s", host, rb)
		}
	}
	if st, _, _ := do(t, s, "GET", "https://api.dnsimple.com/v2/1385/zones/elsewhere-fake.com/records", dns, ""); st != 404 {
		t.Errorf("elsewhere-fake.com is a zone: %d", st)
	}
	_, _, b = do(t, s, "GET", "https://api.dnsimple.com/v2/1385/domains?per_page=100", dns, "")
	var names []string
	for _, d := range field(decode(t, b), "data").([]any) {
		names = append(names, d.(map[string]any)["name"].(string))
	}
	for _, d := range ResearchDomains {
		if !slices.Contains(names, d) {
			t.Errorf("domain %s missing from %v", d, names)
		}
	}
	for _, d := range PagesDomains {
		if !slices.Contains(ResearchDomains, d) {
			t.Errorf("PagesDomains holds %s, not a research domain", d)
		}
	}
}
