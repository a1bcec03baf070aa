// Package fakemodel is a fake of the Anthropic Messages API
// (POST /v1/messages, https://docs.anthropic.com/en/api/messages) that
// replays a scripted model, for tests and `pinned demo` / `pinned research
// --fake` only. It speaks the real wire format, so a client built on the
// official SDK runs its own code path against it.
//
// The server listens on loopback only (plain HTTP), checks the x-api-key
// and anthropic-version headers, checks the conversation the way the real
// API does where research depends on it (alternating roles, every tool_use
// answered by a tool_result in the next user turn, no tool use under
// tool_choice none), records every request verbatim (Requests) so a test
// can scan what a model was sent, and answers with what the Script says.
//
// It may import the standard library only.
package fakemodel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Key is the API key the fake accepts unless New is given another.
const Key = "sk-ant-fake-pinned-model-key-000000000000"

// ModelID is the model id the fake reports.
const ModelID = "fake-scripted-model"

// Server is a running fake Messages API.
type Server struct {
	key  string
	ln   net.Listener
	srv  *http.Server
	done chan struct{}

	mu     sync.Mutex
	script Script
	reqs   []Recorded
	nextID int
}

// Recorded is one request as the fake received it.
type Recorded struct {
	Header http.Header
	Body   []byte
}

// New starts a fake on 127.0.0.1 with the API key key ("" is Key),
// answering with script.
func New(key string, script Script) (*Server, error) {
	if key == "" {
		key = Key
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakemodel: listen: %w", err)
	}
	s := &Server{key: key, ln: ln, script: script, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.messages)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// URL is the base URL to give a client ("http://127.0.0.1:port").
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the server.
func (s *Server) Close() {
	_ = s.srv.Close()
	<-s.done
}

// SetScript replaces the script.
func (s *Server) SetScript(sc Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = sc
}

// Requests returns a copy of every request received, oldest first.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Recorded, len(s.reqs))
	for i, r := range s.reqs {
		out[i] = Recorded{Header: r.Header.Clone(), Body: bytes.Clone(r.Body)}
	}
	return out
}

// Reset forgets the recorded requests.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = nil
}

// apiError writes the API's error envelope.
func apiError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
}

// wire types of the request.
type wireRequest struct {
	Model      string          `json:"model"`
	MaxTokens  int             `json:"max_tokens"`
	System     json.RawMessage `json:"system"`
	Messages   []wireMessage   `json:"messages"`
	Tools      []wireTool      `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
	} `json:"tool_choice"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 32<<20))
	s.mu.Lock()
	s.reqs = append(s.reqs, Recorded{Header: r.Header.Clone(), Body: bytes.Clone(body)})
	script := s.script
	s.mu.Unlock()
	if err != nil {
		apiError(w, http.StatusRequestEntityTooLarge, "request_too_large", "request too large")
		return
	}
	if r.Header.Get("X-Api-Key") != s.key {
		apiError(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
		return
	}
	if r.Header.Get("Anthropic-Version") == "" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
		return
	}
	var req wireRequest
	if err := json.Unmarshal(body, &req); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "the body is not JSON")
		return
	}
	conv, msg := parseConversation(&req)
	if msg != "" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", msg)
		return
	}
	if script == nil {
		apiError(w, http.StatusInternalServerError, "api_error", "fakemodel: no script")
		return
	}
	conv.ctx = r.Context()
	reply := script(conv)
	if reply.Status != 0 {
		apiError(w, reply.Status, "api_error", "fakemodel: scripted failure")
		return
	}
	if conv.NoTools && len(reply.Uses) > 0 {
		apiError(w, http.StatusInternalServerError, "api_error", "fakemodel: the script used a tool under tool_choice none")
		return
	}
	var content []wireBlock
	if reply.Text != "" {
		content = append(content, wireBlock{Type: "text", Text: reply.Text})
	}
	s.mu.Lock()
	for _, u := range reply.Uses {
		s.nextID++
		in, _ := json.Marshal(u.Input)
		if u.Input == nil {
			in = []byte("{}")
		}
		id := u.ID
		if id == "" {
			id = fmt.Sprintf("toolu_fake_%06d", s.nextID)
		}
		content = append(content, wireBlock{Type: "tool_use", ID: id, Name: u.Name, Input: in})
	}
	s.nextID++
	id := fmt.Sprintf("msg_fake_%06d", s.nextID)
	s.mu.Unlock()
	stop := "end_turn"
	if len(reply.Uses) > 0 {
		stop = "tool_use"
	}
	if content == nil {
		content = []wireBlock{{Type: "text", Text: ""}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_fake_"+id)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": ModelID,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": len(body) / 4, "output_tokens": 32},
	})
}

