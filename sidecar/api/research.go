package api

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Model is the model behind research sessions (POST /v1/research): one
// Messages-API-shaped turn at a time. pinned's is the Anthropic Messages
// API through the official Go SDK.
//
// Turn sends the whole conversation so far and returns the model's reply.
// An error ends the session (the sidecar answers model_error); it must not
// carry a credential.
type Model interface {
	Turn(ctx context.Context, req *TurnRequest) (*TurnResponse, error)
}

// Block types, as the Messages API names them.
const (
	BlockText       = "text"
	BlockToolUse    = "tool_use"
	BlockToolResult = "tool_result"
)

// Roles of a Message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Block is one content block of a message: text, a tool_use the model
// asked for, or the tool_result the session answered it with.
type Block struct {
	// Type is BlockText, BlockToolUse or BlockToolResult.
	Type string
	// Text is the text of a text block.
	Text string
	// ID and Name identify a tool_use block (the tool is a palette name);
	// Input is its arguments, a JSON object.
	ID    string
	Name  string
	Input json.RawMessage
	// ToolUseID, Content and IsError make a tool_result block: the
	// tool_use it answers and the one fenced text block.
	ToolUseID string
	Content   string
	IsError   bool
}

// Message is one turn of the conversation.
type Message struct {
	// Role is RoleUser or RoleAssistant.
	Role    string
	Content []Block
}

// TurnRequest is what the session sends the model.
type TurnRequest struct {
	// System is the session's instructions.
	System string
	// Messages is the conversation so far, oldest first.
	Messages []Message
	// Tools is the palette: the read ops of the granted services.
	Tools []Tool
	// NoTools, on the forced final turn, forbids tool use (the Messages
	// API's tool_choice {"type": "none"}); Tools is still sent because the
	// conversation holds tool_use blocks.
	NoTools bool
	// MaxTokens bounds the reply.
	MaxTokens int
}

// TurnResponse is the model's reply.
type TurnResponse struct {
	Content []Block
	// StopReason is the Messages API's stop_reason ("end_turn", "tool_use",
	// "max_tokens", …), for logs.
	StopReason string
}

// Tool is one palette entry in the Anthropic tool shape.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Defaults and maxima of Limits.
const (
	DefaultToolCalls   = 12
	DefaultTurns       = 16
	DefaultResultBytes = 256 << 10
	DefaultWallTime    = 120 * time.Second

	MaxToolCalls   = 64
	MaxTurns       = 64
	MaxResultBytes = 1 << 20
	MaxWallTime    = 600 * time.Second
)

// Limits are a research session's bounds; a zero field takes its
// default.
type Limits struct {
	// ToolCalls bounds the tool_use blocks the session answers, run or
	// refused (default 12, at most 64).
	ToolCalls int `json:"tool_calls,omitempty"`
	// Turns bounds the model turns before the final one (default 16, at
	// most 64).
	Turns int `json:"turns,omitempty"`
	// ResultBytes bounds the bytes of all tool_result text entering the
	// model's context (default 256 KiB, at most 1 MiB). A result that would
	// pass it is withheld; the notice replacing it (at most 512 bytes) is
	// counted, so the total may pass the bound by that much. The notices of
	// tool calls not run past a bound are not counted.
	ResultBytes int `json:"result_bytes,omitempty"`
	// WallSeconds bounds the loop's wall time in seconds (default 120, at
	// most 600); the forced final turn gets 30 seconds more.
	WallSeconds int `json:"wall_seconds,omitempty"`
}

// Resolve fills the defaults and refuses a bound out of range.
func (l Limits) Resolve() (Limits, error) {
	fill := func(v *int, def, max int, name string) error {
		switch {
		case *v == 0:
			*v = def
		case *v < 0 || *v > max:
			return fmt.Errorf("limits.%s must be between 1 and %d", name, max)
		}
		return nil
	}
	if err := fill(&l.ToolCalls, DefaultToolCalls, MaxToolCalls, "tool_calls"); err != nil {
		return l, err
	}
	if err := fill(&l.Turns, DefaultTurns, MaxTurns, "turns"); err != nil {
		return l, err
	}
	if err := fill(&l.ResultBytes, DefaultResultBytes, MaxResultBytes, "result_bytes"); err != nil {
		return l, err
	}
	if err := fill(&l.WallSeconds, int(DefaultWallTime/time.Second), int(MaxWallTime/time.Second), "wall_seconds"); err != nil {
		return l, err
	}
	return l, nil
}

// Wall is the wall-time bound.
func (l Limits) Wall() time.Duration { return time.Duration(l.WallSeconds) * time.Second }

// Step is one tool call of a research session, as POST /v1/research
// reports it.
type Step struct {
	// Service and Op name what ran (empty when the tool name is no op of
	// the palette: Tool holds the name then).
	Service string `json:"service,omitempty"`
	Op      string `json:"op,omitempty"`
	Tool    string `json:"tool,omitempty"`
	// Args are the args as the model gave them.
	Args json.RawMessage `json:"args"`
	// Outcome is "ok" or the error code.
	Outcome string `json:"outcome"`
	// Bytes is the size of the tool_result text that entered the model's
	// context.
	Bytes int `json:"bytes"`
}
