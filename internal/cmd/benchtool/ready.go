package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"
)

// readyResult is what `benchtool ready` measures: milliseconds from
// starting `pinned sidecar` to its first 200 from /readyz.
type readyResult struct {
	ColdMS []float64 `json:"cold_ms"` // empty compilation cache each time
	WarmMS []float64 `json:"warm_ms"` // cache filled by a previous start
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startToReady starts the sidecar and returns the time until /readyz
// answers 200.
func startToReady(bin, keyFile, cacheDir string) (time.Duration, error) {
	addr, err := freePort()
	if err != nil {
		return 0, err
	}
	// A state directory of the run's own: the user's default may be held
	// by a sidecar already running.
	cmd := exec.Command(bin, "sidecar", "--listen", addr, "--key-file", keyFile, "--cache-dir", cacheDir,
		"--state-dir", filepath.Join(filepath.Dir(keyFile), "state"), "--log-level", "error")
	cmd.Stdout, cmd.Stderr = nil, nil
	client := &http.Client{Timeout: 200 * time.Millisecond}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	for time.Since(start) < 2*time.Minute {
		resp, err := client.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start), nil
			}
		}
		time.Sleep(time.Millisecond)
	}
	return 0, fmt.Errorf("sidecar not ready after 2 minutes")
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
		d, err := startToReady(bin, keyFile, cold)
		if err != nil {
			return err
		}
		res.ColdMS = append(res.ColdMS, float64(d.Microseconds())/1000)
	}
	warm := filepath.Join(dir, "cache-warm")
	if _, err := startToReady(bin, keyFile, warm); err != nil { // fill it
		return err
	}
	for i := 0; i < runs; i++ {
		d, err := startToReady(bin, keyFile, warm)
		if err != nil {
			return err
		}
		res.WarmMS = append(res.WarmMS, float64(d.Microseconds())/1000)
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	fmt.Printf("%s\n", b)
	return os.WriteFile(out, append(b, '\n'), 0o644)
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
