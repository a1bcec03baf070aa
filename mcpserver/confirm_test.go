package mcpserver

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/internal/connstore"
	"github.com/elevenmessenger/pinned/internal/state"
	"github.com/elevenmessenger/pinned/internal/testing/redistest"
	"github.com/elevenmessenger/pinned/sidecar"
	"github.com/elevenmessenger/pinned/sidecar/api"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// downStore is a NonceStore that cannot answer.
type downStore struct{}

func (downStore) RecordNonce(context.Context, string, time.Time, time.Time) (api.Nonce, error) {
	return api.Nonce{}, &state.Error{Op: "record", Err: errors.New("connection refused")}
}

// TestSealedConfirmation: consume opens only what this server sealed for
// this principal and era, refuses it late, spends it once (a mismatch
// spends it too), and fails closed when the store cannot answer. Hostile
// inputs: made up, one bit flipped, another key's, cut short.
func TestSealedConfirmation(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
	s := e.srv
	const me = "store:me"
	seal := func(c confirmation) string {
		if c.Principal == "" {
			c.Principal = me
		}
		if c.Expires == 0 {
			c.Expires = e.clock.Now().Add(time.Minute).UnixMilli()
		}
		return s.sealer.seal(&c)
	}
	issue := confirmation{Service: "github", Op: "create_issue", ArgsHash: "h1"}
	other, _ := newSealer(nil)
	flip := func(st string) string {
		b, _ := base64.RawURLEncoding.DecodeString(st)
		b[len(b)/2] ^= 1
		return base64.RawURLEncoding.EncodeToString(b)
	}
	ctx := context.Background()
	cases := []struct {
		name   string
		state  func() string
		legacy bool
		// then: the code of a second consume of the same state with the
		// right op and args ("-": not tried).
		want, then string
	}{
		{"right", func() string { return seal(issue) }, false, "", CodeConfirmationReplayed},
		{"made up", func() string { return "AAAAAAAAAAAAAAAAAAAAAA" }, false, CodeConfirmationInvalid, "-"},
		{"not base64", func() string { return "not base64!" }, false, CodeConfirmationInvalid, "-"},
		{"one bit flipped", func() string { return flip(seal(issue)) }, false, CodeConfirmationInvalid, "-"},
		{"cut short", func() string { st := seal(issue); return st[:len(st)-3] }, false, CodeConfirmationInvalid, "-"},
		{"another server's key", func() string {
			c := issue
			c.Principal, c.Expires = me, e.clock.Now().Add(time.Minute).UnixMilli()
			return other.seal(&c)
		}, false, CodeConfirmationInvalid, "-"},
		{"another principal", func() string { c := issue; c.Principal = "sub:mallory"; return seal(c) }, false, CodeConfirmationInvalid, "-"},
		{"a legacy state from a client", func() string { c := issue; c.Legacy = true; return seal(c) }, false, CodeConfirmationInvalid, "-"},
		{"a modern state on a legacy call", func() string { return seal(issue) }, true, CodeConfirmationInvalid, "-"},
		{"expired", func() string { c := issue; c.Expires = e.clock.Now().Add(-time.Second).UnixMilli(); return seal(c) }, false, CodeConfirmationExpired, "-"},
		{"other op, then the right one", func() string { c := issue; c.Op = "create_comment"; return seal(c) }, false, CodeConfirmationMismatch, CodeConfirmationReplayed},
		{"other args, then the right ones", func() string { c := issue; c.ArgsHash = "h2"; return seal(c) }, false, CodeConfirmationMismatch, CodeConfirmationReplayed},
		{"oversized", func() string { return strings.Repeat("A", 5000) }, false, CodeConfirmationInvalid, "-"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.state()
			if got := s.consume(ctx, st, tc.legacy, me, "github", "create_issue", "h1"); got != tc.want {
				t.Fatalf("consume: %q, want %q", got, tc.want)
			}
			if tc.then != "-" {
				if got := s.consume(ctx, st, tc.legacy, me, "github", "create_issue", "h1"); got != tc.then {
					t.Errorf("then: %q, want %q", got, tc.then)
				}
			}
		})
	}
	t.Run("store down", func(t *testing.T) {
		d := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}, nonces: downStore{}})
		c := issue
		c.Principal, c.Expires = me, d.clock.Now().Add(time.Minute).UnixMilli()
		if got := d.srv.consume(ctx, d.srv.sealer.seal(&c), false, me, "github", "create_issue", "h1"); got != CodeStateUnavailable {
			t.Errorf("consume with the store down: %q, want %q", got, CodeStateUnavailable)
		}
	})
}

// FuzzConfirmOpen: a requestState is untrusted input; open never panics
// and opens nothing but what the key sealed.
func FuzzConfirmOpen(f *testing.F) {
	s, _ := newSealer(make([]byte, ConfirmKeySize))
	good := s.seal(&confirmation{Service: "github", Op: "create_issue", ArgsHash: "h", Principal: "p", Expires: 1})
	f.Add(good)
	f.Add("")
	f.Add("AAAA")
	f.Fuzz(func(t *testing.T, st string) {
		c, ok := s.open(st)
		if ok && (st != good || c.Service != "github") {
			t.Fatalf("opened %q as %+v", st, c)
		}
	})
}

