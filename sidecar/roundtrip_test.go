package sidecar

import (
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/elevenmessenger/pinned/internal/state"
	"github.com/elevenmessenger/pinned/internal/testing/redistest"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// flightProxy is a loopback TCP proxy in front of a Redis server that
// counts round trips: each time bytes go to the server after the server
// last answered (or first) is one. A pipeline written in one flush and
// answered together counts once; two commands each awaiting its answer
// count twice.
type flightProxy struct {
	ln      net.Listener
	target  string
	mu      sync.Mutex
	toSrv   bool // the last bytes went client to server
	flights int
	wg      sync.WaitGroup
}

func startFlightProxy(t *testing.T, target string) *flightProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &flightProxy{ln: ln, target: target}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.wg.Add(2)
			go p.pipe(s, c, true)
			go p.pipe(c, s, false)
		}
	}()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

// pipe copies src to dst, noting each direction change.
func (p *flightProxy) pipe(dst, src net.Conn, toSrv bool) {
	defer p.wg.Done()
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			if toSrv && !p.toSrv {
				p.flights++
			}
			p.toSrv = toSrv
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				src.Close()
			}
			return
		}
	}
}

func (p *flightProxy) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.flights
}

// TestRedisOneRoundTripPerOp: a read op on the Redis store costs one
// round trip to Redis on its hot path (the replay record and the
// credential's back-off read, pipelined), counted at the wire by a proxy
// in front of a real redis-server; a replayed grant costs one too, and
// runs nothing.
func TestRedisOneRoundTripPerOp(t *testing.T) {
	srv := redistest.Start(t)
	proxy := startFlightProxy(t, srv.Addr())
	r, err := state.NewRedis(state.RedisOptions{URL: "redis://" + proxy.ln.Addr().String(), StateKey: replicaStateKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	env := newTestEnv(t, func(c *Config) { c.Store = r })
	// The first op dials (the client's handshake is its own round trip).
	if code := benchOp(t, env, env.seal(t, grant.Grant{Access: grant.AccessRead})); code != http.StatusOK {
		t.Fatalf("first op: %d", code)
	}
	const ops = 20
	before := proxy.count()
	for i := range ops {
		if code := benchOp(t, env, env.seal(t, grant.Grant{Access: grant.AccessRead})); code != http.StatusOK {
			t.Fatalf("op %d: %d", i, code)
		}
	}
	if got := proxy.count() - before; got != ops {
		t.Fatalf("%d ops made %d round trips to Redis, want one each", ops, got)
	}
	sealed := env.seal(t, grant.Grant{Access: grant.AccessRead})
	if code := benchOp(t, env, sealed); code != http.StatusOK {
		t.Fatalf("op: %d", code)
	}
	before = proxy.count()
	if code := benchOp(t, env, sealed); code == http.StatusOK {
		t.Fatal("a replayed grant ran")
	}
	if got := proxy.count() - before; got != 1 {
		t.Fatalf("a replayed grant made %d round trips, want 1", got)
	}
}
