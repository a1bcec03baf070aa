package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
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

// rssResult is what `benchtool rss` measures. The sidecar and its engine
// run in one process (the product, measured); the provider fake and the
// load generator run in a second process (the harness), measured apart.
type rssResult struct {
	InFlight      int            `json:"in_flight"`
	HoldMS        int64          `json:"hold_ms"`
	Statuses      map[string]int `json:"statuses"`
	ExtraStatus   int            `json:"extra_status"` // the op sent past the limit
	ArrivalMS     []float64      `json:"arrival_ms"`   // when ops reached the upstream: first, median, 90th percentile, last
	ExtraCode     string         `json:"extra_code"`
	BaselineRSS   int64          `json:"baseline_rss_bytes"` // sidecar process, after the engine and sidecar are up
	PeakRSS       int64          `json:"peak_rss_bytes"`     // sidecar process, VmHWM
	ElapsedMS     int64          `json:"elapsed_ms"`
	UpstreamPeak  int            `json:"upstream_requests"`
	RampMS        int64          `json:"ramp_ms"`   // until the upstream had seen every op
	HeldPeak      int            `json:"held_peak"` // most answers held at once by the upstream
	Note          string         `json:"note"`
	GoMaxProcs    int            `json:"gomaxprocs"`
	MaxConcurrent int            `json:"sidecar_max_concurrency"`

	// The sidecar process before the load and at the moment every op
	// was held upstream; NumGC counts the collections in between.
	Baseline memSnapshot `json:"baseline"`
	Held     memSnapshot `json:"held"`
	NumGC    int         `json:"num_gc"`
	// The harness's process (provider fake and load generator): VmHWM.
	LoadPeakRSS int64 `json:"load_peak_rss_bytes"`
}

// memSnapshot is the sidecar process's memory at one moment
// (runtime.MemStats and /proc/self), read without forcing a collection.
type memSnapshot struct {
	RSS        int64 `json:"rss_bytes"`         // VmRSS
	PSS        int64 `json:"pss_bytes"`         // Pss: a shared page (the guest image each pooled instance maps) counted once, split among its mappers
	HeapInuse  int64 `json:"heap_inuse_bytes"`  // heap spans in use: live objects and garbage not yet collected
	StackInuse int64 `json:"stack_inuse_bytes"` // goroutine stacks
	Goroutines int   `json:"goroutines"`
}

func snapshot(ms *runtime.MemStats) memSnapshot {
	runtime.ReadMemStats(ms)
	return memSnapshot{RSS: vmStatus("VmRSS"), PSS: procField("/proc/self/smaps_rollup", "Pss"), HeapInuse: int64(ms.HeapInuse),
		StackInuse: int64(ms.StackInuse), Goroutines: runtime.NumGoroutine()}
}

// perOp is the sidecar process's peak growth over its baseline per op in
// flight, in bytes.
func (r rssResult) perOp() float64 {
	if r.InFlight == 0 {
		return 0
	}
	return float64(r.PeakRSS-r.BaselineRSS) / float64(r.InFlight)
}

// vmStatus reads a "Vm..." line of /proc/self/status in bytes.
func vmStatus(field string) int64 { return procField("/proc/self/status", field) }

