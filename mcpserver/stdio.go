package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/internal/jsonv"
)

// DefaultMaxLineBytes bounds one line of the stdio transport: a tools/call
// carries at most the host's 64 KiB of args, so 4 MiB is generous.
const DefaultMaxLineBytes = 4 << 20

// StdioTransport is the MCP stdio transport (newline-delimited JSON-RPC
// 2.0 messages) that survives a bad line. The SDK's own stdio transport
// ends the session on the first line it cannot read; this one answers
// it as JSON-RPC 2.0 says and reads the next: a line that is not JSON
// (invalid UTF-8 included, or nested past encoding/json's limit) gets
// -32700 Parse error; a batch or `[]` (MCP 2025-06-18 removed batching),
// a value that is not an object, a member twice (`"id"` twice among
// them), nesting past 64 levels, an id that is not a string or an
// integer (`1e400`; null on a request), or a line over MaxLineBytes (its
// LF or CR LF not counted) gets -32600 Invalid
// Request, with the request's id when it has a valid one, else null.
// Only the lines that pass reach the SDK (docs/RATIONALE.md).
type StdioTransport struct {
	// In and Out are the agent's stdin and stdout.
	In  io.Reader
	Out io.Writer
	// MaxLineBytes bounds one line; 0 is DefaultMaxLineBytes.
	MaxLineBytes int
	// Logger records each refused line (its code and size, never its
	// bytes); nil logs nothing.
	Logger *zerolog.Logger
}

// Connect implements mcp.Transport: it starts reading In.
func (t *StdioTransport) Connect(context.Context) (mcp.Connection, error) {
	max := t.MaxLineBytes
	if max <= 0 {
		max = DefaultMaxLineBytes
	}
	log := zerolog.Nop()
	if t.Logger != nil {
		log = *t.Logger
	}
	c := &stdioConn{out: t.Out, log: log, msgs: make(chan jsonrpc.Message), closed: make(chan struct{})}
	go c.readLoop(bufio.NewReaderSize(t.In, 64<<10), max)
	return c, nil
}

// stdioConn is one session over the transport.
type stdioConn struct {
	out     io.Writer
	log     zerolog.Logger
	writeMu sync.Mutex

	msgs      chan jsonrpc.Message
	readErr   error // set before msgs is closed
	closeOnce sync.Once
	closed    chan struct{}
}

var _ mcp.Connection = (*stdioConn)(nil)

// readLoop reads lines until In ends, answering bad ones itself.
func (c *stdioConn) readLoop(in *bufio.Reader, max int) {
	defer close(c.msgs)
	for {
		line, tooLong, err := readLine(in, max)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			msg, rpcErr := checkLine(line, tooLong, max)
			if rpcErr != nil {
				c.refuse(rpcErr, len(line))
			} else {
				select {
				case c.msgs <- msg:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil {
			c.readErr = err
			return
		}
	}
}

// readLine reads one line without its LF or CR LF, holding at most max
// bytes of it: past that it reads the rest of the line and drops it
// (tooLong).
func readLine(in *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		part, err := in.ReadSlice('\n')
		switch {
		case tooLong:
		case len(line)+len(part) > max+2: // +2: CR LF, not the line's
			tooLong, line = true, nil
		default:
			line = append(line, part...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if line = bytes.TrimRight(line, "\r\n"); len(line) > max {
			tooLong, line = true, nil
		}
		return line, tooLong, err
	}
}

// lineError is the JSON-RPC error answering a refused line.
type lineError struct {
	id   any // nil, a string or an int64
	code int64
	msg  string
}

// checkLine decodes one line as a JSON-RPC message, or says why not.
func checkLine(line []byte, tooLong bool, max int) (jsonrpc.Message, *lineError) {
	switch {
	case tooLong:
		return nil, &lineError{code: jsonrpc.CodeInvalidRequest, msg: "Invalid Request: the line is over " + strconv.Itoa(max) + " bytes"}
	case !utf8.Valid(line):
		return nil, &lineError{code: jsonrpc.CodeParseError, msg: "Parse error: the line is not valid UTF-8"}
	case !json.Valid(line):
		return nil, &lineError{code: jsonrpc.CodeParseError, msg: "Parse error: the line is not one JSON value"}
	}
	line = bytes.TrimSpace(line)
	switch line[0] {
	case '[':
		return nil, &lineError{code: jsonrpc.CodeInvalidRequest, msg: "Invalid Request: batches are not supported (MCP 2025-06-18 and later); send one message a line"}
	case '{':
	default:
		return nil, &lineError{code: jsonrpc.CodeInvalidRequest, msg: "Invalid Request: a message is a JSON object"}
	}
	v, err := jsonv.Parse(line)
	if err != nil {
		// A member twice (readers disagree on which counts) or nesting
		// past jsonv.MaxDepth: refused whole, with no id (which "id"?).
		var se *jsonv.SyntaxError
		reason := "the message is not strict JSON"
		if errors.As(err, &se) {
			reason = se.Msg
		}
		return nil, &lineError{code: jsonrpc.CodeInvalidRequest, msg: "Invalid Request: " + reason}
	}
	var id any
	if idv := v.Get("id"); idv != nil {
		switch idv.Kind {
		case jsonv.String:
			id = idv.S
		case jsonv.Number:
			n, err := strconv.ParseInt(idv.S, 10, 64)
			if err != nil {
				return nil, &lineError{code: jsonrpc.CodeInvalidRequest, msg: "Invalid Request: an id must be a string or an integer"}
			}
			id = n
		case jsonv.Null:
			// MCP: a request's id MUST NOT be null. (A response's may be,
			// answering a line the client could not read.)
			if v.Get("method") != nil {
				return nil, &lineError{code: jsonrpc.CodeInvalidRequest, msg: "Invalid Request: a request's id must be a string or an integer, not null"}
			}
		default:
			return nil, &lineError{code: jsonrpc.CodeInvalidRequest, msg: "Invalid Request: an id must be a string or an integer"}
		}
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, &lineError{id: id, code: jsonrpc.CodeInvalidRequest, msg: "Invalid Request: not a JSON-RPC 2.0 request, notification or response"}
	}
	return msg, nil
}

// refuse answers a refused line and logs it (code and size only).
func (c *stdioConn) refuse(e *lineError, size int) {
	c.log.Warn().Str("event", "bad_message").Int64("code", e.code).Int("bytes", size).Msg("refused a line that is not a JSON-RPC message")
	body := struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: e.id}
	body.Error.Code, body.Error.Message = e.code, e.msg
	b, _ := json.Marshal(body)
	c.writeLine(b)
}

func (c *stdioConn) writeLine(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	_, err := c.out.Write(append(b, '\n'))
	return err
}

// Read returns the next message that passed checkLine, or io.EOF once In
// ended.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case msg, ok := <-c.msgs:
		if !ok {
			if c.readErr != nil && c.readErr != io.EOF {
				return nil, fmt.Errorf("stdin: %w", c.readErr)
			}
			return nil, io.EOF
		}
		return msg, nil
	}
}

// Write writes one message as one line.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.writeLine(b)
}

// Close stops the session; a Read waiting returns io.EOF.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID is "": stdio has one session.
func (c *stdioConn) SessionID() string { return "" }
