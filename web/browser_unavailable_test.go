package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"aead.dev/minisign"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/broker/regsync"
	"github.com/elevenmessenger/pinned/internal/demo/webstack"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/registry/snapshot"
)

// TestBrowserCatalogUnavailable: the broker syncs a signed snapshot (from
// a local HTTPS server) holding a service this instance's embedded
// registry lacks. In a real Chromium the catalog lists it under "Not
// available on this instance yet", with no connect or run control, and
// POST /v1/ops for it answers unknown_service with nothing sent.
func TestBrowserCatalogUnavailable(t *testing.T) {
	chromium := findChromium(t)
	const newID = "zzlatecomer"
	first := registry.Default().IDs()[0]
	raw := registry.Default().Raw(first)
	late := bytes.Replace(raw, []byte(`"id": "`+first+`"`), []byte(`"id": "`+newID+`"`), 1)
	late = bytes.Replace(late, []byte(`"name": "`), []byte(`"name": "Latecomer `), 1)
	files := fstest.MapFS{newID + ".json": {Data: late}}
	for _, id := range registry.Default().IDs() {
		files[id+".json"] = &fstest.MapFile{Data: registry.Default().Raw(id)}
	}
	snap, err := snapshot.Build(files, 7)
	if err != nil {
		t.Fatal(err)
	}
	pub, priv, _ := minisign.GenerateKey(nil)
	archive := snap.Marshal()
	sig, err := snapshot.Sign(priv, archive)
	if err != nil {
		t.Fatal(err)
	}
	pubSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/snapshot.json":
			_, _ = w.Write(archive)
		case "/snapshot.json.minisig":
			_, _ = w.Write(sig)
		default:
			http.NotFound(w, r)
		}
	}))
	defer pubSrv.Close()
	syncer, err := regsync.New(regsync.Config{URL: pubSrv.URL + "/snapshot.json", PublicKey: pub, Client: pubSrv.Client(), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if err := syncer.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}

	webLog, sidecarLog := &testutil.SyncBuffer{}, &testutil.SyncBuffer{}
	st, err := webstack.Start(context.Background(), webstack.Options{
		WebLog: webLog, SidecarLog: sidecarLog, RegistrySync: syncer,
		CacheDir: filepath.Join(os.TempDir(), "pinned-test-wazero-cache"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pinned web log:\n%s\nsidecar log:\n%s", webLog.String(), sidecarLog.String())
		}
	})

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	e := &browserEnv{t: t, st: st, ctx: ctx, webLog: webLog}
	// Start the browser on ctx itself: its lifetime is the first
	// context that runs it.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	e.openCatalog()
	e.waitFor("the unavailable list", `document.getElementById('unavailable-`+newID+`')`)
	item := e.text("#unavailable-" + newID)
	if !strings.Contains(item, "Latecomer") || !strings.Contains(item, "not available on this instance yet") {
		t.Fatalf("the catalog shows %q", item)
	}
	if h := e.text("#h-unavailable"); h != "Not available on this instance yet" {
		t.Fatalf("heading %q", h)
	}
	// It is not a service of the catalog: no section, no connect panel.
	if n := eval[float64](e, `document.querySelectorAll('#service-`+newID+`, #connect-`+newID+`, #run-`+newID+`').length`); n != 0 {
		t.Fatalf("%v connect or run controls for %s", n, newID)
	}
	// Every embedded service is still listed as usual, none as unavailable.
	if n := eval[float64](e, `document.querySelectorAll('#unavailable li').length`); n != 1 {
		t.Fatalf("%v unavailable services, want 1", n)
	}
	if n := eval[float64](e, `document.querySelectorAll('section.service').length`); int(n) != len(registry.Default().IDs()) {
		t.Fatalf("%v services, want %d", n, len(registry.Default().IDs()))
	}
	e.screenshot("catalog-unavailable.png")

	// The sidecar never runs it, whatever the broker serves.
	st.Fake.Reset()
	body, _ := json.Marshal(map[string]any{"service": newID, "op": "get_viewer", "args": map[string]any{}, "grant": "x"})
	req, _ := http.NewRequest(http.MethodPost, st.SidecarURL+"/v1/ops", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+st.CallerToken)
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(answer), `"code":"unknown_service"`) {
		t.Fatalf("POST /v1/ops for %s: %d %s, want 400 unknown_service", newID, resp.StatusCode, answer)
	}
	if n := len(st.Fake.Requests()); n != 0 {
		t.Fatalf("the provider fake received %d requests", n)
	}
}
