package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/demo/webstack"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// findChromium returns the browser to drive. Under CI=true a missing
// browser fails the test (.ci/run installs Debian's chromium); elsewhere
// the test skips and says how to run it.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PINNED_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true and no chromium in PATH: the browser tests need it (.ci/run installs Debian's chromium)")
	}
	t.Skip("no chromium in PATH: install it (apt-get install chromium) or set PINNED_CHROMIUM to run the browser tests")
	return ""
}

// offsetClock is the sidecar's clock: real time plus an offset the test
// moves (token expiry and the grace window), while the page keeps real time.
type offsetClock struct{ off atomic.Int64 }

func (c *offsetClock) Now() time.Time        { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *offsetClock) Set(d time.Duration)   { c.off.Store(int64(d)) }
func (c *offsetClock) Offset() time.Duration { return time.Duration(c.off.Load()) }

// browserEnv is the stack and one browser shared by every subtest.
type browserEnv struct {
	t      *testing.T
	st     *webstack.Stack
	ctx    context.Context
	clock  *offsetClock
	webLog *testutil.SyncBuffer

	mu       sync.Mutex
	requests []string // every request the browser sent: URL, then body

	audited []string // the page states audit checked, with the viewport
}

func (e *browserEnv) do(steps ...chromedp.Action[chromedp.Void]) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		e.t.Fatalf("browser: %v", err)
	}
}

func eval[T any](e *browserEnv, expr string) T {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		e.t.Fatalf("evaluate %.80s: %v", expr, err)
	}
	return v
}

