package research

import (
	"context"
	"encoding/json"
)

// Model is one model behind a small interface: one Messages-API-shaped turn
// at a time. The shipped implementation is package internal/research/claude
// (the Anthropic Messages API through the official Go SDK); tests and the
// demo point it at a fake Messages API (package internal/demo/fakemodel).
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
	// tool_use it answers and the one fenced text block (see Fence).
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
	// System is the session's instructions (see SystemPrompt).
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
