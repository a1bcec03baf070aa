package web_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
)

// viewports are the widths every audited page state is checked at: a
// phone (390×844) and a laptop (1280×800).
var viewports = []struct {
	name          string
	width, height int64
}{
	{"390×844", 390, 844},
	{"1280×800", 1280, 800},
}

// axeSource is web/testdata/axe/axe.min.js once its SHA-256 matched
// web/testdata/axe/VENDOR (loadAxe).
var axeSource string

// loadAxe reads the vendored axe-core and checks it against VENDOR.
func loadAxe(t *testing.T) string {
	t.Helper()
	if axeSource != "" {
		return axeSource
	}
	src, err := os.ReadFile("testdata/axe/axe.min.js")
	if err != nil {
		t.Fatal(err)
	}
	want := vendorSum(t, "testdata/axe/VENDOR", "axe.min.js")
	if sum := sha256.Sum256(src); hex.EncodeToString(sum[:]) != want {
		t.Fatalf("testdata/axe/axe.min.js: SHA-256 %x, VENDOR records %s; run make axe-vendor", sum, want)
	}
	axeSource = string(src)
	return axeSource
}

// vendorSum returns the SHA-256 a VENDOR file ("package version file
// sha256" lines) records for file.
func vendorSum(t *testing.T, vendor, file string) string {
	t.Helper()
	f, err := os.Open(vendor)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 4 && !strings.HasPrefix(fields[0], "#") && fields[2] == file {
			return fields[3]
		}
	}
	t.Fatalf("%s records no %s", vendor, file)
	return ""
}

// TestAxeVendored: the vendored axe-core is byte for byte what VENDOR
// records, and its licence is beside it.
func TestAxeVendored(t *testing.T) {
	src := loadAxe(t)
	if !strings.Contains(src[:min(len(src), 400)], "axe v4.14.1") {
		t.Errorf("axe.min.js does not start with its version banner: %.120q", src)
	}
	for _, f := range []string{"testdata/axe/axe-core.LICENSE", "testdata/axe/axe-core.LICENSE-3RD-PARTY.txt"} {
		b, err := os.ReadFile(f)
		if err != nil || len(b) == 0 {
			t.Errorf("%s: %v (%d bytes)", f, err, len(b))
		}
	}
}

// setViewport emulates a window of width×height CSS pixels.
func (e *browserEnv) setViewport(width, height int64) {
	e.t.Helper()
	e.do(chromedp.EmulateViewport(width, height))
}

// audit checks the page state now on screen at each of viewports: the
// document is no wider than the viewport (no horizontal scrolling), and
// axe-core finds no serious or critical violation. It leaves the
// 1280×900 window the suite runs in.
func (e *browserEnv) audit(state string) {
	e.t.Helper()
	src := loadAxe(e.t)
	defer e.setViewport(1280, 900)
	for _, vp := range viewports {
		e.setViewport(vp.width, vp.height)
		// Reading scrollWidth lays the page out at the new width; the
		// pause lets resize handlers run (a timer, not an animation
		// frame, which a page in the background never gets).
		e.do(chromedp.Evaluate[chromedp.Void](`new Promise((r) => setTimeout(r, 50))`, chromedp.EvalAwaitPromise))
		got := eval[[]int64](e, `[document.documentElement.scrollWidth, document.documentElement.clientWidth, window.innerWidth]`)
		if got[0] > got[2] || got[0] > vp.width {
			wide := eval[[]string](e, `[...document.querySelectorAll('body *')].filter(n => n.getBoundingClientRect().right > window.innerWidth + 0.5 && !n.closest('.out')).slice(0, 5).map(n => n.tagName + (n.id ? '#' + n.id : '') + '.' + n.className + ' right=' + Math.round(n.getBoundingClientRect().right))`)
			e.t.Errorf("%s at %s: the document is %d px wide in a %d px viewport (horizontal scrolling); widest: %q", state, vp.name, got[0], got[2], wide)
		}
		if eval[bool](e, `typeof window.axe === 'undefined'`) {
			// DevTools evaluation is exempt from the page's CSP: axe is
			// never served to members.
			e.do(chromedp.Evaluate[chromedp.Void](src))
		}
		ctx, cancel := context.WithTimeout(e.ctx, 60*time.Second)
		violations, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`axe.run(document, {resultTypes: ['violations']}).then(r => r.violations
			.filter(v => v.impact === 'serious' || v.impact === 'critical')
			.map(v => v.impact + ' ' + v.id + ': ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', ')))`, chromedp.EvalAwaitPromise))
		cancel()
		if err != nil {
			e.t.Fatalf("%s at %s: axe: %v", state, vp.name, err)
		}
		for _, v := range violations {
			e.t.Errorf("%s at %s: axe: %s", state, vp.name, v)
		}
		e.audited = append(e.audited, state+" @ "+vp.name)
	}
}

