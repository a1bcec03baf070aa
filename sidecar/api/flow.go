package api

// Flow is one cross-service flow a person allowed: values that service
// From returned may be sent to service To (by registry id). Without one,
// a value a service returned in a research or MCP session does not go
// into a call to another service (cross_service_flow).
type Flow struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Codes of the refusals of cross-service flow control (stable; docs/API.md
// and docs/MCP.md).
const (
	// CodeCrossServiceFlow: the call's args carry a value another service
	// returned in the session; nothing was sent.
	CodeCrossServiceFlow = "cross_service_flow"
	// CodeFlowLimit: the session recorded as much as it may of what
	// services returned; the result is withheld.
	CodeFlowLimit = "flow_limit"
)