// waitFor evaluates a JavaScript predicate every 50 ms until it is truthy
// (15 s at most). Errors while a page navigates are retried.
func (e *browserEnv) waitFor(what, predicate string) {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+predicate+")"))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	status := ""
	if s, err := chromedp.Run(e.ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('[role=status]')].map(n => n.id + ': ' + n.textContent).join(' | ')`)); err == nil {
		status = s
	}
	e.t.Fatalf("waiting for %s: timed out (last error %v; status lines: %s)", what, last, status)
}

func (e *browserEnv) open(path string) {
	e.t.Helper()
	e.do(chromedp.Navigate(e.st.WebURL + path))
}

func (e *browserEnv) openCatalog() {
	e.t.Helper()
	e.open("/")
	e.waitFor("the catalog", `document.getElementById('services').getAttribute('aria-busy') === 'false'`)
}

func (e *browserEnv) text(sel string) string {
	e.t.Helper()
	return eval[string](e, `(document.querySelector(`+jsString(sel)+`) || {}).textContent || ''`)
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (e *browserEnv) screenshot(name string) {
	e.t.Helper()
	dir := os.Getenv("PINNED_WEB_SCREENSHOTS") // an absolute path: the test runs in web/
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		e.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// githubRequests returns the fake's requests to the GitHub API.
func githubRequests(f *fakeapi.Server) []fakeapi.Request {
	var out []fakeapi.Request
	for _, r := range f.Requests() {
		if r.Host == fakeapi.HostGitHub {
			out = append(out, r)
		}
	}
	return out
}

// TestBrowser drives the catalog and the GitHub app in a real Chromium
// against pinned web, a sidecar, the broker and the provider fake, all on
// loopback. The subtests run in order and share one browser.
func TestBrowser(t *testing.T) {
	chromium := findChromium(t)
	start := time.Now()
	e := &browserEnv{t: t, clock: &offsetClock{}, webLog: &testutil.SyncBuffer{}}
	sidecarLog, brokerLog := &testutil.SyncBuffer{}, &testutil.SyncBuffer{}
	st, err := webstack.Start(context.Background(), webstack.Options{
		SidecarNow: e.clock.Now, RefreshGrace: 3 * time.Second,
		WebLog: e.webLog, SidecarLog: sidecarLog, BrokerLog: brokerLog,
		OAuthServices: []string{fakeapi.HubSpot, fakeapi.Linear},
		// The compiled guest is shared with the other packages' tests.
		CacheDir: filepath.Join(os.TempDir(), "pinned-test-wazero-cache"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	e.st = st
	t.Logf("stack ready in %s", time.Since(start).Round(100*time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pinned web log:\n%s\nsidecar log:\n%s\nbroker log:\n%s", e.webLog.String(), sidecarLog.String(), brokerLog.String())
		}
	})

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox, // tests run as root in CI
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		// The providers' OAuth pages are the fake's, reached through the
		// stack's CONNECT proxy; loopback (pinned web, the broker) is
		// never proxied. Only this throwaway profile ignores the fake's
		// self-made certificate.
		chromedp.ProxyServer("http://"+st.ProxyAddr),
		chromedp.IgnoreCertErrors,
		chromedp.WindowSize(1280, 900),
	)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(cancel)
	e.ctx = ctx
	// Start the browser and record every request it sends.
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{})
		return err
	})); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Logf("chromium ready in %s", time.Since(start).Round(100*time.Millisecond))
	if err := chromedp.Listen(ctx, func(ev any) {
		if r, ok := ev.(*network.EventRequestWillBeSent); ok && r.Request != nil {
			var body bytes.Buffer
			for _, p := range r.Request.PostDataEntries {
				body.Write(p.Bytes)
			}
			e.mu.Lock()
			// The URL as sent (a fragment never leaves the browser) and the body.
			e.requests = append(e.requests, r.Request.URL+"\n"+body.String())
			e.mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}

	pat := fakeapi.Token(fakeapi.GitHub)
	run := func(name string, f func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			e.t = t // the helpers fail the running subtest
			f(t)
		})
	}
	run("crypto across languages", func(t *testing.T) { testCrypto(t, e) })
	run("a provider's link goes to its own web hosts only", func(t *testing.T) { testSafeHref(t, e) })
	run("the CSP and the same-origin relay hold", func(t *testing.T) { testSameOrigin(t, e) })
	run("a refused token names its provider", func(t *testing.T) { testRefusedToken(t, e) })
	run("paste a token read-only", func(t *testing.T) { testPasteReadOnly(t, e, pat) })
	run("read-only cap refuses a write in the page", func(t *testing.T) { testReadOnlyRefuses(t, e) })
	run("read & write opens exactly one issue", func(t *testing.T) { testOpenIssue(t, e) })
	var oauthTokens []string
	run("hubspot with OAuth rotates and re-stores", func(t *testing.T) { oauthTokens = testHubSpotOAuth(t, e) })
	run("read now results are a focusable region with readable headers", func(t *testing.T) { testReadNowResults(t, e) })
	run("an OAuth result from a link is refused", func(t *testing.T) { testForgedOAuthResultRefused(t, e) })
	run("reload keeps connections and app state", func(t *testing.T) { testReload(t, e) })
	run("skip links and a one-stop repository list", func(t *testing.T) { testSkipLinks(t, e) })
	run("labels and keyboard", func(t *testing.T) { testKeyboard(t, e) })
	run("no token in the clear", func(t *testing.T) { testNoSecrets(t, e, append([]string{pat}, oauthTokens...)) })
	run("a grant limited to one repository", func(t *testing.T) { testResourceLimit(t, e) })
	run("activity, and a narrowed cap narrows the next grant", func(t *testing.T) { testCapNarrowsAndActivity(t, e) })
	run("a standing read grant runs reads, renews and stops on revoke", func(t *testing.T) { testStandingReadGrant(t, e) })
	run("disconnect in another tab says not connected", func(t *testing.T) { testDisconnectInAnotherTab(t, e, pat) })
	run("disconnect revokes an OAuth token at the provider", func(t *testing.T) { testDisconnectRevokes(t, e) })
	run("disconnect", func(t *testing.T) { testDisconnect(t, e) })
	run("the gate hides the app", func(t *testing.T) { testGateHidesApp(t, e) })
	if len(e.audited) < 16 {
		t.Errorf("audited %d page states × viewports, want every state at both widths: %q", len(e.audited), e.audited)
	}
	t.Logf("audited (no overflow, 0 serious/critical axe violations): %s", strings.Join(e.audited, "; "))
	t.Logf("browser suite: %s", time.Since(start).Round(100*time.Millisecond))
}

// testCrypto: a grant sealed in Chromium (libsodium crypto_box_seal) opens
// in Go (grant.Open), and a rotated pair sealed in Go (grant.SealRotated)
// opens in Chromium (crypto_box_seal_open).
// testSafeHref: a URL from a provider's data (an issue's html_url) is
// linked only when it is https to one of the service's web_hosts from
// the catalog (GitHub's: github.com); every other row gets no link.
func testSafeHref(t *testing.T, e *browserEnv) {
	e.openCatalog()
	if got := eval[string](e, `pinned.catalog().then(c => JSON.stringify(c.byId.github.web_hosts))`); got != `["github.com"]` {
		t.Fatalf("the catalog's GitHub web_hosts are %s", got)
	}
	tests := []struct{ name, url, want string }{
		{"an issue on github.com", "https://github.com/octo/hello/issues/1", "https://github.com/octo/hello/issues/1"},
		{"the host in upper case", "https://GitHub.com/x", "https://github.com/x"},
		{"another https host", "https://evil.example/x", ""},
		{"a look-alike suffix", "https://github.com.evil.example/x", ""},
		{"a subdomain", "https://gist.github.com/x", ""},
		{"userinfo", "https://github.com@evil.example/x", ""},
		{"userinfo naming github.com", "https://x:y@github.com/x", ""},
		{"a backslash", "https://evil.example\\@github.com/x", ""},
		{"a port", "https://github.com:8443/x", ""},
		{"the default port spelt", "https://github.com:443/x", ""},
		{"a trailing dot", "https://github.com./x", ""},
		{"a percent-encoded host", "https://git%68ub.com/x", ""},
		{"http", "http://github.com/x", ""},
		{"javascript:", "javascript:alert(1)", ""},
		{"protocol-relative", "//github.com/x", ""},
		{"white space", "https://github.com/x y", ""},
		{"not a string", "", ""},
	}
	for _, tt := range tests {
		arg := fmt.Sprintf("%q", tt.url)
		if tt.url == "" {
			arg = "{}"
		}
		got := eval[string](e, `pinned.catalog().then(c => String(pinned.safeHref(`+arg+`, c.byId.github.web_hosts) ?? ""))`)
		if got != tt.want {
			t.Errorf("%s: safeHref(%s) = %q, want %q", tt.name, arg, got, tt.want)
		}
	}
	if got := eval[string](e, `String(pinned.safeHref("https://github.com/x") ?? "")`); got != "" {
		t.Errorf("without web hosts a link is kept: %q", got)
	}
}

func testCrypto(t *testing.T, e *browserEnv) {
	e.openCatalog()
	bot := e.st.BotKey.Public().String()
	exp := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	sealed := eval[string](e, fmt.Sprintf(`pinned._seal({v: 1, service: "github", access: "read", kind: "pat",
		secret: "sealed in chromium \u00e9\u2028", expires_at: %q, nonce: "chromium-nonce-0123456789", op: "get_viewer"}, %q)`, exp, bot))
	g, err := grant.Open(sealed, e.st.BotKey)
	if err != nil {
		t.Fatalf("a grant sealed in Chromium does not open in Go: %v", err)
	}
	if string(g.Secret) != "sealed in chromium é\u2028" || g.Service != "github" || g.Op != "get_viewer" || g.Nonce != "chromium-nonce-0123456789" {
		t.Fatalf("opened grant = %+v (secret %q)", g, string(g.Secret))
	}

	memberKey, err := grant.ParsePublicKey(eval[string](e, `pinned.memberPublicKey()`))
	if err != nil {
		t.Fatal(err)
	}
	rot, err := grant.SealRotated(&grant.Rotated{Service: "hubspot", Kind: grant.KindOAuth, Access: "sealed-in-go-access",
		Refresh: "sealed-in-go-refresh", TokenExpiresAt: exp}, memberKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := eval[map[string]any](e, `pinned._open(`+jsString(rot)+`)`)
	if got["access"] != "sealed-in-go-access" || got["refresh"] != "sealed-in-go-refresh" || got["token_expires_at"] != exp || got["kind"] != "oauth" {
		t.Fatalf("a pair sealed in Go opened in Chromium as %v", got)
	}
	// Sealed to another key: the page cannot open it.
	other, _ := grant.GenerateKey(nil)
	rot2, _ := grant.SealRotated(&grant.Rotated{Service: "hubspot", Kind: grant.KindOAuth, Access: "x"}, other.Public(), nil)
	if msg := eval[string](e, `pinned._open(`+jsString(rot2)+`).then(() => 'opened', (err) => 'refused: ' + err.message)`); !strings.HasPrefix(msg, "refused") {
		t.Fatalf("a box sealed to another key: %s", msg)
	}
}

// testSameOrigin: in the page, an inline script and a fetch to another
// origin are blocked; a page on another origin that posts a form to the
// relay is refused with 403 before anything reaches a bot.
func testSameOrigin(t *testing.T, e *browserEnv) {
	e.openCatalog()
	got := eval[string](e, `(async () => {
		const out = [];
		const s = document.createElement('script');
		s.textContent = 'window.__inline = 1';
		document.body.append(s);
		out.push(window.__inline === undefined ? 'inline blocked' : 'inline ran');
		try { await fetch('https://api.github.com/user'); out.push('fetch ran'); } catch (err) { out.push('fetch blocked'); }
		return out.join(', ');
	})()`)
	// (DevTools' own evaluation is exempt from the CSP, so eval cannot be
	// probed from here; TestSecurityHeaders checks the policy allows none.)
	if got != "inline blocked, fetch blocked" {
		t.Errorf("in the page: %s", got)
	}

	// Another origin (another loopback port) whose page posts to the relay.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" enctype="text/plain" action="%s/api/bots/demo-bot/ops">
			<input name='{"service":"github","op":"create_issue","args":{"owner":"pinned-tester","repo":"notes","title":"csrf"},"grant":"' value='x"}'></form>
			<script>document.getElementById('f').submit()</script>`, e.st.WebURL)
	}))
	defer evil.Close()
	before := strings.Count(e.webLog.String(), `"method":"POST","route":"/api/*","status":403`)
	e.do(chromedp.Navigate(evil.URL))
	e.waitFor("the refusal", `document.body && document.body.textContent.includes('cross_origin')`)
	// The access log line is written once the answer is out.
	after := before
	for deadline := time.Now().Add(3 * time.Second); after == before && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		after = strings.Count(e.webLog.String(), `"method":"POST","route":"/api/*","status":403`)
	}
	if after != before+1 {
		t.Errorf("pinned web logged %d refused relay posts, want %d", after-before, 1)
	}
	if !strings.Contains(e.webLog.String(), `"outcome":"cross_origin","cause":"Sec-Fetch-Site is same-site"`) {
		t.Error("the refusal is not logged with its reason")
	}
	if strings.Contains(e.webLog.String(), `"op":"create_issue"`) {
		t.Error("the cross-origin post reached the relay")
	}
}

