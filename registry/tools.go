package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// ToolName is the name of the one tool the registry generates: a bot
// calls every op of every service through it.
const ToolName = "service_op"

// Tool is a tool description in the Anthropic tool-use shape
// ({"name", "description", "input_schema"}; Anthropic Messages API, "Tool
// use").
type Tool struct {
	// Name is the tool's name ([ToolName]).
	Name string `json:"name"`
	// Description is the text a model reads: every service and op.
	Description string `json:"description"`
	// InputSchema is a JSON Schema (draft 2020-12) object.
	InputSchema json.RawMessage `json:"input_schema"`
}

// MCPTool is a tool description in the Model Context Protocol shape, an
// element of a tools/list result ({"name", "description", "inputSchema"};
// MCP specification, "Tools"). Its fields are [Tool]'s.
type MCPTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// MCP returns t in the MCP shape.
func (t Tool) MCP() MCPTool {
	return MCPTool(t)
}

// ToolOp is one op as the service_op tool offers it.
type ToolOp struct {
	// Service is the manifest's id, Op the op's name.
	Service string
	Op      string
	// Access is "read" or "write".
	Access string
	// Summary is the op's one-line summary.
	Summary string
	// Description is the op's longer description, if any.
	Description string
	// Confirm is the confirm template of a write op ("" for reads).
	Confirm string
	// ArgsSchema is the JSON Schema of the op's args (see [ArgsSchema]).
	ArgsSchema json.RawMessage
	// MaxPages is the op's paginate.max_pages: the most pages one call
	// may follow. 0 when the op does not page.
	MaxPages int
}

// ToolOps lists every op of every service, sorted by service id and op
// name: the closed list a model can propose, in a new slice.
func ToolOps(r *Registry) []ToolOp {
	var out []ToolOp
	for _, m := range r.shared() {
		for _, name := range m.OpNames() {
			op := m.Ops[name]
			out = append(out, ToolOp{
				Service: m.ID, Op: name, Access: op.Access, Summary: op.Summary,
				Description: op.Description, Confirm: op.Confirm, ArgsSchema: ArgsSchema(op),
				MaxPages: maxPages(op),
			})
		}
	}
	return out
}

// ArgsSchema returns the JSON Schema (draft 2020-12) of an op's args: an
// object of exactly the declared args (additionalProperties false), the
// required ones listed in "required". Each arg maps to "type" (string,
// integer, number, boolean or array), "description", "enum", "pattern" (the
// manifest's RE2 expression, anchored), "minimum" and "maximum" (min,
// max), "maxLength" (max_length, or DefaultMaxLength for a string that
// declares none) and "default"; an array arg to "items" (its values'
// schema) and "maxItems" (max_items, or DefaultMaxItems). A secret arg
// says so in its description.
//
// The schema is what a model sees; the sandbox's own checks are the
// authority (it also refuses control characters in strings and integers
// beyond 2^53-1).
func ArgsSchema(op *Op) json.RawMessage {
	return mustJSON(argsSchema(op))
}

func argsSchema(op *Op) object {
	props := object{}
	required := []string{}
	for _, name := range op.ArgNames() {
		a := op.Args[name]
		props = append(props, member{name, argSchema(a)})
		if a.Required {
			required = append(required, name)
		}
	}
	s := object{{"type", "object"}, {"properties", props}}
	if len(required) > 0 {
		s = append(s, member{"required", required})
	}
	return append(s, member{"additionalProperties", false})
}

func argSchema(a *Arg) object {
	s := object{{"type", a.Type}}
	if a.Type == TypeArray && a.Items != nil {
		if a.Description != "" {
			s = append(s, member{"description", a.Description})
		}
		n := DefaultMaxItems
		if a.MaxItems != nil {
			n = *a.MaxItems
		}
		return append(s, member{"items", argSchema(a.Items)}, member{"maxItems", n})
	}
	desc := a.Description
	if a.Secret {
		desc = strings.TrimSpace(desc + " (secret: never logged or shown)")
	}
	if desc != "" {
		s = append(s, member{"description", desc})
	}
	if len(a.Enum) > 0 {
		s = append(s, member{"enum", a.Enum})
	}
	if a.Pattern != "" {
		s = append(s, member{"pattern", a.Pattern})
	}
	if a.Type == TypeString {
		n := DefaultMaxLength
		if a.MaxLength != nil {
			n = *a.MaxLength
		}
		s = append(s, member{"maxLength", n})
	}
	if a.Min != nil {
		s = append(s, member{"minimum", *a.Min})
	}
	if a.Max != nil {
		s = append(s, member{"maximum", *a.Max})
	}
	if len(a.Default) > 0 {
		s = append(s, member{"default", json.RawMessage(a.Default)})
	}
	return s
}

