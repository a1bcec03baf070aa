package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// readyResult is what `benchtool ready` measures: milliseconds from
// starting `pinned sidecar` to its first 200 from /readyz, and to its
// pool_ready event (the reset pool built; ops before it run in fresh
// instances); and, as the same run's floor, from starting `pinned help`
// to its exit (the process's own start: the Go runtime, every package's
// initialization and the page faults of both, with no sandbox).
type readyResult struct {
	ColdMS     []float64 `json:"cold_ms"`      // empty compilation cache each time
	WarmMS     []float64 `json:"warm_ms"`      // cache filled by a previous start
	PoolColdMS []float64 `json:"pool_cold_ms"` // pool_ready, empty cache
	PoolWarmMS []float64 `json:"pool_warm_ms"` // pool_ready, filled cache
	// CompiledColdMS: the compiled event, empty cache (ops run on wazero's
	// interpreter until it).
	CompiledColdMS []float64 `json:"compiled_cold_ms,omitempty"`
	HelpMS         []float64 `json:"help_ms"` // `pinned help`, start to exit
	// Page faults (minor and major; Linux only, else absent) of the
	// sidecar from its start to its first 200 from /readyz, with an empty
	// and a filled cache, and of `pinned help` from start to exit: a start
	// on a machine where a fault is costly is mostly these.
	ColdFaults []int64 `json:"cold_faults,omitempty"`
	WarmFaults []int64 `json:"warm_faults,omitempty"`
	HelpFaults []int64 `json:"help_faults,omitempty"`
}

// startToExit runs `bin help` and returns the time from its start to its
// exit, and its page faults (-1 when unknown, as off Linux).
func startToExit(bin string) (time.Duration, int64, error) {
	cmd := exec.Command(bin, "help")
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("%s help: %v: %s", bin, err, out)
	}
	return time.Since(start), exitedFaults(cmd), nil
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startTimes are the times from a sidecar's start to its first 200 from
// /readyz, to its pool_ready event (0 when none comes: fresh isolation,
// off Linux), and to its compiled event (0 when it started on machine
// code already cached, or logged none); and its page faults up to the
// first 200 (-1 when they could not be read).
type startTimes struct {
	ready, pool, compiled time.Duration
	faults                int64
}

// startToReady starts the sidecar and measures its startTimes.
func startToReady(bin, keyFile, cacheDir string) (st startTimes, err error) {
	addr, err := freePort()
	if err != nil {
		return st, err
	}
	// A state directory of the run's own: the user's default may be held
	// by a sidecar already running.
	cmd := exec.Command(bin, "sidecar", "--listen", addr, "--key-file", keyFile, "--cache-dir", cacheDir,
		"--state-dir", filepath.Join(filepath.Dir(keyFile), "state"), "--log-level", "info")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return st, err
	}
	client := &http.Client{Timeout: 200 * time.Millisecond}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return st, err
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	// pool_ready's time; 0 when no pool will come: fresh isolation (the
	// engine_ready event names another), or pool_failed.
	poolc := make(chan time.Duration, 1)
	var compiled atomic.Int64 // the compiled event's time, ns
	go func() {
		sent := false
		send := func(d time.Duration) {
			if !sent {
				sent = true
				poolc <- d
			}
		}
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.Contains(line, `"event":"compiled"`):
				compiled.Store(int64(time.Since(start)))
			case strings.Contains(line, `"event":"pool_ready"`):
				send(time.Since(start))
			case strings.Contains(line, `"event":"pool_failed"`),
				strings.Contains(line, `"event":"engine_ready"`) && !strings.Contains(line, `"isolation":"reset"`):
				send(0)
			}
		}
		send(0)
	}()
	for time.Since(start) < 2*time.Minute {
		resp, err := client.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				st.ready = time.Since(start)
				st.faults = -1
				if f, ok := processFaults(cmd.Process.Pid); ok {
					st.faults = f
				}
				break
			}
		}
		time.Sleep(time.Millisecond)
	}
	if st.ready == 0 {
		return st, fmt.Errorf("sidecar not ready after 2 minutes")
	}
	select {
	case st.pool = <-poolc: // the compiled event comes before pool_ready
	case <-time.After(2 * time.Minute):
	}
	st.compiled = time.Duration(compiled.Load())
	return st, nil
}

func runReady(out, bin string, runs int) error {
	dir, err := os.MkdirTemp("", "pinned-ready-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	keyFile := filepath.Join(dir, "bot.key")
	if b, err := exec.Command(bin, "keygen", "--out", keyFile).CombinedOutput(); err != nil {
		return fmt.Errorf("keygen: %v: %s", err, b)
	}
	var res readyResult
	for i := 0; i < runs; i++ {
		cold := filepath.Join(dir, fmt.Sprintf("cache-cold-%d", i))
		st, err := startToReady(bin, keyFile, cold)
		if err != nil {
			return err
		}
		res.ColdMS = append(res.ColdMS, ms(st.ready))
		res.PoolColdMS = append(res.PoolColdMS, ms(st.pool))
		res.CompiledColdMS = append(res.CompiledColdMS, ms(st.compiled))
		res.ColdFaults = appendFaults(res.ColdFaults, st.faults)
	}
	warm := filepath.Join(dir, "cache-warm")
	if _, err := startToReady(bin, keyFile, warm); err != nil { // fill it
		return err
	}
	for i := 0; i < runs; i++ {
		st, err := startToReady(bin, keyFile, warm)
		if err != nil {
			return err
		}
		res.WarmMS = append(res.WarmMS, ms(st.ready))
		res.PoolWarmMS = append(res.PoolWarmMS, ms(st.pool))
		res.WarmFaults = appendFaults(res.WarmFaults, st.faults)
	}
	for i := 0; i < runs; i++ {
		d, faults, err := startToExit(bin)
		if err != nil {
			return err
		}
		res.HelpMS = append(res.HelpMS, ms(d))
		res.HelpFaults = appendFaults(res.HelpFaults, faults)
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	fmt.Printf("%s\n", b)
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

// statFaults parses a /proc/PID/stat line. The second field, comm, is
// in parentheses and may itself hold spaces and parentheses, so fields
// are counted from the last ')'.
func statFaults(stat []byte) (int64, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	// After comm: 3 state, 4 ppid, ... 10 minflt, 11 cminflt, 12 majflt.
	f := bytes.Fields(stat[i+1:])
	if len(f) < 10 {
		return 0, false
	}
	minflt, err1 := strconv.ParseInt(string(f[10-3]), 10, 64)
	majflt, err2 := strconv.ParseInt(string(f[12-3]), 10, 64)
	if err1 != nil || err2 != nil || minflt < 0 || majflt < 0 {
		return 0, false
	}
	return minflt + majflt, true
}

// appendFaults appends f unless it is unknown (negative: the count could
// not be read, as off Linux).
func appendFaults(xs []int64, f int64) []int64 {
	if f < 0 {
		return xs
	}
	return append(xs, f)
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// medianInt is median of counts (0 for none), leaving xs as it is.
func medianInt(xs []int64) int64 {
	fs := make([]float64, len(xs))
	for i, x := range xs {
		fs[i] = float64(x)
	}
	return int64(median(fs))
}

// median returns the median of xs (which it sorts).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}