func testPasteReadOnly(t *testing.T, e *browserEnv, pat string) {
	e.openCatalog()
	// Every service is listed with its host and what its ops read or write.
	for _, want := range []string{"api.github.com", "api.hubapi.com", "api.stripe.com", "api.linear.app", "api.dnsimple.com",
		`Open an issue titled "{title}" in {owner}/{repo}?`, "full_name, private, html_url"} {
		if !strings.Contains(e.text("#services"), want) {
			t.Errorf("the catalog does not show %q", want)
		}
	}
	if href := eval[string](e, `document.getElementById('pathelp-github').href`); href != "https://github.com/settings/personal-access-tokens/new" {
		t.Errorf("pat_help link = %q", href)
	}
	// HubSpot has an OAuth app at the broker, GitHub does not.
	if n := eval[int](e, `document.querySelectorAll('#oauth-hubspot').length + 10 * document.querySelectorAll('#oauth-github').length`); n != 1 {
		t.Errorf("Connect-with buttons: hubspot+10*github = %d, want 1", n)
	}
	e.do(chromedp.SendKeys(chromedp.ID("token-github"), pat), chromedp.Click(chromedp.ID("save-github")))
	e.waitFor("the viewer's login", `(document.querySelector('#connected-github .account') || {}).textContent === 'pinned-tester'`)
	if got := e.text("#connected-github"); !strings.Contains(got, "read-only") {
		t.Errorf("connected line = %q, want read-only (the default cap)", got)
	}
	viewer := 0
	for _, r := range githubRequests(e.st.Fake) {
		if r.Path == "/user" {
			viewer++
		}
	}
	if viewer != 1 {
		t.Errorf("the fake saw %d GET /user, want 1 (verify on save)", viewer)
	}

	e.st.Fake.Reset()
	e.open("/apps/github")
	e.waitFor("every repository", `document.getElementById('repo-count').textContent === '(`+fmt.Sprint(fakeapi.GitHubRepoCount)+`)'`)
	var pages []string
	for _, r := range githubRequests(e.st.Fake) {
		if r.Path == "/user/repos" {
			pages = append(pages, r.RawQuery)
		}
	}
	if len(pages) != 3 {
		t.Errorf("list_repos pages = %q, want 3 pages of 100 for %d repositories", pages, fakeapi.GitHubRepoCount)
	}
	// The sidecar pages (POST /v1/ops answers next): the app follows it.
	if by := eval[string](e, `document.getElementById('fetched').dataset.pagedBy`); by != "next" {
		t.Errorf("the app paged by %q, want next", by)
	}
	e.do(chromedp.Click(chromedp.CSS(`button[data-repo="pinned-tester/notes"]`)))
	e.waitFor("the repository's open issues", `document.querySelectorAll('#issues li.issue').length > 0`)
	if got := e.text("#repo-h"); got != "pinned-tester/notes" {
		t.Errorf("repository heading = %q", got)
	}
	// Links built from provider data are https to GitHub's web host or
	// nothing (testSafeHref has the hostile rows); the rendered issue
	// links are github.com's.
	if got := eval[string](e, `JSON.stringify(['https://github.com/x', 'javascript:alert(1)', 'JAVASCRIPT:x', 'data:text/html,x', '//evil.test', 'http://x'].map(u => pinned.safeHref(u, ['github.com'])))`); got != `["https://github.com/x",null,null,null,null,null]` {
		t.Errorf("safeHref = %s", got)
	}
	if got := eval[string](e, `[...document.querySelectorAll('#issues li.issue a')].map(a => a.getAttribute('href')).find(h => !(h || '').startsWith('https://github.com/')) ?? 'all github.com'`); got != "all github.com" {
		t.Errorf("an issue link points to %q", got)
	}
	e.audit("the GitHub app, a repository open")
}