// parseConversation decodes the messages and checks them as the real API
// does; msg is the invalid_request_error message, if any.
func parseConversation(req *wireRequest) (*Conversation, string) {
	c := &Conversation{NoTools: req.ToolChoice != nil && req.ToolChoice.Type == "none", MaxTokens: req.MaxTokens}
	if req.MaxTokens <= 0 {
		return nil, "max_tokens: field required"
	}
	for _, t := range req.Tools {
		c.Tools = append(c.Tools, t.Name)
	}
	if len(req.System) > 0 {
		var str string
		if json.Unmarshal(req.System, &str) == nil {
			c.System = str
		} else {
			var blocks []wireBlock
			_ = json.Unmarshal(req.System, &blocks)
			for _, b := range blocks {
				c.System += b.Text
			}
		}
	}
	if len(req.Messages) == 0 || req.Messages[0].Role != "user" {
		return nil, "messages: the first message must use the user role"
	}
	pending := map[string]*Call{}
	var order []*Call
	for i, m := range req.Messages {
		if i > 0 && req.Messages[i-1].Role == m.Role {
			return nil, fmt.Sprintf("messages.%d: roles must alternate between user and assistant", i)
		}
		var blocks []wireBlock
		var str string
		if json.Unmarshal(m.Content, &str) == nil {
			blocks = []wireBlock{{Type: "text", Text: str}}
		} else if err := json.Unmarshal(m.Content, &blocks); err != nil {
			return nil, fmt.Sprintf("messages.%d.content: invalid", i)
		}
		if m.Role == "user" && len(pending) > 0 {
			for _, b := range blocks {
				if b.Type == "tool_result" && pending[b.ToolUseID] != nil {
					pc := pending[b.ToolUseID]
					pc.Result, pc.IsError, pc.answered = resultText(b.Content), b.IsError, true
					delete(pending, b.ToolUseID)
				}
			}
			if len(pending) > 0 {
				return nil, fmt.Sprintf("messages.%d: tool_use ids were found without tool_result blocks immediately after", i)
			}
		}
		for _, b := range blocks {
			switch {
			case b.Type == "text":
				if m.Role == "user" {
					c.UserTexts = append(c.UserTexts, b.Text)
				}
			case b.Type == "tool_use" && m.Role == "assistant":
				if len(req.Tools) == 0 {
					return nil, "requests which include tool_use blocks must define tools"
				}
				call := &Call{Name: b.Name}
				_ = json.Unmarshal(b.Input, &call.Input)
				pending[b.ID] = call
				order = append(order, call)
			}
		}
	}
	if req.Messages[len(req.Messages)-1].Role != "user" {
		return nil, "messages: the last message must use the user role"
	}
	for _, cl := range order {
		c.Calls = append(c.Calls, *cl)
	}
	return c, ""
}

func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []wireBlock
	_ = json.Unmarshal(raw, &blocks)
	var parts []string
	for _, b := range blocks {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "")
}

// Conversation is what a script sees of one request.
type Conversation struct {
	// System is the system prompt.
	System string
	// Tools are the names of the tools offered.
	Tools []string
	// NoTools: tool_choice is none (the forced final turn).
	NoTools   bool
	MaxTokens int
	// UserTexts are the user's text blocks, oldest first (the question is
	// the first).
	UserTexts []string
	// Calls are the tool calls so far with their results, in order.
	Calls []Call

	ctx context.Context
}

// Context is the request's context (a script that sleeps must watch it).
func (c *Conversation) Context() context.Context { return c.ctx }

// HasTool reports whether a tool is offered.
func (c *Conversation) HasTool(name string) bool {
	for _, t := range c.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// Call is one tool call and its result.
type Call struct {
	Name    string
	Input   map[string]any
	Result  string
	IsError bool

	answered bool
}

// Fenced is a result's fenced JSON line, decoded.
type Fenced struct {
	Provenance struct {
		Service string          `json:"service"`
		Op      string          `json:"op"`
		Tool    string          `json:"tool"`
		Args    json.RawMessage `json:"args"`
	} `json:"provenance"`
	Status int             `json:"status"`
	Data   json.RawMessage `json:"data"`
	Next   json.RawMessage `json:"next"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Fence decodes a result: three lines, BEGIN-DATA <token>, JSON, END-DATA
// <token>, with the same token. ok is false for anything else.
func (c Call) Fence() (f Fenced, token string, ok bool) {
	lines := strings.Split(c.Result, "\n")
	if len(lines) != 3 {
		return f, "", false
	}
	tok, ok1 := strings.CutPrefix(lines[0], "BEGIN-DATA ")
	end, ok2 := strings.CutPrefix(lines[2], "END-DATA ")
	if !ok1 || !ok2 || tok != end || tok == "" {
		return f, "", false
	}
	if json.Unmarshal([]byte(lines[1]), &f) != nil {
		return f, "", false
	}
	return f, tok, true
}

// Use is a tool call a script makes. ID, when set, is its tool_use id
// (a hostile model repeating one); else the server numbers it.
type Use struct {
	Name  string
	Input any
	ID    string
}

// Reply is a script's answer: text, tool calls, or a scripted API failure
// (Status, e.g. 500).
type Reply struct {
	Text   string
	Uses   []Use
	Status int
}

// Script is a scripted model: it sees the conversation and replies. It
// must not use tools when c.NoTools.
type Script func(c *Conversation) Reply