// procField reads a "Field: N kB" line of a /proc file in bytes (-1 when
// it is missing).
func procField(path, field string) int64 {
	f, err := os.Open(path)
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

// The two processes of `benchtool rss` speak JSON lines over the load
// process's stdin and stdout, in this order.
type (
	// loadHello is the load process's first line: its provider fake.
	loadHello struct {
		Addr  string `json:"addr"`
		CA    []byte `json:"ca"`
		Token string `json:"token"` // the fake's GitHub token, for the grants
	}
	// loadPlan is the sidecar process's answer: where to send which ops.
	loadPlan struct {
		URL    string        `json:"url"`
		Bodies [][]byte      `json:"bodies"` // n ops, then the one past the limit
		Hold   time.Duration `json:"hold"`
	}
	// loadHeld tells the sidecar process that every op is held upstream;
	// it answers with one line before the load process sends the extra op.
	loadHeld struct {
		Held bool `json:"held"`
	}
)

// runRSS runs n viewer ops at once through a real sidecar (concurrency
// limit n) against the provider fake, which holds each answer for hold
// and until the op sent once all n are in flight (which must get busy)
// has its answer. The sidecar and engine run in this process, which is
// measured; the fake and the load generator run in a child process
// (`benchtool rss-load`), whose peak is reported apart. The result goes to out and w. heapProfile, when
// set, is written (after a GC) while the ops are held.
func runRSS(w io.Writer, out string, n int, hold time.Duration, heapProfile string) error {
	if heapProfile != "" {
		runtime.MemProfileRate = 4096 // a finer sample than the default 512 KiB, set before anything is allocated
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	child := exec.Command(self, "rss-load")
	child.Stderr = os.Stderr
	toChild, err := child.StdinPipe()
	if err != nil {
		return err
	}
	fromChild, err := child.StdoutPipe()
	if err != nil {
		return err
	}
	if err := child.Start(); err != nil {
		return err
	}
	defer child.Process.Kill()
	dec := json.NewDecoder(fromChild)
	enc := json.NewEncoder(toChild)
	var hello loadHello
	if err := dec.Decode(&hello); err != nil {
		return fmt.Errorf("load process: %w", err)
	}

	cache, _ := os.UserCacheDir()
	eng, err := host.New(context.Background(), host.Config{
		Override: &host.Override{Addr: hello.Addr, CAPEM: hello.CA},
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

	plan := loadPlan{URL: "http://" + ln.Addr().String() + "/v1/ops", Hold: hold, Bodies: make([][]byte, n+1)}
	for i := range plan.Bodies {
		g, err := grant.Seal(&grant.Grant{Service: "github", Access: "read", Kind: "pat",
			Secret: secret.Secret(hello.Token), ExpiresAt: time.Now().Add(2 * time.Minute)}, key.Public(), nil)
		if err != nil {
			return err
		}
		if plan.Bodies[i], err = json.Marshal(map[string]any{"service": "github", "op": "get_viewer", "args": map[string]any{}, "grant": g}); err != nil {
			return err
		}
	}
	res := rssResult{InFlight: n, HoldMS: hold.Milliseconds(), MaxConcurrent: n, GoMaxProcs: runtime.GOMAXPROCS(0),
		Note: "the sidecar and engine in one process, measured; the provider fake and the load generator in another"}
	var before, ms runtime.MemStats
	res.Baseline = snapshot(&before)
	res.BaselineRSS = res.Baseline.RSS
	if err := enc.Encode(plan); err != nil {
		return err
	}
	var held loadHeld
	if err := dec.Decode(&held); err != nil {
		return fmt.Errorf("load process: %w", err)
	}
	res.Held = snapshot(&ms)
	res.NumGC = int(ms.NumGC - before.NumGC)
	if heapProfile != "" {
		if err := writeHeapProfile(heapProfile); err != nil {
			return err
		}
	}
	if err := enc.Encode(held); err != nil {
		return err
	}
	var load loadResult
	if err := dec.Decode(&load); err != nil {
		return fmt.Errorf("load process: %w", err)
	}
	toChild.Close()
	if err := child.Wait(); err != nil {
		return fmt.Errorf("load process: %w", err)
	}
	res.PeakRSS = vmStatus("VmHWM")
	res.Statuses, res.ExtraStatus, res.ExtraCode = load.Statuses, load.ExtraStatus, load.ExtraCode
	res.ArrivalMS, res.ElapsedMS, res.UpstreamPeak, res.RampMS, res.HeldPeak = load.ArrivalMS, load.ElapsedMS, load.UpstreamPeak, load.RampMS, load.HeldPeak
	res.LoadPeakRSS = load.PeakRSS
	b, _ := json.MarshalIndent(res, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// loadResult is the load process's last line.
type loadResult struct {
	Statuses     map[string]int `json:"statuses"`
	ExtraStatus  int            `json:"extra_status"`
	ExtraCode    string         `json:"extra_code"`
	ArrivalMS    []float64      `json:"arrival_ms"`
	ElapsedMS    int64          `json:"elapsed_ms"`
	UpstreamPeak int            `json:"upstream_requests"`
	RampMS       int64          `json:"ramp_ms"`
	HeldPeak     int            `json:"held_peak"`
	PeakRSS      int64          `json:"peak_rss_bytes"`
}

// runLoad is `benchtool rss-load`, the harness's half of `benchtool rss`:
// the provider fake and the load generator, driven over stdin and stdout.
func runLoad(in io.Reader, out io.Writer) error {
	fake, err := fakeapi.New()
	if err != nil {
		return err
	}
	defer fake.Close()
	dec := json.NewDecoder(in)
	enc := json.NewEncoder(out)
	if err := enc.Encode(loadHello{Addr: fake.Addr(), CA: fake.CACertPEM(), Token: fakeapi.Token("github")}); err != nil {
		return err
	}
	var plan loadPlan
	if err := dec.Decode(&plan); err != nil {
		return err
	}
	n := len(plan.Bodies) - 1
	if n < 1 {
		return errors.New("the plan has no ops")
	}
	// Each answer is held for plan.Hold and until the op past the limit
	// has its answer, so that all n are in flight when the sidecar
	// process takes its reading and when that op arrives, however slow
	// the ramp on a busy machine.
	release := make(chan struct{})
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
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
			case <-time.After(plan.Hold):
				select {
				case <-release:
				case <-r.Context().Done():
				}
			case <-r.Context().Done():
			}
			held.Add(-1)
		}
		return false // the fake answers normally
	})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n + 10}, Timeout: time.Minute}
	post := func(b []byte) (int, string) {
		resp, err := client.Post(plan.URL, "application/json", bytes.NewReader(b))
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
	res := loadResult{Statuses: map[string]int{}}
	start = time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, b := range plan.Bodies[:n] {
		wg.Go(func() {
			st, code := post(b)
			mu.Lock()
			res.Statuses[fmt.Sprintf("%d %s", st, code)]++
			mu.Unlock()
		})
	}
	// Once every op holds a slot (the upstream has seen them all), the
	// sidecar process takes its reading, then one more op.
	for deadline := time.Now().Add(20 * time.Second); len(fake.Requests()) < n && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	res.UpstreamPeak = len(fake.Requests())
	res.RampMS = time.Since(start).Milliseconds()
	if err := enc.Encode(loadHeld{Held: res.UpstreamPeak >= n}); err != nil {
		return err
	}
	var ack loadHeld
	if err := dec.Decode(&ack); err != nil {
		return err
	}
	res.ExtraStatus, res.ExtraCode = post(plan.Bodies[n])
	releaseOnce.Do(func() { close(release) })
	wg.Wait()
	res.ElapsedMS = time.Since(start).Milliseconds()
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
	res.PeakRSS = vmStatus("VmHWM")
	return enc.Encode(res)
}