func testReadOnlyRefuses(t *testing.T, e *browserEnv) {
	e.st.Fake.Reset()
	e.do(chromedp.SendKeys(chromedp.ID("issue-title"), "Refused under the read-only cap"), chromedp.Click(chromedp.ID("issue-submit")))
	e.waitFor("the refusal", `document.getElementById('issue-status').textContent.includes('read-only')`)
	time.Sleep(300 * time.Millisecond) // anything the click might have sent arrives
	if reqs := e.st.Fake.Requests(); len(reqs) != 0 {
		t.Fatalf("the fake recorded %d requests under the read-only cap, want none: first %s %s", len(reqs), reqs[0].Method, reqs[0].Path)
	}
	e.audit("the GitHub app, a write refused")
	// The cap is re-sealed to read & write in the catalog.
	e.openCatalog()
	e.do(chromedp.Click(chromedp.ID("cap-github-write")), chromedp.Click(chromedp.ID("savecap-github")))
	e.waitFor("the new cap", `(document.querySelector('#connected-github .cap-now') || {}).textContent === 'read & write'`)
}

func testOpenIssue(t *testing.T, e *browserEnv) {
	e.open("/apps/github")
	e.waitFor("the saved repository", `document.getElementById('repo-h').textContent === 'pinned-tester/notes' && document.querySelectorAll('#issues li.issue').length > 0`)
	title := "Opened from Chromium: a dark mode for the catalog"
	body := "First line of the body.\n\u200bSecond line, whole."
	e.do(chromedp.SetValue(chromedp.ID("issue-body"), body), chromedp.SendKeys(chromedp.ID("issue-title"), title))
	// The consent: the confirm line, target first, then the body whole,
	// labelled, its zero-width space shown as an escape.
	e.waitFor("the confirm line", `(document.querySelector('#confirm .confirm-line') || {}).textContent === `+
		jsString(`[GitHub: owner "pinned-tester", repo "notes"] Open an issue titled "`+title+`" in pinned-tester/notes?`))
	e.waitFor("the body in the consent", `document.querySelector('#confirm dt').textContent === 'body' && `+
		`document.querySelector('#confirm .consent-value').textContent === `+jsString("First line of the body.\n⟨U+200B⟩Second line, whole."))
	e.audit("the GitHub app, a consent shown")
	e.st.Fake.Reset()
	e.do(chromedp.Click(chromedp.ID("issue-submit")))
	e.waitFor("the new issue", `document.getElementById('issue-status').textContent.startsWith('Opened #')`)
	var posts []fakeapi.Request
	for _, r := range e.st.Fake.Requests() {
		if r.Method == http.MethodPost {
			posts = append(posts, r)
		}
	}
	if len(posts) != 1 || posts[0].Path != "/repos/pinned-tester/notes/issues" {
		t.Fatalf("POSTs at the fake = %d (%v), want exactly one to /repos/pinned-tester/notes/issues", len(posts), posts)
	}
	var sent map[string]any
	if err := json.Unmarshal(posts[0].Body, &sent); err != nil || sent["title"] != title || sent["body"] != body {
		t.Fatalf("POST body = %s, want title %q and body %q", posts[0].Body, title, body)
	}
	if first := e.text("#issues li.issue"); !strings.Contains(first, title) {
		t.Fatalf("first issue in the app = %q, want the new one", first)
	}
	e.screenshot("github-app.png")
	e.screenshotPhone("github-app-phone.png")
}

