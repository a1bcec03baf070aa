package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Protocol revisions (docs/MCP.md, "Protocol revisions").
//
// A legacy request belongs to a session opened by initialize (2025-11-25
// and the earlier revisions the SDK speaks). A modern request (2026-07-28)
// carries its protocol version, client capabilities and client info in
// its own _meta, with no session: server/discover, stateless streamable
// HTTP, write confirmations as input_required results.
const (
	// Revision20251125 is the newest legacy revision.
	Revision20251125 = "2025-11-25"
	// Revision20260728 is the modern revision.
	Revision20260728 = "2026-07-28"
	// ProtocolBoth (Config.Protocol's default) serves both eras: a
	// request with the modern _meta is served statelessly, initialize
	// opens a legacy session.
	ProtocolBoth = "both"
)

// Cache hints of modern list and read results (2026-07-28, "Caching"):
// tools/list is the person's own (private); the manifests and the
// discovery answer are the same for everyone (public). Nothing changes
// while the server runs: a connection added later is served after a
// restart.
const (
	ToolsTTLMs     = 5 * 60 * 1000
	ResourcesTTLMs = 60 * 60 * 1000
)

// draftResultFields are the result members 2026-07-28 added; a legacy
// session never gets them.
var draftResultFields = []string{"ttlMs", "cacheScope", "resultType", "inputRequests", "requestState"}

// undeclaredMethods are the requests of capabilities the server does not
// declare (prompts, completions, logging, resource subscriptions): each
// is refused with -32601 Method not found, on either era.
var undeclaredMethods = map[string]string{
	"prompts/list":          "prompts",
	"prompts/get":           "prompts",
	"completion/complete":   "completions",
	"logging/setLevel":      "logging",
	"resources/subscribe":   "resources.subscribe",
	"resources/unsubscribe": "resources.subscribe",
}

// protocolVersions is what a server started for protocol serves, newest
// first: a subset of the SDK's.
func protocolVersions(protocol string) []string {
	all := mcp.SupportedProtocolVersions()
	switch protocol {
	case Revision20260728:
		return []string{Revision20260728}
	case Revision20251125:
		return slices.DeleteFunc(all, func(v string) bool { return v >= Revision20260728 })
	}
	return all
}

// requestVersion is the protocol version a request carries in its _meta
// ("" when it carries none: a legacy request).
func requestVersion(req mcp.Request) string {
	p := req.GetParams()
	if p == nil {
		return ""
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return ""
	}
	v, _ := p.GetMeta()[mcp.MetaKeyProtocolVersion].(string)
	return v
}

// isModern reports whether a request follows 2026-07-28 (per-request
// _meta) rather than a legacy session.
func isModern(req mcp.Request) bool { return requestVersion(req) >= Revision20260728 }

// unsupportedVersion is the UnsupportedProtocolVersionError (-32022) of
// 2026-07-28, naming the versions this server serves.
func (s *Server) unsupportedVersion(requested string) error {
	data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: s.versions, Requested: requested})
	return &jsonrpc.Error{
		Code:    mcp.CodeUnsupportedProtocolVersion,
		Message: fmt.Sprintf("unsupported protocol version %q: this server speaks %s", requested, strings.Join(s.versions, ", ")),
		Data:    data,
	}
}

// protocolGate is the outermost receiving middleware: it refuses what the
// server was not started for and what it does not declare, gives every
// refusal a JSON-RPC error code, and keeps 2026-07-28 members out of
// legacy results.
func (s *Server) protocolGate(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		modern := isModern(req)
		if !modern && s.cfg.Protocol == Revision20260728 {
			requested := ""
			if ip, ok := req.GetParams().(*mcp.InitializeParams); ok && ip != nil {
				requested = ip.ProtocolVersion
			} else if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss.InitializeParams() != nil {
				requested = ss.InitializeParams().ProtocolVersion
			}
			return nil, s.unsupportedVersion(requested)
		}
		if capability, ok := undeclaredMethods[method]; ok {
			data, _ := json.Marshal(map[string]string{"reason": "the server does not declare the " + capability + " capability"})
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + method, Data: data}
		}
		res, err := next(ctx, method, req)
		if err != nil {
			return nil, wireError(err)
		}
		if modern || res == nil {
			return res, nil
		}
		return legacyResult{res}, nil
	}
}

// wireError keeps a JSON-RPC error's code and gives any other error
// -32603 Internal error (the SDK's own errors would go out as code 0).
func wireError(err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		if we.Code == 0 {
			return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		return err
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// legacyResult is a result sent on a legacy session: the same JSON less
// the members 2026-07-28 added (draftResultFields).
type legacyResult struct{ mcp.Result }

// MarshalJSON is the result's JSON without draftResultFields.
func (r legacyResult) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.Result)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return b, nil //nolint:nilerr // not an object: nothing to strip
	}
	for _, k := range draftResultFields {
		delete(m, k)
	}
	return json.Marshal(m)
}

// setCacheable gives modern list, read and discover results their cache
// hints (legacy results lose them in protocolGate).
func setCacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	switch req.(type) {
	case *mcp.ListToolsRequest:
		c.TTLMs, c.CacheScope = ToolsTTLMs, "private"
	default:
		c.TTLMs, c.CacheScope = ResourcesTTLMs, "public"
	}
}
