// Package redistest starts a real redis-server for tests: on a free
// loopback port, with no persistence (--save "" --appendonly no), stopped
// when the test ends. Without the redis-server binary a test is skipped
// with a clear message, except under CI=true, where it fails: CI
// (.ci/run) installs Debian's redis-server.
//
// It imports only the standard library, so any package's tests may use
// it.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a running (or stopped) redis-server of one test.
type Server struct {
	// Password, when set, is sent (AUTH) before each Do: set it with the
	// server's requirepass (StartArgs "--requirepass", pw).
	Password string

	t    testing.TB
	args []string
	bin  string
	port int
	dir  string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Start starts a redis-server on 127.0.0.1 at a free port and stops it
// when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartArgs(t)
}

// StartArgs is Start with extra redis-server arguments
// ("--requirepass", "pw"; "--maxmemory-policy", "allkeys-lru").
func StartArgs(t testing.TB, args ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redistest: redis-server is not installed; CI must install it (.ci/run installs Debian's redis-server)")
		}
		t.Skip("redistest: redis-server is not installed (apt-get install redis-server); skipping a test that needs a real Redis")
	}
	s := &Server{t: t, bin: bin, port: freePort(t), dir: t.TempDir(), args: args}
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--requirepass" {
			s.Password = args[i+1]
		}
	}
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// Addr is host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// URL is redis://127.0.0.1:port.
func (s *Server) URL() string { return "redis://" + s.Addr() }

// Stop kills the server (SIGKILL: as a crash, nothing flushed) and waits
// for it. It is a no-op when the server is stopped.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Pause freezes the server (SIGSTOP): connections stay open and commands
// go unanswered, as a Redis stuck in a long fork or a network stall. Stop
// kills a paused server as well; a paused server never runs what it was
// sent if it is stopped before Resume.
func (s *Server) Pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		signal(s.t, s.cmd.Process, sigStop)
	}
}

// Resume undoes Pause (SIGCONT).
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		signal(s.t, s.cmd.Process, sigCont)
	}
}

// Restart starts the server again on the same port (empty: nothing was
// persisted) and waits until it answers PING.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	cmd := exec.Command(s.bin, append([]string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--maxmemory-policy", "noeviction", "--loglevel", "warning", "--databases", "1"}, s.args...)...)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("redistest: start redis-server: %v", err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := s.ping(); err == nil {
			return
		} else if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			s.cmd = nil
			s.t.Fatalf("redistest: redis-server on %s did not answer PING within 10s: %v", s.Addr(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Do sends one command (inline, arguments without spaces) and returns the
// first line of the reply, for tests that set up ACL users or read keys
// without a client library.
func (s *Server) Do(args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	rd := bufio.NewReader(c)
	if s.Password != "" {
		if r, err := command(c, rd, "AUTH", s.Password); err != nil || r != "+OK" {
			return r, fmt.Errorf("redistest: AUTH: %q %v", r, err)
		}
	}
	return command(c, rd, args...)
}

// command writes one RESP command and reads the first line of its reply.
func command(c net.Conn, rd *bufio.Reader, args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := rd.ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

func (s *Server) ping() error {
	r, err := s.Do("PING")
	if err != nil {
		return err
	}
	if r != "+PONG" {
		return fmt.Errorf("PING answered %q", r)
	}
	return nil
}

// freePort asks the kernel for a free loopback port.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