// ServiceOpTool generates the service_op tool from r: one tool whose input
// is {"service", "op", "args"}, with the closed list of services and ops
// as enums and each op's args schema, and a description listing every op
// with its access and, for write ops, the confirm template.
//
// The input schema is an object whose top level holds only properties,
// required, additionalProperties and an if/then/else chain — no oneOf,
// anyOf or allOf at the top level, which the Anthropic API refuses in a
// tool's input_schema. The chain picks the service (its branch restricts
// "op" to that service's ops), then the op (its branch, titled
// "service.op", gives the args schema); the last "else" of each chain is
// false, so a pair outside the registry never validates.
func ServiceOpTool(r *Registry) Tool {
	return Tool{
		Name:        ToolName,
		Description: toolDescription(r),
		InputSchema: mustJSON(toolSchema(r)),
	}
}

func toolSchema(r *Registry) object {
	var ids, allOps []string
	seen := map[string]bool{}
	for _, m := range r.shared() {
		ids = append(ids, m.ID)
		for _, name := range m.OpNames() {
			if !seen[name] {
				seen[name] = true
				allOps = append(allOps, name)
			}
		}
	}
	slices.Sort(allOps)
	s := object{
		{"type", "object"},
		{"properties", object{
			{"service", object{
				{"type", "string"},
				{"description", "The service to call: one of " + strings.Join(ids, ", ") + "."},
				{"enum", ids},
			}},
			{"op", object{
				{"type", "string"},
				{"description", "The operation: one of the chosen service's ops, as listed in the tool description."},
				{"enum", allOps},
			}},
			{"args", object{
				{"type", "object"},
				{"description", "The op's arguments, as its schema says; {} when it takes none."},
			}},
			{"pages", object{
				{"type", "integer"},
				{"description", "Only for ops that page: read up to this many pages in one call (at most the op's max, as listed), " +
					"merged into one list; the result's next holds the args of the page after the last one read."},
				{"minimum", 1},
				{"maximum", MaxPagesLimit},
			}},
		}},
		{"required", []string{"service", "op", "args"}},
		{"additionalProperties", false},
	}
	// The service chain, built from the last service backwards; each
	// service's branch holds its op chain.
	var chain object
	services := r.shared()
	for i := len(services) - 1; i >= 0; i-- {
		m := services[i]
		names := m.OpNames()
		var opChain object
		for j := len(names) - 1; j >= 0; j-- {
			op := m.Ops[names[j]]
			var pages any = false // an op that does not page takes no pages
			if n := maxPages(op); n > 0 {
				pages = object{{"maximum", n}}
			}
			opChain = ifThenElse("op", names[j], object{
				{"title", m.ID + "." + names[j]},
				{"description", opLine(op)},
				{"properties", object{{"args", argsSchema(op)}, {"pages", pages}}},
			}, opChain)
		}
		svc := object{
			{"title", m.ID},
			{"properties", object{{"op", object{{"enum", names}}}}},
		}
		chain = ifThenElse("service", m.ID, append(svc, opChain...), chain)
	}
	return append(s, chain...)
}

// ifThenElse returns the members if/then/else: if prop equals value, then
// holds; else the rest of the chain, or false when there is none.
func ifThenElse(prop, value string, then, rest object) object {
	var els any = false
	if rest != nil {
		els = rest
	}
	return object{
		{"if", object{
			{"properties", object{{prop, object{{"const", value}}}}},
			{"required", []string{prop}},
		}},
		{"then", then},
		{"else", els},
	}
}

