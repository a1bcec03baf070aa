package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elevenmessenger/pinned/secret"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/sidecar"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// rssResult is what `benchtool rss` measures.
type rssResult struct {
	InFlight      int            `json:"in_flight"`
	HoldMS        int64          `json:"hold_ms"`
	Statuses      map[string]int `json:"statuses"`
	ExtraStatus   int            `json:"extra_status"` // the op sent past the limit
	ArrivalMS     []float64      `json:"arrival_ms"`   // when ops reached the upstream: first, median, 90th percentile, last
	ExtraCode     string         `json:"extra_code"`
	BaselineRSS   int64          `json:"baseline_rss_bytes"` // after the engine and sidecar are up
	PeakRSS       int64          `json:"peak_rss_bytes"`     // VmHWM of the whole process
	ElapsedMS     int64          `json:"elapsed_ms"`
	UpstreamPeak  int            `json:"upstream_requests"`
	RampMS        int64          `json:"ramp_ms"`   // until the upstream had seen every op
	HeldPeak      int            `json:"held_peak"` // most answers held at once by the upstream
	Note          string         `json:"note"`
	GoMaxProcs    int            `json:"gomaxprocs"`
	MaxConcurrent int            `json:"sidecar_max_concurrency"`
}

// vmStatus reads a "Vm..." line of /proc/self/status in bytes.
func vmStatus(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return -1
}

// runRSS runs n viewer ops at once through a real sidecar (concurrency
// limit n) against the provider fake, whose answers are held for hold;
// when all n are in flight it sends one more, which must get busy. The
// whole process — fake, sidecar and load generator — is measured, so the
// figure is an upper bound for the sidecar alone.
func runRSS(out string, n int, hold time.Duration) error {
	fake, err := fakeapi.New()
	if err != nil {
		return err
	}
	defer fake.Close()
	var held, heldPeak atomic.Int64
	var arrMu sync.Mutex
	var arrivals []time.Duration
	var start time.Time
	fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/user" {
			arrMu.Lock()
			arrivals = append(arrivals, time.Since(start))
			arrMu.Unlock()
			if h := held.Add(1); h > heldPeak.Load() {
				heldPeak.Store(h)
			}
			select {
			case <-time.After(hold):
			case <-r.Context().Done():
			}
			held.Add(-1)
		}
		return false // the fake answers normally
	})
	cache, _ := os.UserCacheDir()
	eng, err := host.New(context.Background(), host.Config{
		Override: &host.Override{Addr: fake.Addr(), CAPEM: fake.CACertPEM()},
		CacheDir: cache + "/pinned/wazero",
		Timeout:  30 * time.Second,
	})
	if err != nil {
		return err
	}
	defer eng.Close(context.Background())
	key, err := grant.GenerateKey(nil)
	if err != nil {
		return err
	}
	srv, err := sidecar.New(sidecar.Config{Engine: eng, Key: key, MaxConcurrency: n, WriteTimeout: time.Minute})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Serve(ctx, ln)
	url := "http://" + ln.Addr().String() + "/v1/ops"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n + 10, MaxConnsPerHost: 0}, Timeout: time.Minute}

	body := func() ([]byte, error) {
		g, err := grant.Seal(&grant.Grant{Service: "github", Access: "read", Kind: "pat",
			Secret: secret.Secret(fakeapi.Token("github")), ExpiresAt: time.Now().Add(2 * time.Minute)}, key.Public(), nil)
		if err != nil {
			return nil, err
		}
		return json.Marshal(map[string]any{"service": "github", "op": "get_viewer", "args": map[string]any{}, "grant": g})
	}
	bodies := make([][]byte, n+1)
	for i := range bodies {
		if bodies[i], err = body(); err != nil {
			return err
		}
	}
	res := rssResult{InFlight: n, HoldMS: hold.Milliseconds(), Statuses: map[string]int{}, BaselineRSS: vmStatus("VmRSS"),
		MaxConcurrent: n, Note: "peak RSS of one process holding the provider fake, the sidecar and the load generator"}
	post := func(b []byte) (int, string) {
		resp, err := client.Post(url, "application/json", bytes.NewReader(b))
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e.Error.Code
	}
	start = time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(b []byte) {
			defer wg.Done()
			st, code := post(b)
			mu.Lock()
			res.Statuses[fmt.Sprintf("%d %s", st, code)]++
			mu.Unlock()
		}(bodies[i])
	}
	// Once every op holds a slot (the upstream has seen them all), one more.
	for deadline := time.Now().Add(20 * time.Second); len(fake.Requests()) < n && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	res.UpstreamPeak = len(fake.Requests())
	res.RampMS = time.Since(start).Milliseconds()
	res.ExtraStatus, res.ExtraCode = post(bodies[n])
	wg.Wait()
	res.ElapsedMS = time.Since(start).Milliseconds()
	res.PeakRSS = vmStatus("VmHWM")
	res.HeldPeak = int(heldPeak.Load())
	arrMu.Lock()
	slices.Sort(arrivals)
	for _, q := range []float64{0, 0.5, 0.9, 1} {
		if len(arrivals) > 0 {
			i := int(q * float64(len(arrivals)-1))
			res.ArrivalMS = append(res.ArrivalMS, float64(arrivals[i].Microseconds())/1000)
		}
	}
	arrMu.Unlock()
	res.GoMaxProcs = 0
	b, _ := json.MarshalIndent(res, "", "  ")
	fmt.Printf("%s\n", b)
	return os.WriteFile(out, append(b, '\n'), 0o644)
}
