package web_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// testStandingReadGrant: the catalog's consent card for a standing read
// grant says what the bot may read, the limit and how it ends; once
// allowed, three reads run under the one standing grant (no grant per
// op), the page renews it (same series, later expiry) while it is open,
// and after Revoke the bot's held renewals are refused grant_revoked
// with nothing sent.
func testStandingReadGrant(t *testing.T, e *browserEnv) {
	e.openCatalog()
	e.waitFor("the standing consent", `!!document.getElementById('standing-github-consent')`)
	consent := e.text("#standing-github-consent")
	for _, want := range []string{"Let the bot read GitHub without asking each time: ", "get_viewer", "Only Repositories: pinned-tester/notes.", "stops within 10 minutes", "Writes still ask you."} {
		if !strings.Contains(consent, want) {
			t.Errorf("the consent card %q lacks %q", consent, want)
		}
	}
	e.audit("the catalog, a standing read grant's consent")
	e.do(chromedp.Click(chromedp.ID("standing-github-allow")))
	e.waitFor("the active standing grant", `!!document.getElementById('standing-github-revoke')`)
	e.audit("the catalog, a standing read grant active")
	first := eval[string](e, `pinned.standingState('github').sealed`)
	g, err := grant.Open(first, e.st.BotKey)
	if err != nil {
		t.Fatal(err)
	}
	if !g.IsStanding() || g.Access != grant.AccessRead || g.Op != "" || g.Resources != `{"repository":["pinned-tester/notes"]}` {
		t.Fatalf("the standing grant: standing %q access %q op %q resources %s", g.Standing, g.Access, g.Op, g.Resources)
	}

	e.st.Fake.Reset()
	e.mu.Lock()
	before := len(e.requests)
	e.mu.Unlock()
	for _, call := range []string{
		`pinned.runOp('github', 'get_viewer', {})`,
		`pinned.runOp('github', 'list_issues', {owner: 'pinned-tester', repo: 'notes'})`,
		`pinned.runOp('github', 'get_repo', {owner: 'pinned-tester', repo: 'notes'})`,
	} {
		if got := eval[string](e, call+`.then(() => 'ran', (err) => err.code)`); got != "ran" {
			t.Fatalf("%s: %s", call, got)
		}
	}
	if n := len(e.st.Fake.Requests()); n != 3 {
		t.Errorf("the fake received %d requests for 3 reads", n)
	}
	if grants := relayedGrants(e, before); len(grants) != 3 || grants[0] != first || grants[1] != first || grants[2] != first {
		t.Errorf("the 3 reads were sent with %d grants, not the one standing grant", len(grants))
	}

	// Renewal while the page is open: a short interval, three renewals.
	eval[bool](e, `(pinned.standingRenewMs = 200, pinned.renewStanding('github').then(() => true))`)
	e.waitFor("three renewals", `pinned.standingState('github').renewals >= 4`)
	eval[bool](e, `(pinned.standingRenewMs = 240000, pinned.renewStanding('github').then(() => true))`)
	renewed := eval[string](e, `pinned.standingState('github').sealed`)
	r, err := grant.Open(renewed, e.st.BotKey)
	if err != nil || renewed == first || r.Standing != g.Standing || r.ExpiresAt.Before(g.ExpiresAt) || r.Nonce == g.Nonce {
		t.Fatalf("the renewal: %v; series %q (want %q), nonce changed %v", err, r.Standing, g.Standing, r.Nonce != g.Nonce)
	}
	if got := eval[string](e, `pinned.runOp('github', 'get_viewer', {}).then(() => 'ran', (err) => err.code)`); got != "ran" {
		t.Fatalf("a read after renewal: %s", got)
	}

	bot := eval[string](e, `pinned.standingState('github').bot`)
	e.do(chromedp.Click(chromedp.ID("standing-github-revoke")))
	e.waitFor("the revocation", `!!document.getElementById('standing-github-allow') && document.getElementById('status-github').textContent.startsWith('Standing reads revoked')`)
	e.st.Fake.Reset()
	for name, sealed := range map[string]string{"the last renewal": renewed, "the first": first} {
		got := eval[string](e, `fetch('/api/bots/`+bot+`/ops', {method: 'POST', headers: {'Content-Type': 'application/json'},
			body: JSON.stringify({service: 'github', op: 'get_viewer', args: {}, grant: `+jsString(sealed)+`})}).then(r => r.json()).then(b => b.error ? b.error.code : 'ran')`)
		if got != "grant_revoked" {
			t.Errorf("the bot's %s after Revoke: %s, want grant_revoked", name, got)
		}
	}
	if n := len(e.st.Fake.Requests()); n != 0 {
		t.Errorf("the fake received %d requests after Revoke", n)
	}
}

// relayedGrants are the grants of the op requests the browser sent since
// request number from.
func relayedGrants(e *browserEnv, from int) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, r := range e.requests[from:] {
		if url, body, _ := strings.Cut(r, "\n"); strings.HasSuffix(url, "/ops") {
			var req struct{ Grant string }
			if json.Unmarshal([]byte(body), &req) == nil {
				out = append(out, req.Grant)
			}
		}
	}
	return out
}