// opLine is one op's line in the descriptions: access, summary and, for a
// write op, the confirm template.
func opLine(op *Op) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %s", op.Access, strings.TrimSuffix(op.Summary, "."))
	if op.Description != "" {
		b.WriteString(". " + strings.TrimSuffix(strings.Join(strings.Fields(op.Description), " "), "."))
	}
	b.WriteString(".")
	if op.Confirm != "" {
		fmt.Fprintf(&b, " Confirm: %q", op.Confirm)
	}
	if n := maxPages(op); n > 0 {
		fmt.Fprintf(&b, " Pages: the result's next is the args of the next page (absent on the last); pages reads up to %d in one call.", n)
	}
	return b.String()
}

// maxPages is op's paginate.max_pages, or 0 when it does not page.
func maxPages(op *Op) int {
	if op.Paginate == nil {
		return 0
	}
	return op.Paginate.MaxPages
}

func toolDescription(r *Registry) string {
	var b strings.Builder
	b.WriteString("Run one operation (op) of a connected third-party service inside the pinned sandbox. " +
		"Pick service and op from the list below and pass args matching that op's schema ({} when it takes none). " +
		"[read] ops only read. [write] ops change data: they run only under a write grant, and only after the member " +
		"confirmed the op's confirm sentence (shown below as a template; {name} is filled with the arg's value). " +
		"A result holds only the fields the op's manifest declares. " +
		"A list op that pages returns next, the args of the next page: call the op again with them to go on; " +
		"no next means the last page. Pass pages (up to the op's limit) to read several pages in one call; " +
		"stopped then says why reading ended (e.g. last_page, pages, result_cap).\n")
	for _, m := range r.shared() {
		fmt.Fprintf(&b, "\n%s (%s)", m.ID, m.Name)
		if m.Description != "" {
			b.WriteString(": " + m.Description)
		}
		b.WriteString("\n")
		for _, name := range m.OpNames() {
			op := m.Ops[name]
			fmt.Fprintf(&b, "- %s.%s %s Args: %s\n", m.ID, name, opLine(op), op.ArgSummary())
		}
	}
	return b.String()
}

// ArgSummary renders the op's args for a tool description, in name
// order: "owner (string, required), per_page (integer, default 30)." or
// "none." when the op takes none.
func (op *Op) ArgSummary() string {
	names := op.ArgNames()
	if len(names) == 0 {
		return "none."
	}
	parts := make([]string, len(names))
	for i, n := range names {
		a := op.Args[n]
		attrs := []string{a.Type}
		if a.Type == TypeArray && a.Items != nil {
			attrs[0] = "array of " + a.Items.Type
		}
		if a.Required {
			attrs = append(attrs, "required")
		}
		if len(a.Default) > 0 {
			attrs = append(attrs, "default "+string(a.Default))
		}
		parts[i] = n + " (" + strings.Join(attrs, ", ") + ")"
	}
	return strings.Join(parts, ", ") + "."
}

// object is a JSON object that keeps its members in order, so a schema
// reads top-down: type, properties, required, then the if/then/else chain.
type object []member

type member struct {
	k string
	v any
}

// MarshalJSON writes the members in order, without HTML escaping.
func (o object) MarshalJSON() ([]byte, error) {
	return o.appendJSON(nil), nil
}

// appendJSON appends o's encoding to b. Nested objects (and slices of
// them) are written in place: encoded through MarshalJSON, each level of
// a tool schema's if/then/else chain had encoding/json check its whole
// subtree again, quadratic in the chain's depth (BenchmarkServiceOpTool).
// Every other value is what mustJSON writes.
func (o object) appendJSON(b []byte) []byte {
	b = append(b, '{')
	for i, m := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, mustJSON(m.k)...)
		b = append(b, ':')
		b = appendValue(b, m.v)
	}
	return append(b, '}')
}

// appendValue appends v's encoding to b: an object or a slice of objects
// in place, anything else as mustJSON writes it.
func appendValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case object:
		return v.appendJSON(b)
	case []object:
		if v == nil {
			return append(b, "null"...)
		}
		b = append(b, '[')
		for i, o := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = o.appendJSON(b)
		}
		return append(b, ']')
	}
	return append(b, mustJSON(v)...)
}

// mustJSON encodes a schema built from strings, numbers, booleans,
// objects and slices; it cannot fail.
func mustJSON(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("registry: encode tool schema: " + err.Error())
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
