package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMain lets runRSS start this test binary as its load process, as
// `benchtool rss` starts `benchtool rss-load`.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "rss-load" {
		if err := runLoad(os.Stdin, os.Stdout); err != nil {
			os.Stderr.WriteString("rss-load: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRSSTwoProcesses: a small run of benchtool rss through a real sidecar
// and the provider fake in the load process. Every op succeeds, the one
// past the limit is busy, the reading is taken with every op held (a
// goroutine of the sidecar's per op at least), and both processes' peaks
// are measured.
func TestRSSTwoProcesses(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("benchtool rss reads /proc (Linux)")
	}
	const n = 20
	out := filepath.Join(t.TempDir(), "rss.json")
	if err := runRSS(io.Discard, out, n, 100*time.Millisecond, ""); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var r rssResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Statuses["200 "] != n || len(r.Statuses) != 1 {
		t.Errorf("answers %v, want %d × 200", r.Statuses, n)
	}
	if r.ExtraStatus != 503 || r.ExtraCode != "busy" {
		t.Errorf("op past the limit: HTTP %d %q, want 503 busy", r.ExtraStatus, r.ExtraCode)
	}
	if r.UpstreamPeak != n || r.HeldPeak != n {
		t.Errorf("upstream saw %d, held %d at once; want %d", r.UpstreamPeak, r.HeldPeak, n)
	}
	if r.Held.Goroutines < r.Baseline.Goroutines+n {
		t.Errorf("goroutines while held %d, before %d: fewer than one per op in flight", r.Held.Goroutines, r.Baseline.Goroutines)
	}
	if r.BaselineRSS <= 0 || r.PeakRSS < r.BaselineRSS || r.LoadPeakRSS <= 0 || r.Held.PSS <= 0 || r.Held.HeapInuse <= 0 {
		t.Errorf("memory not measured: %s", b)
	}
}