// screenshotPhone takes a screenshot at 390×844 (PINNED_WEB_SCREENSHOTS).
func (e *browserEnv) screenshotPhone(name string) {
	e.t.Helper()
	if os.Getenv("PINNED_WEB_SCREENSHOTS") == "" {
		return
	}
	e.setViewport(390, 844)
	defer e.setViewport(1280, 900)
	e.screenshot(name)
}

// visible is a JavaScript predicate: the element exists and takes space.
func visible(sel string) string {
	return `(() => { const n = document.querySelector(` + jsString(sel) + `); return !!n && n.getClientRects().length > 0 && getComputedStyle(n).visibility !== 'hidden'; })()`
}

// testRefusedToken: a token the provider refuses is not stored, and the
// page says who refused it (GitHub, its API host, HTTP 401) and why (the
// provider's message), as `pinned connect` does.
func testRefusedToken(t *testing.T, e *browserEnv) {
	e.openCatalog()
	e.audit("the catalog, nothing connected")
	e.st.Fake.Reset()
	e.do(chromedp.SendKeys(chromedp.ID("token-github"), "ghp_not_a_token_the_fake_knows_000000000"), chromedp.Click(chromedp.ID("save-github")))
	e.waitFor("the refusal", `document.getElementById('status-github').textContent.startsWith('Not saved')`)
	got := e.text("#status-github")
	for _, want := range []string{"GitHub refused the token", "github.get_viewer", "api.github.com answered HTTP 401", "Bad credentials"} {
		if !strings.Contains(got, want) {
			t.Errorf("the refusal %q does not say %q", got, want)
		}
	}
	if cls := eval[string](e, `document.getElementById('status-github').className`); cls != "status-bad" {
		t.Errorf("the refusal is shown as %q, want status-bad", cls)
	}
	if n := eval[int](e, `document.querySelectorAll('#connected-github').length`); n != 0 {
		t.Error("a refused token was stored")
	}
	if n := len(githubRequests(e.st.Fake)); n != 1 {
		t.Errorf("the fake saw %d GitHub requests, want the one viewer call", n)
	}
	e.audit("the catalog, a token refused")
	e.st.Fake.Reset()
}

