// Package claude is the shipped api.Model: the Anthropic Messages API
// (https://docs.anthropic.com/en/api/messages) with tool use, through the
// official Go SDK (github.com/anthropics/anthropic-sdk-go).
//
// The package is internal (only cmd/pinned wires it in). It may import
// package internal/research, the SDK and the standard library. The
// API key is the only secret it holds; it goes in the x-api-key header
// (the SDK's), never in a log or an error.
package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// DefaultModel is the model asked for when Config.Model is empty.
const DefaultModel = "claude-sonnet-4-5"

// DefaultTimeout bounds one Messages API request.
const DefaultTimeout = 60 * time.Second

// EnvKey is the environment variable the key is read from when no key
// file is given (the SDK's own default name).
const EnvKey = "ANTHROPIC_API_KEY"

// Config configures a Client.
type Config struct {
	// APIKey is the Anthropic API key. Required.
	APIKey string
	// BaseURL is the API's base URL; default the SDK's
	// (https://api.anthropic.com). Tests point it at a fake.
	BaseURL string
	// Model is the model id; default DefaultModel.
	Model string
	// HTTPClient, if set, is the client requests go through (a copy of
	// it that follows no redirect).
	HTTPClient *http.Client
	// Timeout bounds one request; default DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is the SDK's retry count on 429/5xx; default 2 (the
	// SDK's). Negative turns retries off.
	MaxRetries int
}

// Client is a api.Model over the Messages API.
type Client struct {
	c     anthropic.Client
	model string
}

// New builds a Client.
func New(cfg Config) (*Client, error) {
	if strings.TrimSpace(cfg.APIKey) == "" {
		return nil, errors.New("claude: an API key is required (a key file or " + EnvKey + ")")
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	opts := []option.RequestOption{option.WithAPIKey(strings.TrimSpace(cfg.APIKey)), option.WithRequestTimeout(cfg.Timeout)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	// Redirects are never followed: Go forwards a custom header such as
	// x-api-key to wherever a redirect points (it strips only
	// Authorization and cookies, and only across domains), so a redirect
	// would hand the key to another host. A redirect answer is an error.
	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		hc = &c
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return errRedirect }
	hc.Transport = capTransport{base: hc.Transport}
	opts = append(opts, option.WithHTTPClient(hc))
	switch {
	case cfg.MaxRetries < 0:
		opts = append(opts, option.WithMaxRetries(0))
	case cfg.MaxRetries > 0:
		opts = append(opts, option.WithMaxRetries(cfg.MaxRetries))
	}
	return &Client{c: anthropic.NewClient(opts...), model: cfg.Model}, nil
}

// KeyFromFile reads an API key file (one line; surrounding white space
// is dropped). An empty path reads EnvKey instead.
func KeyFromFile(path string) (string, error) {
	if path == "" {
		k := strings.TrimSpace(os.Getenv(EnvKey))
		if k == "" {
			return "", errors.New("claude: no API key: give a key file or set " + EnvKey)
		}
		return k, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("claude: key file: %w", err)
	}
	k := strings.TrimSpace(string(b))
	if k == "" || strings.ContainsAny(k, "\r\n") {
		return "", fmt.Errorf("claude: key file %s must hold one line, the key", path)
	}
	return k, nil
}

// Turn sends one Messages API request and maps the reply.
func (c *Client) Turn(ctx context.Context, req *api.TurnRequest) (*api.TurnResponse, error) {
	p := anthropic.MessageNewParams{
		Model:     anthropic.Model(c.model),
		MaxTokens: int64(req.MaxTokens),
	}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	for _, t := range req.Tools {
		var schema struct {
			Properties any      `json:"properties"`
			Required   []string `json:"required"`
		}
		extra := map[string]any{}
		if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
			return nil, fmt.Errorf("claude: tool %s: schema: %w", t.Name, err)
		}
		var all map[string]any
		_ = json.Unmarshal(t.InputSchema, &all)
		for k, v := range all {
			if k != "type" && k != "properties" && k != "required" {
				extra[k] = v
			}
		}
		tp := anthropic.ToolParam{
			Name:        t.Name,
			Description: anthropic.String(t.Description),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: schema.Properties, Required: schema.Required, ExtraFields: extra},
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tp})
	}
	if req.NoTools {
		none := anthropic.NewToolChoiceNoneParam()
		p.ToolChoice = anthropic.ToolChoiceUnionParam{OfNone: &none}
	}
	for _, m := range req.Messages {
		var blocks []anthropic.ContentBlockParamUnion
		for _, b := range m.Content {
			switch b.Type {
			case api.BlockText:
				blocks = append(blocks, anthropic.NewTextBlock(b.Text))
			case api.BlockToolUse:
				input := b.Input
				if len(input) == 0 {
					input = json.RawMessage("{}")
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(b.ID, input, b.Name))
			case api.BlockToolResult:
				blocks = append(blocks, anthropic.NewToolResultBlock(b.ToolUseID, b.Content, b.IsError))
			}
		}
		if m.Role == api.RoleAssistant {
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(blocks...))
		} else {
			p.Messages = append(p.Messages, anthropic.NewUserMessage(blocks...))
		}
	}
	msg, err := c.c.Messages.New(ctx, p)
	if err != nil {
		return nil, safeError(err)
	}
	out := &api.TurnResponse{StopReason: string(msg.StopReason)}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			out.Content = append(out.Content, api.Block{Type: api.BlockText, Text: b.Text})
		case "tool_use":
			out.Content = append(out.Content, api.Block{Type: api.BlockToolUse, ID: b.ID, Name: b.Name, Input: b.Input})
		}
	}
	return out, nil
}

// MaxResponseBytes bounds one Messages API answer: a reply under
// max_tokens is a few KiB; a server sending more is refused.
const MaxResponseBytes = 4 << 20

var errTooLarge = errors.New("claude: answer too large")

// capTransport ends a response body past MaxResponseBytes with
// errTooLarge.
type capTransport struct{ base http.RoundTripper }

func (c capTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := c.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(r)
	if err == nil {
		resp.Body = &capBody{rc: resp.Body, left: MaxResponseBytes}
	}
	return resp, err
}

type capBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *capBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the cap from a longer one.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, errTooLarge
		}
		return b.rc.Read(p)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *capBody) Close() error { return b.rc.Close() }

// errRedirect refuses every redirect of the Messages API (see New).
var errRedirect = errors.New("claude: redirect refused")

// safeError keeps an API error's status and type, never a request dump
// (the SDK's error text includes the request URL and body).
func safeError(err error) error {
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		return fmt.Errorf("the Messages API answered HTTP %d", ae.StatusCode)
	}
	if errors.Is(err, errTooLarge) {
		return fmt.Errorf("the Messages API answered more than %d bytes", MaxResponseBytes)
	}
	if errors.Is(err, errRedirect) {
		return errors.New("the Messages API answered a redirect, which is never followed (check the base URL)")
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	return errors.New("the Messages API could not be reached")
}