// testHubSpotOAuth connects HubSpot through the broker and the fake's
// OAuth pages, lists contacts, lets the sidecar rotate the expiring pair
// (the page re-stores it) and runs another op after the grace window.
// It returns the access tokens the fake saw, for the secrets check.
func testHubSpotOAuth(t *testing.T, e *browserEnv) []string {
	fake := e.st.Fake
	fake.SetOAuthLifetime(fakeapi.HubSpot, 70*time.Second) // stale 10 s after issue (60 s margin)
	e.openCatalog()
	e.do(chromedp.Click(chromedp.ID("oauth-hubspot")))
	e.waitFor("the OAuth connection", `!!document.querySelector('#connected-hubspot .account')`)
	if loc := eval[string](e, `location.href`); loc != e.st.WebURL+"/" {
		t.Errorf("after the flow the page is at %q: the fragment must be cleared at once", loc)
	}
	if got := e.text("#connected-hubspot"); !strings.Contains(got, "OAuth") || !strings.Contains(got, "read-only") {
		t.Errorf("connected line = %q", got)
	}
	runContacts := func(what string) {
		e.do(chromedp.SetValue(chromedp.ID("try-hubspot"), "list_contacts"), chromedp.Click(chromedp.ID("run-hubspot")))
		e.waitFor(what, `document.querySelectorAll('#result-list_contacts tbody tr').length > 0 && document.getElementById('status-hubspot').textContent.endsWith('done.')`)
	}
	runContacts("the contacts")
	_, refreshes := fake.TokenRequests(fakeapi.HubSpot)
	if refreshes != 0 {
		t.Fatalf("refreshes before the pair is stale = %d", refreshes)
	}

	// The sidecar's clock moves 75 s on: by its stated expiry the pair has
	// expired, so the next op rotates it first and the answer carries
	// `rotated`. The fake keeps issuing 70-second pairs, so from here on
	// every op rotates. (The grants the page mints still live: two
	// minutes plus the 30 s skew.)
	e.clock.Set(75 * time.Second)
	runContacts("the contacts after the rotation")
	if _, refreshes = fake.TokenRequests(fakeapi.HubSpot); refreshes != 1 {
		t.Fatalf("refreshes = %d, want 1", refreshes)
	}
	if n := eval[int](e, `pinned.rotations`); n != 1 {
		t.Fatalf("the page adopted %d rotated pairs, want 1", n)
	}

	// Past the grace window (3 s here), with the op failing after its
	// rotation: the error answer carries the only copy of the live pair.
	fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Host != fakeapi.HostHubSpot || r.URL.Path != "/crm/v3/objects/contacts" {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"status":"error","message":"The contacts are not here today","category":"OBJECT_NOT_FOUND"}`))
		return true
	})
	e.clock.Set(85 * time.Second)
	e.do(chromedp.Click(chromedp.ID("run-hubspot")))
	e.waitFor("the failed op", `document.getElementById('status-hubspot').textContent.includes('not here today')`)
	fake.SetHandler(nil)
	if n := eval[int](e, `pinned.rotations`); n != 2 {
		t.Fatalf("the page adopted %d rotated pairs, want 2 (one on the error answer)", n)
	}
	// Past the grace window again: the op works only because the page
	// re-stored the pair from the error answer (the one before is burned).
	e.clock.Set(95 * time.Second)
	runContacts("the contacts after the grace window")
	if _, refreshes = fake.TokenRequests(fakeapi.HubSpot); refreshes != 3 {
		t.Fatalf("refreshes = %d, want 3 (one per op since the pair expired)", refreshes)
	}
	e.screenshot("catalog.png")

	var tokens []string
	for _, r := range fake.Requests() {
		if r.Host == fakeapi.HostHubSpot {
			if a := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "); a != "" && !slices.Contains(tokens, a) {
				tokens = append(tokens, a)
			}
		}
	}
	if len(tokens) < 2 {
		t.Fatalf("HubSpot access tokens seen = %d, want the first and the rotated one", len(tokens))
	}
	return tokens
}

// testForgedOAuthResultRefused: the OAuth result rides in the fragment
// of a URL anyone can write. A link to the catalog carrying another
// account's token (which the fake accepts) — without a flow id, or with a
// made-up one — must connect nothing: before the flow binding it replaced
// the member's GitHub connection with the attacker's account, read &
// write, and the member's bots wrote into it.
func testForgedOAuthResultRefused(t *testing.T, e *browserEnv) {
	forged := fakeapi.OAuthToken(fakeapi.GitHub)
	e.openCatalog()
	before := e.text("#connected-github")
	if before == "" {
		t.Fatal("github is not connected before the attack")
	}
	for _, path := range []string{
		"/#service=github&access_token=" + forged + "&cap=write&token_type=Bearer",
		"/?flow=AAAAAAAAAAAAAAAAAAAAAA#service=github&access_token=" + forged + "&cap=write&token_type=Bearer",
	} {
		e.do(chromedp.Navigate("about:blank")) // a link opens a new document
		e.open(path)
		e.waitFor("the refusal", `document.getElementById('page-status').textContent.startsWith('Refused an OAuth result')`)
		if loc := eval[string](e, `location.href`); loc != e.st.WebURL+"/" {
			t.Errorf("the forged result stays in the URL: %q", loc)
		}
		if got := e.text("#connected-github"); got != before {
			t.Errorf("the GitHub connection changed: %q, was %q", got, before)
		}
	}
	for _, r := range e.st.Fake.Requests() {
		if strings.Contains(r.Header.Get("Authorization"), forged) {
			t.Errorf("the forged token reached the provider: %s %s", r.Method, r.Path)
		}
	}
}

func testReload(t *testing.T, e *browserEnv) {
	e.do(chromedp.Reload())
	e.waitFor("the catalog after a reload", `document.getElementById('services').getAttribute('aria-busy') === 'false'`)
	for _, id := range []string{"github", "hubspot"} {
		if n := eval[int](e, `document.querySelectorAll('#connected-`+id+`').length`); n != 1 {
			t.Errorf("%s is not connected after a reload", id)
		}
	}
	// The app shows the last state from its events while the fetch is
	// still on its way: the fake holds /user/repos for a second.
	e.st.Fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/user/repos" {
			time.Sleep(time.Second)
		}
		return false
	})
	defer e.st.Fake.SetHandler(nil)
	e.open("/apps/github")
	e.waitFor("the saved state", `document.getElementById('repo-count').textContent === '(`+fmt.Sprint(fakeapi.GitHubRepoCount)+`)' && document.getElementById('page-status').textContent === 'Fetching repositories…'`)
	if first := e.text("#issues li.issue"); !strings.Contains(first, "Opened from Chromium") {
		t.Errorf("the saved issues do not show the one opened: first is %q", first)
	}
	e.waitFor("the fresh fetch", `document.getElementById('page-status').textContent.endsWith('repositories.')`)
}

// testKeyboard checks every control has a label and that Tab reaches each.
func testKeyboard(t *testing.T, e *browserEnv) {
	const unlabeled = `[...document.querySelectorAll('a, button, input, select, textarea')].filter(n => !n.closest('[hidden]')).filter(n => {
		if (n.matches('input, select, textarea')) return !(n.labels && n.labels.length) && !n.getAttribute('aria-label');
		return !(n.textContent.trim() || n.getAttribute('aria-label'));
	}).map(n => n.outerHTML.slice(0, 80))`
	// A control out of the Tab order on purpose (tabindex -1: the
	// repository list is one Tab stop, testSkipLinks) is left out.
	const controls = `[...document.querySelectorAll('a[href], button, input, select, textarea')].filter(n => !n.closest('[hidden]') && !n.disabled && n.getAttribute('tabindex') !== '-1').length`
	for _, page := range []string{"/", "/apps/github"} {
		e.open(page)
		if page == "/" {
			e.waitFor("the catalog", `document.getElementById('services').getAttribute('aria-busy') === 'false'`)
		} else {
			e.waitFor("the app", `document.getElementById('app').dataset.loaded === 'true'`)
		}
		if bad := eval[[]string](e, unlabeled); len(bad) > 0 {
			t.Errorf("%s: controls without a label: %q", page, bad)
		}
		// Tab through the page, collecting what gets focus.
		n := eval[int](e, controls)
		e.do(chromedp.Evaluate[chromedp.Void](`window.__seen = new Set(); document.addEventListener('focusin', (ev) => window.__seen.add(ev.target), true); document.activeElement && document.activeElement.blur()`))
		keys := make([]chromedp.Action[chromedp.Void], 0, n+2)
		for i := 0; i < n+2; i++ {
			keys = append(keys, chromedp.KeyEvent(kb.Tab))
		}
		e.do(keys...)
		missed := eval[[]string](e, `[...document.querySelectorAll('a[href], button, input, select, textarea')].filter(n => !n.closest('[hidden]') && !n.disabled && n.getAttribute('tabindex') !== '-1')
			.filter(n => !window.__seen.has(n) && !(n.type === 'radio' && [...document.getElementsByName(n.name)].some(r => window.__seen.has(r)))).map(n => n.id || n.outerHTML.slice(0, 60))`)
		if len(missed) > 0 {
			t.Errorf("%s: Tab never reached %d of %d controls, e.g. %q", page, len(missed), n, missed[:min(5, len(missed))])
		}
	}
}

// testNoSecrets: no token string in the DOM, in localStorage or
// sessionStorage, in IndexedDB in the clear, in any request the browser
// sent, or in pinned web's log.
func testNoSecrets(t *testing.T, e *browserEnv, secrets []string) {
	e.openCatalog()
	dom := eval[string](e, `document.documentElement.outerHTML + [...document.querySelectorAll('input, textarea')].map(n => n.value).join('\n')`)
	storage := eval[string](e, `JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])`)
	dump := eval[string](e, `new Promise((resolve, reject) => {
		const req = indexedDB.open('pinned');
		req.onerror = () => reject(req.error);
		req.onsuccess = () => {
			const db = req.result, out = {}, names = [...db.objectStoreNames];
			const t = db.transaction(names, 'readonly');
			for (const n of names) t.objectStore(n).getAll().onsuccess = (ev) => { out[n] = ev.target.result; };
			t.oncomplete = () => resolve(JSON.stringify(out, (k, v) => v instanceof Uint8Array ? Array.from(v) : v));
		};
	})`)
	if !strings.Contains(dump, `"connections":[{`) {
		t.Fatalf("IndexedDB holds no connection: %.200s", dump)
	}
	e.mu.Lock()
	requests := strings.Join(e.requests, "\n")
	e.mu.Unlock()
	if !strings.Contains(requests, `"grant":"`) {
		t.Fatal("the request recorder saw no relayed grant")
	}
	for _, s := range secrets {
		for _, where := range []struct{ name, text string }{
			{"the DOM", dom}, {"localStorage/sessionStorage", storage}, {"IndexedDB", dump},
			{"a request the browser sent", requests}, {"pinned web's log", e.webLog.String()},
		} {
			if strings.Contains(where.text, s) {
				t.Errorf("a token (%.8s…) appears in %s", s, where.name)
			}
		}
	}
	if storage != "[[],[]]" {
		t.Errorf("localStorage/sessionStorage = %s, want both empty", storage)
	}
}