// testSkipLinks: skip links bring the third service's token field within
// 5 Tab presses, and a repository of the 250 within 6 (the list is one
// Tab stop; arrow keys move within it; the filter narrows it).
func testSkipLinks(t *testing.T, e *browserEnv) {
	e.openCatalog()
	// The third service on the page: its token field, or its heading
	// once connected.
	third := eval[string](e, `pinned.catalog().then(c => c.services[2].id)`)
	target := eval[string](e, `document.getElementById('token-`+third+`') ? 'token-`+third+`' : 'h-`+third+`'`)
	e.do(chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)`))
	presses := 0
	var path []string
	for ; presses < 40; presses++ {
		id := eval[string](e, `document.activeElement.id`)
		path = append(path, id)
		if id == "skip-"+third {
			break
		}
		e.do(chromedp.KeyEvent(kb.Tab))
	}
	e.do(chromedp.KeyEvent(kb.Enter))
	presses++
	if got := eval[string](e, `document.activeElement.id`); got != target {
		t.Fatalf("after %d key presses the focus is on %q, want %s", presses, got, target)
	}
	if presses > 5 {
		t.Errorf("reaching %s takes %d key presses, want at most 5 (focus went %q)", target, presses, path)
	}
	if !eval[bool](e, visible("#skip-"+third)) {
		t.Error("the focused skip link is not visible")
	}

	e.open("/apps/github")
	e.waitFor("the app", `document.getElementById('app').dataset.loaded === 'true'`)
	e.do(chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)`))
	// By Tab alone: past the skip links, the header and the filter.
	presses = 0
	for ; presses < 40 && !eval[bool](e, `document.activeElement.matches('#repos button.repo')`); presses++ {
		e.do(chromedp.KeyEvent(kb.Tab))
	}
	if presses > 8 {
		t.Errorf("reaching a repository takes %d Tab presses, want at most 8", presses)
	}
	// By the skip link, on a fresh load: Tab, Enter.
	e.open("/apps/github")
	e.waitFor("the app", `document.getElementById('app').dataset.loaded === 'true'`)
	e.do(chromedp.KeyEvent(kb.Tab))
	if got := eval[string](e, `document.activeElement.id`); got != "skip-repos" {
		t.Errorf("the first Tab focuses %q, want skip-repos", got)
	}
	e.do(chromedp.KeyEvent(kb.Enter))
	if !eval[bool](e, `document.activeElement.matches('#repos button.repo[tabindex="0"]')`) {
		t.Errorf("the skip link focused %q, want the repository list's Tab stop", eval[string](e, `document.activeElement.outerHTML.slice(0, 80)`))
	}
	if n := eval[int](e, `document.querySelectorAll('#repos button.repo[tabindex="0"]').length`); n != 1 {
		t.Errorf("%d repositories take Tab, want 1 (a roving tabindex)", n)
	}
	first := eval[string](e, `document.activeElement.dataset.repo`)
	e.do(chromedp.KeyEvent(kb.ArrowDown))
	if next := eval[string](e, `document.activeElement.dataset.repo`); next == first || next == "" {
		t.Errorf("ArrowDown moved the focus from %q to %q", first, next)
	}
	e.do(chromedp.KeyEvent(kb.End))
	if last := eval[string](e, `document.activeElement.dataset.repo`); last != eval[string](e, `[...document.querySelectorAll('#repos button.repo')].pop().dataset.repo`) {
		t.Errorf("End moved the focus to %q", last)
	}
	// The filter narrows the list as the member types.
	e.do(chromedp.Focus(chromedp.ID("repo-filter")), chromedp.SendKeys(chromedp.ID("repo-filter"), "notes"))
	e.waitFor("the filtered list", `document.querySelectorAll('#repos button.repo').length === 1`)
	if got := eval[string](e, `document.querySelector('#repos button.repo').dataset.repo`); got != "pinned-tester/notes" {
		t.Errorf("the filter kept %q", got)
	}
	if got := e.text("#repo-count"); got != fmt.Sprintf("(1 of %d)", fakeapi.GitHubRepoCount) {
		t.Errorf("the count under a filter = %q", got)
	}
	e.audit("the GitHub app, a filtered list")
	e.do(chromedp.Evaluate[chromedp.Void](`(() => { const f = document.getElementById('repo-filter'); f.value = ''; f.dispatchEvent(new Event('input')); })()`))
	e.waitFor("the whole list again", `document.querySelectorAll('#repos button.repo').length === `+fmt.Sprint(fakeapi.GitHubRepoCount))
}