// replicaSidecar is a replica's own sidecar, with a bot key of its own,
// on the shared engine.
func replicaSidecar(t *testing.T) *sidecar.Server {
	t.Helper()
	_, eng := sharedEngine(t)
	gk, err := grant.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	side, err := sidecar.New(sidecar.Config{Engine: eng, Key: gk})
	if err != nil {
		t.Fatal(err)
	}
	return side
}

// replica is one `pinned mcp --listen` of the person: its own sidecar
// and MCP server on the shared engine, the person's store, the shared
// confirmation key and nonce store, over HTTP.
func replica(t *testing.T, e *env, key []byte, nonces NonceStore) string {
	t.Helper()
	side := replicaSidecar(t)
	log := zerolog.New(e.logs)
	srv, err := New(Config{Sidecar: side, Store: e.store, Now: e.clock.Now, Logger: &log, Version: "test", ConfirmKey: key, Nonces: nonces})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler(httpToken))
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestConfirmationAcrossReplicas: two replicas with one confirmation key
// and one real redis-server. A write asked at A and answered at B runs
// once (one request at the fake); replayed at A, at B, or at both at
// once, it is refused and nothing is sent; an expired or forged
// requestState is refused and nothing is sent. The clients are the Go
// SDK's on 2026-07-28, stateless (each request its own HTTP POST).
func TestConfirmationAcrossReplicas(t *testing.T) {
	rs := redistest.Start(t)
	key := make([]byte, ConfirmKeySize)
	for i := range key {
		key[i] = byte(i + 1)
	}
	newRedis := func(t *testing.T) *state.Redis {
		r, err := state.NewRedis(state.RedisOptions{URL: rs.URL(), StateKey: key, Prefix: "pinned-test:mcp:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		return r
	}
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
	a := replica(t, e, key, newRedis(t))
	b := replica(t, e, key, newRedis(t))
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	client := func(t *testing.T, url string) *mcp.ClientSession {
		t.Helper()
		cs, err := newClient(clientOpts{answer: "accept", manual: true}).Connect(context.Background(), &mcp.LoggingTransport{Writer: e.wire, Transport: &mcp.StreamableClientTransport{
			Endpoint: url, HTTPClient: &http.Client{Transport: bearerRT{httpToken, tr}}, MaxRetries: -1,
		}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		if v := cs.InitializeResult().ProtocolVersion; v != Revision20260728 {
			t.Fatalf("negotiated %s", v)
		}
		return cs
	}
	atA, atB := client(t, a), client(t, b)
	writes := func() int { return requestsTo(e.fake, "POST", "/repos/") }

	e.fake.Reset()
	reqState := firstRound(t, atA, issueArgs)
	if n := writes(); n != 0 {
		t.Fatalf("asking sent %d requests", n)
	}
	if res := retry(t, atB, issueArgs, reqState, "accept"); res.IsError {
		t.Fatalf("answered at B: %s", toolText(t, res))
	}
	if n := writes(); n != 1 {
		t.Fatalf("asked at A, answered at B: %d requests at the fake, want 1", n)
	}
	for _, tc := range []struct {
		name string
		at   *mcp.ClientSession
	}{{"replayed at A", atA}, {"replayed at B", atB}} {
		if got := errorCode(t, retry(t, tc.at, issueArgs, reqState, "accept")); got != CodeConfirmationReplayed {
			t.Errorf("%s: %q, want %s", tc.name, got, CodeConfirmationReplayed)
		}
	}
	// A fresh confirmation replayed at both at once: one runs.
	e.fake.Reset()
	reqState = firstRound(t, atB, issueArgs)
	codes := make(chan string, 2)
	for _, cs := range []*mcp.ClientSession{atA, atB} {
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
				Name: "github_create_issue", Arguments: issueArgs, RequestState: reqState,
				InputResponses: mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept"}},
			})
			switch {
			case err != nil:
				codes <- err.Error()
			case !res.IsError:
				codes <- "ok"
			default:
				codes <- errorCode(t, res)
			}
		}()
	}
	got := []string{<-codes, <-codes}
	if !(got[0] == "ok" && got[1] == CodeConfirmationReplayed || got[1] == "ok" && got[0] == CodeConfirmationReplayed) {
		t.Errorf("at A and B at once: %v, want one ok and one %s", got, CodeConfirmationReplayed)
	}
	if n := writes(); n != 1 {
		t.Errorf("at A and B at once: %d requests at the fake, want 1", n)
	}

	e.fake.Reset()
	reqState = firstRound(t, atA, issueArgs)
	e.clock.Advance(DefaultConfirmTTL + time.Second)
	if got := errorCode(t, retry(t, atB, issueArgs, reqState, "accept")); got != CodeConfirmationExpired {
		t.Errorf("expired at B: %q", got)
	}
	forged := base64.RawURLEncoding.EncodeToString(make([]byte, 120))
	if got := errorCode(t, retry(t, atB, issueArgs, forged, "accept")); got != CodeConfirmationInvalid {
		t.Errorf("forged at B: %q", got)
	}
	if n := writes(); n != 0 {
		t.Errorf("expired and forged: %d requests at the fake", n)
	}
}