func testDisconnect(t *testing.T, e *browserEnv) {
	e.openCatalog()
	e.do(chromedp.Click(chromedp.ID("disconnect-github")))
	e.waitFor("GitHub disconnected", `!!document.getElementById('form-github')`)
	e.waitFor("where to revoke GitHub's token", `document.body.innerText.includes('The token is still valid at GitHub (a pasted token cannot be revoked from here): revoke it at https://github.com/settings/personal-access-tokens/new.')`)
	e.do(chromedp.Click(chromedp.ID("disconnect-hubspot")))
	e.waitFor("HubSpot disconnected", `!!document.getElementById('form-hubspot')`)
	// HubSpot declares no revocation endpoint: nothing is asked of the
	// broker, and the page says where to revoke.
	e.waitFor("where to revoke HubSpot's token", `document.body.innerText.includes('The token is still valid at HubSpot (HubSpot cannot be revoked through this broker)')`)
	e.do(chromedp.Reload())
	e.waitFor("the catalog", `document.getElementById('services').getAttribute('aria-busy') === 'false'`)
	if n := eval[int](e, `document.querySelectorAll('.connected').length`); n != 0 {
		t.Errorf("%d connections shown after disconnecting", n)
	}
	left := eval[int](e, `new Promise((resolve) => { indexedDB.open('pinned').onsuccess = (ev) => {
		const db = ev.target.result, t = db.transaction(['connections', 'events']);
		let n = 0; t.objectStore('connections').count().onsuccess = (x) => { n += x.target.result; };
		t.objectStore('events').count().onsuccess = (x) => { n += x.target.result; };
		t.oncomplete = () => resolve(n); }; })`)
	if left != 0 {
		t.Errorf("IndexedDB still holds %d connections or app events", left)
	}
	e.open("/apps/github")
	e.waitFor("the gate", `!document.getElementById('gate').hidden`)
}