// testReadNowResults: "Read now" puts its results in a scroll box that
// takes keyboard focus and is a named region, with column headers a
// person reads ("Email", not "properties.email").
func testReadNowResults(t *testing.T, e *browserEnv) {
	e.openCatalog()
	e.do(chromedp.SetValue(chromedp.ID("try-hubspot"), "list_contacts"), chromedp.Click(chromedp.ID("run-hubspot")))
	e.waitFor("the contacts", `document.querySelectorAll('#result-list_contacts tbody tr').length > 0`)
	heads := eval[[]string](e, `[...document.querySelectorAll('#result-list_contacts th')].map(n => n.textContent + '=' + n.dataset.path)`)
	for _, want := range []string{"ID=id", "Email=properties.email", "Firstname=properties.firstname"} {
		if !strings.Contains(strings.Join(heads, "|"), want) {
			t.Errorf("headers %q lack %q", heads, want)
		}
	}
	for _, h := range heads {
		if name, _, _ := strings.Cut(h, "="); strings.ContainsAny(name, "._") {
			t.Errorf("header %q is a raw path", name)
		}
	}
	box := eval[[]string](e, `(() => { const n = document.getElementById('out-hubspot'); return [n.getAttribute('tabindex'), n.getAttribute('role'), n.getAttribute('aria-label')]; })()`)
	if box[0] != "0" || box[1] != "region" || box[2] != "HubSpot results" {
		t.Errorf("the results box: tabindex %q, role %q, label %q", box[0], box[1], box[2])
	}
	e.do(chromedp.Focus(chromedp.ID("out-hubspot")))
	if got := eval[string](e, `document.activeElement.id`); got != "out-hubspot" {
		t.Errorf("the results box does not take focus: %q has it", got)
	}
	e.audit("the catalog, Read now results")
	e.screenshotPhone("catalog-phone.png")
}

// testDisconnectInAnotherTab: with the GitHub app open in one tab and
// GitHub disconnected in another, submitting an issue says "not
// connected" (not "read-only") and sends nothing. The connection is
// pasted back (read & write) for the subtests after it.
func testDisconnectInAnotherTab(t *testing.T, e *browserEnv, pat string) {
	e.open("/apps/github")
	e.waitFor("the app", `document.getElementById('app').dataset.loaded === 'true' && document.getElementById('repo-h').textContent !== ''`)
	other, cancel := chromedp.NewContext(e.ctx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(other, 30*time.Second)
	defer cancelT()
	if err := chromedp.Do(ctx, chromedp.Navigate(e.st.WebURL+"/")); err != nil {
		t.Fatal(err)
	}
	waitIn := func(pred string) {
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+pred+")")); err == nil && ok {
				return
			}
		}
		t.Fatalf("the other tab: waiting for %s timed out", pred)
	}
	waitIn(`document.getElementById('disconnect-github')`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("disconnect-github"))); err != nil {
		t.Fatal(err)
	}
	waitIn(`document.getElementById('form-github')`)
	cancel()
	e.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.BringToFront, cdp.Empty{})
		return err
	}))

	e.st.Fake.Reset()
	e.do(chromedp.SendKeys(chromedp.ID("issue-title"), "Sent after a disconnect elsewhere"), chromedp.Click(chromedp.ID("issue-submit")))
	e.waitFor("the refusal", `document.getElementById('issue-status').textContent !== ''`)
	time.Sleep(300 * time.Millisecond) // anything the click might have sent arrives
	got := e.text("#issue-status")
	if !strings.Contains(got, "not connected") || strings.Contains(got, "read-only") {
		t.Errorf("after a disconnect in another tab the app says %q, want not connected", got)
	}
	if reqs := e.st.Fake.Requests(); len(reqs) != 0 {
		t.Errorf("the fake saw %d requests, want none", len(reqs))
	}

	e.openCatalog()
	e.do(chromedp.SendKeys(chromedp.ID("token-github"), pat), chromedp.Click(chromedp.ID("cap-github-write")), chromedp.Click(chromedp.ID("save-github")))
	e.waitFor("GitHub connected again", `(document.querySelector('#connected-github .cap-now') || {}).textContent === 'read & write'`)
}

// testGateHidesApp: without a connection the GitHub app shows its gate
// only: the repository list and its button are not rendered (hidden wins
// over #app's display: grid).
func testGateHidesApp(t *testing.T, e *browserEnv) {
	e.open("/apps/github")
	e.waitFor("the gate", visible("#gate"))
	for _, sel := range []string{"#app", "#refresh", "#repos-h", "#repos", "#repo-filter", "nav.skip"} {
		if eval[bool](e, visible(sel)) {
			t.Errorf("%s is visible under the gate", sel)
		}
	}
	e.audit("the GitHub app, not connected")
}
