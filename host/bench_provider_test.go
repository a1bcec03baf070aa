package host

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
)

// The canned provider: the benchmarks' upstream in a process of its own,
// so a throughput or overhead figure measures the host and its sandbox,
// not the provider fake sharing their cores, heap and caches. It is this
// test binary started again with benchProviderEnv set (TestMain): a
// loopback HTTPS server that asks the provider fake each distinct request
// once and answers every later one with the bytes it recorded.

// benchProviderEnv, when set in a test binary's environment, makes it the
// canned provider instead of running tests (TestMain).
const benchProviderEnv = "PINNED_BENCH_PROVIDER"

// benchProviderCPUs, when set (a taskset CPU list, "2-3"), is where the
// canned provider process runs: make bench-scale keeps it off the cores
// the benchmark measures.
const benchProviderCPUs = "PINNED_BENCH_PROVIDER_CPUS"

func TestMain(m *testing.M) {
	if os.Getenv(benchProviderEnv) != "" {
		if err := serveCannedProvider(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "canned provider:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// cannedAnswer is one recorded answer.
type cannedAnswer struct {
	status int
	header http.Header
	body   []byte
}

// serveCannedProvider serves on a loopback port until stdin closes. It
// writes its address on the first line of out, then the PEM of the
// certificate it presents (its own root, for every host of the fake).
func serveCannedProvider(stdin io.Reader, out io.Writer) error {
	fake, err := fakeapi.New()
	if err != nil {
		return err
	}
	defer fake.Close()
	cert, certPEM, err := newSelfSigned(fake.Hosts()...)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var mu sync.Mutex
	answers := map[string]*cannedAnswer{}
	client := fake.Client()
	srv := &http.Server{
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := r.Method + " " + r.Host + r.URL.RequestURI()
			mu.Lock()
			a := answers[key]
			mu.Unlock()
			if a == nil {
				body, _ := io.ReadAll(r.Body)
				req, err := http.NewRequestWithContext(r.Context(), r.Method, "https://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadGateway)
					return
				}
				req.Header = r.Header.Clone()
				resp, err := client.Do(req)
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadGateway)
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadGateway)
					return
				}
				a = &cannedAnswer{status: resp.StatusCode, header: resp.Header.Clone(), body: b}
				a.header.Del("Date")
				mu.Lock()
				answers[key] = a
				mu.Unlock()
			}
			for k, v := range a.header {
				w.Header()[k] = v
			}
			w.WriteHeader(a.status)
			_, _ = w.Write(a.body)
		}),
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	fmt.Fprintf(out, "%s\n%s", ln.Addr(), certPEM)
	_, _ = io.Copy(io.Discard, stdin) // until the benchmark closes our stdin
	return srv.Close()
}

// newSelfSigned makes a P-256 certificate for names (the first is its
// common name) that is its own root, and its PEM.
func newSelfSigned(names ...string) (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: names, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// startCannedProvider starts the canned provider process and returns the
// override that sends an engine's requests to it; it stops with tb.
func startCannedProvider(tb testing.TB) *Override {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	name, args := exe, []string{"-test.run=^$"}
	if cpus := os.Getenv(benchProviderCPUs); cpus != "" {
		name, args = "taskset", append([]string{"-c", cpus, exe}, args...)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), benchProviderEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	r := bufio.NewReader(stdout)
	addr, err := r.ReadString('\n')
	if err != nil {
		tb.Fatalf("canned provider: %v", err)
	}
	var pemb bytes.Buffer
	for !strings.Contains(pemb.String(), "-----END CERTIFICATE-----") {
		line, err := r.ReadString('\n')
		if err != nil {
			tb.Fatalf("canned provider certificate: %v", err)
		}
		pemb.WriteString(line)
	}
	return &Override{Addr: strings.TrimSpace(addr), CAPEM: pemb.Bytes()}
}

// cannedEnv is an engine (no logger, no metrics) whose upstream is the
// canned provider process.
func cannedEnv(b *testing.B, isolation string) *Engine {
	b.Helper()
	ov := startCannedProvider(b)
	e, err := New(context.Background(), Config{Override: ov, CacheDir: testCacheDir, Isolation: isolation})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close(context.Background()) })
	return e
}