// testDisconnectRevokes connects Linear with OAuth and disconnects it:
// the page seals the pair to the broker's revoke key, the provider fake
// sees both tokens revoked (RFC 7009), the access token stops working,
// and the page says so.
func testDisconnectRevokes(t *testing.T, e *browserEnv) {
	fake := e.st.Fake
	e.openCatalog()
	e.do(chromedp.Click(chromedp.ID("oauth-linear")))
	e.waitFor("the Linear OAuth connection", `!!document.getElementById('connected-linear')`)
	e.do(chromedp.Click(chromedp.ID("disconnect-linear")))
	e.waitFor("Linear disconnected and revoked", `document.body.innerText.includes('Disconnected and revoked at Linear: the token no longer works.')`)
	rv := fake.Revocations(fakeapi.Linear)
	if len(rv) != 2 || rv[0].TokenTypeHint != "refresh_token" || rv[1].TokenTypeHint != "access_token" || !rv[0].Revoked || !rv[1].Revoked {
		t.Fatalf("the fake saw revocations %+v, want the refresh then the access token", rv)
	}
	req, _ := http.NewRequest(http.MethodPost, "https://api.linear.app/graphql", strings.NewReader(`{"query":"query Viewer { viewer { id name displayName email organization { id name urlKey } } }"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+rv[1].Token)
	resp, err := fake.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the revoked access token: viewer %d, want 401", resp.StatusCode)
	}
	if l := e.webLog.String(); strings.Contains(l, rv[1].Token) || strings.Contains(l, rv[0].Token) {
		t.Error("a Linear token is in pinned web's log")
	}
}
