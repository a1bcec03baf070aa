package mcpserver

import (
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lifecycle is the legacy session's lifecycle as one connection sees it
// (2025-11-25, "Lifecycle"): until the server has answered initialize,
// a request other than initialize, ping or a modern one (its _meta
// carries the protocol version, 2026-07-28) is refused with -32600
// Invalid Request. The SDK would refuse it too, with code 0, which no
// JSON-RPC client can read as an error class.
type lifecycle struct {
	// versions are the versions served (newest first), named in the
	// -32022 answer to a request whose _meta asks for another.
	versions    []string
	mu          sync.Mutex
	initialized bool
	pending     []any // ids of initialize requests not yet answered
}

// codeNotInitialized is the code of a legacy request before initialize.
const codeNotInitialized = jsonrpc.CodeInvalidRequest

const msgNotInitialized = "Invalid Request: the session is not initialized; send initialize first (protocol 2025-11-25), " +
	"or carry io.modelcontextprotocol/protocolVersion and clientCapabilities in each request's _meta (protocol 2026-07-28)"

// check refuses a request that comes before initialize was answered.
func (l *lifecycle) check(msg jsonrpc.Message) *lineError {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	v := metaVersion(req.Params)
	switch {
	case req.Method == "initialize":
		l.pending = append(l.pending, req.ID.Raw())
		return nil
	case v != "" && v < Revision20260728 && !l.initialized:
		// A per-request version the SDK would take for a legacy request
		// before initialize: the revision's answer is -32022.
		data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: l.versions, Requested: v})
		return &lineError{id: req.ID.Raw(), code: mcp.CodeUnsupportedProtocolVersion, msg: "Unsupported protocol version", data: data}
	case l.initialized, req.Method == "ping", v >= Revision20260728:
		return nil
	}
	return &lineError{id: req.ID.Raw(), code: codeNotInitialized, msg: msgNotInitialized}
}

// sent notes the server's answer to initialize.
func (l *lifecycle) sent(msg jsonrpc.Message) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, id := range l.pending {
		if id == resp.ID.Raw() {
			l.pending = append(l.pending[:i], l.pending[i+1:]...)
			if resp.Error == nil {
				l.initialized = true
			}
			return
		}
	}
}

// rawModern reports whether raw params carry a 2026-07-28 (or later)
// protocol version in _meta.
func rawModern(params json.RawMessage) bool { return metaVersion(params) >= Revision20260728 }

// metaVersion is the protocol version raw params carry in _meta ("" for
// none).
func metaVersion(params json.RawMessage) string {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	var v string
	if json.Unmarshal(p.Meta[mcp.MetaKeyProtocolVersion], &v) != nil {
		return ""
	}
	return v
}
