package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"aead.dev/minisign"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/broker/regsync"
	itestutil "github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/registry/snapshot"
)

// publisher is a registry repository's release server: a local HTTPS
// server answering the snapshot archive and its signature.
type publisher struct {
	mu           sync.Mutex
	archive, sig []byte
	status       int
	srv          *httptest.Server
	pub          minisign.PublicKey
	priv         minisign.PrivateKey
	otherPriv    minisign.PrivateKey
}

func newPublisher(t *testing.T) *publisher {
	p := &publisher{status: http.StatusOK}
	var err error
	if p.pub, p.priv, err = minisign.GenerateKey(nil); err != nil {
		t.Fatal(err)
	}
	if _, p.otherPriv, err = minisign.GenerateKey(nil); err != nil {
		t.Fatal(err)
	}
	p.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.status != http.StatusOK {
			w.WriteHeader(p.status)
			return
		}
		switch r.URL.Path {
		case "/registry/snapshot.json":
			_, _ = w.Write(p.archive)
		case "/registry/snapshot.json.minisig":
			_, _ = w.Write(p.sig)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *publisher) serve(archive, sig []byte, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.archive, p.sig, p.status = archive, sig, status
}

// snapshotOf builds a snapshot of the given embedded manifests plus extra
// files.
func snapshotOf(t *testing.T, version uint64, ids []string, extra map[string][]byte) *snapshot.Snapshot {
	t.Helper()
	files := fstest.MapFS{}
	for _, id := range ids {
		files[id+".json"] = &fstest.MapFile{Data: registry.Default().Raw(id)}
	}
	for name, data := range extra {
		files[name] = &fstest.MapFile{Data: data}
	}
	s, err := snapshot.Build(files, version)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newcomer is a manifest the embedded registry does not have: a service
// the registry repository added after this binary was built.
func newcomer(t *testing.T) []byte {
	first := registry.Default().IDs()[0]
	raw := registry.Default().Raw(first)
	out := bytes.Replace(raw, []byte(`"id": "`+first+`"`), []byte(`"id": "zzlatecomer"`), 1)
	if bytes.Equal(out, raw) {
		t.Fatalf("cannot rename %s", first)
	}
	return out
}

// TestRegistrySync: the broker syncs a signed snapshot from a local HTTPS
// server and serves it at GET /registry; it refuses a bad signature, a
// rolled-back version, a tampered manifest, other content under a held
// version and a failed fetch, each time keeping the last good snapshot,
// and its metrics and log say why.
func TestRegistrySync(t *testing.T) {
	p := newPublisher(t)
	logs := &itestutil.SyncBuffer{}
	promReg := prometheus.NewRegistry()
	syncer, err := regsync.New(regsync.Config{
		URL: p.srv.URL + "/registry/snapshot.json", PublicKey: p.pub, Client: p.srv.Client(),
		Logger: zerolog.New(logs), Metrics: promReg,
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{StateKey: bytes.Repeat([]byte{7}, StateKeySize), PublicURL: "https://connect.example.test", RegistrySync: syncer})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()

	getRegistry := func(t *testing.T) (etag string, ids []string, hdr http.Header) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/registry")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var doc struct {
			Digest   string `json:"digest"`
			Services []struct {
				ID string `json:"id"`
			} `json:"services"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(body, &doc) != nil {
			t.Fatalf("GET /registry: %d %.200s", resp.StatusCode, body)
		}
		if resp.Header.Get("ETag") != `"`+doc.Digest+`"` {
			t.Fatalf("ETag %s for digest %s", resp.Header.Get("ETag"), doc.Digest)
		}
		for _, s := range doc.Services {
			ids = append(ids, s.ID)
		}
		return doc.Digest, ids, resp.Header
	}

	// Before the first sync: the embedded registry.
	if d, _, _ := getRegistry(t); d != registry.Default().Digest() {
		t.Fatalf("before a sync GET /registry serves %s, want the embedded %s", d, registry.Default().Digest())
	}
	ids := registry.Default().IDs()[:3]
	v1 := snapshotOf(t, 1, ids, nil)
	v1Archive := v1.Marshal()
	v1Sig, _ := snapshot.Sign(p.priv, v1Archive)
	p.serve(v1Archive, v1Sig, 200)
	if err := syncer.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d, got, _ := getRegistry(t); d != v1.Digest || strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Fatalf("after v1: %s %v", d, got)
	}
	v2 := snapshotOf(t, 2, ids, map[string][]byte{"zzlatecomer.json": newcomer(t)})
	v2Archive := v2.Marshal()
	v2Sig, _ := snapshot.Sign(p.priv, v2Archive)
	p.serve(v2Archive, v2Sig, 200)
	if err := syncer.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, got, hdr := getRegistry(t)
	if got[len(got)-1] != "zzlatecomer" || hdr.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(hdr.Get("Cache-Control"), "max-age=") {
		t.Fatalf("after v2: %v %v", got, hdr)
	}
	// Unchanged: the same snapshot again.
	if err := syncer.Sync(context.Background()); err != nil {
		t.Fatalf("the same snapshot again: %v", err)
	}

	// v3 changes one manifest; the attacks below serve variants of it.
	v3 := snapshotOf(t, 3, ids, map[string][]byte{"zzlatecomer.json": bytes.Replace(newcomer(t), []byte(`"name": "`), []byte(`"name": "New `), 1)})
	v3Archive := v3.Marshal()
	tampered := cloneSnap(v3)
	tampered.Entries[0].Content = bytes.Replace(tampered.Entries[0].Content, []byte(`"host": "`), []byte(`"host": "evil.`), 1)
	tamperedArchive := tampered.Marshal()
	sameVersion := snapshotOf(t, 2, ids, nil)
	sameArchive := sameVersion.Marshal()
	sameSig, _ := snapshot.Sign(p.priv, sameArchive)
	tests := []struct {
		name    string
		archive []byte
		sig     []byte
		status  int
		outcome string
	}{
		{name: "signed by another key", archive: v3Archive, sig: minisign.Sign(p.otherPriv, v3Archive), status: 200, outcome: "bad_signature"},
		{name: "the signature of v2 over v3", archive: v3Archive, sig: v2Sig, status: 200, outcome: "bad_signature"},
		{name: "a rolled-back version, validly signed", archive: v1Archive, sig: v1Sig, status: 200, outcome: "rolled_back"},
		{name: "other content under the held version", archive: sameArchive, sig: sameSig, status: 200, outcome: "rolled_back"},
		{name: "a tampered manifest under a valid signature", archive: tamperedArchive, sig: minisign.Sign(p.priv, tamperedArchive), status: 200, outcome: "tampered"},
		{name: "the publisher answers 500", status: 500, outcome: "fetch_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.serve(tt.archive, tt.sig, tt.status)
			err := syncer.Sync(context.Background())
			if regsync.Outcome(err) != tt.outcome {
				t.Fatalf("Sync = %v, want %s", err, tt.outcome)
			}
			if d, _, _ := getRegistry(t); d != v2.Digest {
				t.Fatalf("GET /registry serves %s after a refused sync, want the last good %s", d, v2.Digest)
			}
			if c := syncer.Current(); c == nil || c.Snapshot.Version != 2 {
				t.Fatalf("current %+v, want version 2", c)
			}
			if !strings.Contains(logs.String(), `"outcome":"`+tt.outcome+`"`) {
				t.Fatalf("the log does not say %s:\n%s", tt.outcome, logs.String())
			}
			if m := gather(t, promReg); !strings.Contains(m, `pinned_broker_registry_syncs_total{outcome="`+tt.outcome+`"} `) {
				t.Fatalf("no pinned_broker_registry_syncs_total{outcome=%q}:\n%s", tt.outcome, m)
			}
		})
	}
	// Then the real v3 is taken.
	v3Sig, _ := snapshot.Sign(p.priv, v3Archive)
	p.serve(v3Archive, v3Sig, 200)
	if err := syncer.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	etag, _, _ := getRegistry(t)
	if etag != v3.Digest {
		t.Fatalf("after v3: %s", etag)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/registry", nil)
	req.Header.Set("If-None-Match", `"`+v3.Digest+`"`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Fatalf("If-None-Match of the served digest: %d, want 304", resp.StatusCode)
	}
	metrics := gather(t, promReg)
	for _, want := range []string{
		`pinned_broker_registry_snapshot_version 3`,
		`pinned_broker_registry_snapshot_info{digest="` + v3.Digest + `"} 1`,
		`pinned_broker_registry_syncs_total{outcome="ok"} 3`,
		`pinned_broker_registry_syncs_total{outcome="unchanged"} 1`,
		`pinned_broker_registry_syncs_total{outcome="rolled_back"} 2`,
		`pinned_broker_registry_last_success_timestamp_seconds `,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q:\n%s", want, metrics)
		}
	}
}

// TestRegistrySyncRefusesBadConfig: plain http, a URL without a host and
// the development key (whose secret is in the repository) are refused.
func TestRegistrySyncRefusesBadConfig(t *testing.T) {
	pub, _, _ := minisign.GenerateKey(nil)
	for _, u := range []string{"http://registry.example.test/snapshot.json", "snapshot.json", "https://"} {
		if _, err := regsync.New(regsync.Config{URL: u, PublicKey: pub}); err == nil {
			t.Errorf("regsync.New took %q", u)
		}
	}
	_, _, devText := registry.EmbeddedSnapshot()
	dev, err := snapshot.ParsePublicKey(devText)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := regsync.New(regsync.Config{URL: "https://registry.example.test/snapshot.json", PublicKey: dev}); err == nil || !strings.Contains(err.Error(), "development key") {
		t.Errorf("regsync.New with the development key: %v", err)
	}
}

func cloneSnap(s *snapshot.Snapshot) *snapshot.Snapshot {
	c := &snapshot.Snapshot{Version: s.Version, Digest: s.Digest}
	for _, e := range s.Entries {
		c.Entries = append(c.Entries, snapshot.Entry{File: e.File, SHA256: e.SHA256, Content: bytes.Clone(e.Content)})
	}
	return c
}

func gather(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}
