package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/connstore"
)

// stdioPeer is an agent on the other end of the stdio transport: it
// writes lines to the server's stdin and reads its stdout line by line.
type stdioPeer struct {
	in  *io.PipeWriter
	out *bufio.Reader
}

func (p *stdioPeer) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// answer reads the next line the server writes.
func (p *stdioPeer) answer(t *testing.T) map[string]any {
	t.Helper()
	type read struct {
		line []byte
		err  error
	}
	c := make(chan read, 1)
	go func() {
		line, err := p.out.ReadBytes('\n')
		c <- read{line, err}
	}()
	var line []byte
	select {
	case r := <-c:
		if r.err != nil {
			t.Fatalf("read: %v", r.err)
		}
		line = r.line
	case <-time.After(30 * time.Second):
		t.Fatal("no answer in 30 s")
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("the server wrote %q: %v", line, err)
	}
	return m
}

// malformedLines are the lines of issue 21 that ended `pinned mcp`, each
// with the JSON-RPC 2.0 error it must get (id null: none can be trusted).
var malformedLines = []struct {
	name, line string
	code       float64
}{
	{"invalid JSON", `{"jsonrpc":"2.0","id":1,"method":`, -32700},
	{"not JSON at all", `hello`, -32700},
	{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"x\":\"\xff\"}", -32700},
	{"100k-deep nesting", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`, -32700},
	{"a batch", `[{"jsonrpc":"2.0","id":5,"method":"tools/list"}]`, -32600},
	{"an empty batch", `[]`, -32600},
	{"a string", `"tools/list"`, -32600},
	{"id 1e400", `{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}`, -32600},
	{"id 1.5", `{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, -32600},
	{"id null on a request", `{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, -32600},
	{"id true", `{"jsonrpc":"2.0","id":true,"method":"tools/list"}`, -32600},
	{"id an object", `{"jsonrpc":"2.0","id":{},"method":"tools/list"}`, -32600},
	{"id an array", `{"jsonrpc":"2.0","id":[1],"method":"tools/list"}`, -32600},
	{"id past int64", `{"jsonrpc":"2.0","id":9223372036854775808,"method":"tools/list"}`, -32600},
	{"no method, no result", `{"jsonrpc":"2.0"}`, -32600},
	{"a NUL byte", "\x00", -32700},
	{"a NUL byte after the message", `{"jsonrpc":"2.0","id":7,"method":"tools/list"}` + "\x00", -32700},
	{"id twice", `{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/list"}`, -32600},
	{"method twice", `{"jsonrpc":"2.0","id":3,"method":"tools/list","method":"tools/call"}`, -32600},
	{"nesting past 64", `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"a":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}}`, -32600},
	{"a 20 MiB line", `{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"x":"` + strings.Repeat("a", 20<<20) + `"}}`, -32600},
}

// TestStdioSurvivesBadLines drives the real server loop (Server.MCP().Run)
// over StdioTransport: each line of issue 21 that ended `pinned mcp` gets
// its JSON-RPC error, and the same session then answers tools/list.
func TestStdioSurvivesBadLines(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.srv.MCP().Run(ctx, &StdioTransport{In: inR, Out: outW}) }()
	p := &stdioPeer{in: inW, out: bufio.NewReader(outR)}

	p.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if a := p.answer(t); a["result"] == nil {
		t.Fatalf("initialize: %v", a)
	}
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, tt := range malformedLines {
		t.Run(tt.name, func(t *testing.T) {
			p.send(t, tt.line)
			a := p.answer(t)
			errm, _ := a["error"].(map[string]any)
			if errm == nil || errm["code"] != tt.code || a["id"] != nil || a["jsonrpc"] != "2.0" {
				t.Fatalf("answered %v, want error %v with id null", a, tt.code)
			}
			// The same session goes on.
			id := float64(100 + i)
			p.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, 100+i))
			a = p.answer(t)
			res, _ := a["result"].(map[string]any)
			if a["id"] != id || res == nil || len(res["tools"].([]any)) == 0 {
				t.Fatalf("tools/list after %s: %v", tt.name, a)
			}
		})
	}
	inW.Close()
	select {
	case err := <-done:
		if err != nil && err != io.EOF && !strings.Contains(err.Error(), "EOF") {
			t.Errorf("Run ended with %v at the end of stdin", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not end at the end of stdin")
	}
	if strings.Contains(e.logs.String(), strings.Repeat("a", 64)) {
		t.Error("a refused line's bytes are in the log")
	}
}

// TestStdioLineCap: a line of exactly MaxLineBytes is read, ended by LF
// or by CR LF (the terminator is not the line's); one byte more is
// refused with -32600, and the session goes on.
func TestStdioLineCap(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
	const max = 256
	line := func(id int) string {
		l := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{"_meta":{"x":"`, id)
		return l + strings.Repeat("a", max-len(l)-len(`"}}}`)) + `"}}}`
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.srv.MCP().Run(ctx, &StdioTransport{In: inR, Out: outW, MaxLineBytes: max}) }()
	p := &stdioPeer{in: inW, out: bufio.NewReader(outR)}
	p.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if a := p.answer(t); a["result"] == nil {
		t.Fatalf("initialize: %v", a)
	}
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	tests := []struct {
		name, line string
		ok         bool
	}{
		{"exactly the cap, LF", line(1), true},
		{"exactly the cap, CR LF", line(2) + "\r", true},
		{"one byte over", line(3)[:max-4] + `a"}}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.send(t, tt.line)
			a := p.answer(t)
			if _, isErr := a["error"]; isErr == tt.ok {
				t.Fatalf("answered %v", a)
			}
		})
	}
	p.send(t, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)
	if a := p.answer(t); a["id"] != float64(9) || a["result"] == nil {
		t.Fatalf("tools/list after the cap: %v", a)
	}
	inW.Close()
	<-done
}
