// Package registry holds the manifest format v1: the Go types, the
// fail-closed loader ([Parse]), the registry embedded in the binary
// ([Default]) and the tool descriptions generated from it.
//
// A manifest is the review surface of a service: the ONE API host its
// operations may touch, how the credential is presented, and a closed list
// of operations, each with the fields ([Pick]) allowed back. The format is
// specified in docs/MANIFEST.md; every rule listed there is enforced by
// [Parse] and has a test.
//
// This package is the bottom layer of the project: it imports nothing of
// ours.
package registry

import "encoding/json"

// FormatVersion is the only manifest format this package accepts (the
// "manifest" field).
const FormatVersion = 1

// Access levels of an op (Op.Access). A grant with access "read" runs only
// read ops; "write" runs both.
const (
	AccessRead  = "read"
	AccessWrite = "write"
)

// Auth schemes (Auth.Scheme): how a pasted credential (kind "pat" or the
// legacy empty kind) is presented. A credential of kind "oauth" is always
// sent as "Authorization: Bearer <token>" (RFC 6750 section 2.1), whatever
// the scheme says.
const (
	// SchemeBearer sends "Authorization: Bearer <token>" (RFC 6750).
	SchemeBearer = "bearer"
	// SchemeNone sends the bare credential as the whole Authorization value,
	// as Linear's personal API keys want.
	SchemeNone = "none"
	// SchemeHeader sends the bare credential in the header named by
	// Auth.Header.
	SchemeHeader = "header"
	// SchemeBasic sends HTTP Basic (RFC 7617): "Authorization: Basic"
	// and the base64 of the credential's user part, Auth.User.Suffix, ":"
	// and its secret. Both parts are the host's: the guest sees neither.
	SchemeBasic = "basic"
	// SchemeTemplate sends a credential of two parts in Authorization as
	// Auth.Template writes them (Trello's `OAuth oauth_consumer_key="{user}",
	// oauth_token="{secret}"`).
	SchemeTemplate = "template"
)

// Tenant describes the label of a per-connection host ("acme" of
// acme.atlassian.net).
type Tenant struct {
	// Label tells a member what to enter ("Your Atlassian site: the acme
	// of acme.atlassian.net").
	Label string `json:"label"`
	// Pattern, when set, is an anchored RE2 the label must also match;
	// every label is a lower-case DNS label (letters, digits and inner
	// hyphens, 1 to 63 characters) whatever the pattern says.
	Pattern string `json:"pattern,omitempty"`
}

// TenantPlaceholder is the first label of a per-connection host pattern.
const TenantPlaceholder = "{tenant}"

// UserPart describes the first part of a two-part credential: the
// user-id of HTTP Basic, the key beside a token. A connection holds it
// sealed with the secret; the guest never sees it.
type UserPart struct {
	// Label tells a member what it is ("Atlassian account email").
	Label string `json:"label"`
	// Suffix, for scheme "basic" only, is appended to the user-id before
	// encoding (Zendesk's "/token" for an API token).
	Suffix string `json:"suffix,omitempty"`
}

// Placeholders of Auth.Template.
const (
	TemplateUser   = "{user}"
	TemplateSecret = "{secret}"
)

// Arg types (Arg.Type), named as in JSON Schema.
const (
	TypeString  = "string"
	TypeInteger = "integer"
	TypeNumber  = "number"
	TypeBoolean = "boolean"
	// TypeArray is a list of values of Arg.Items, sent whole: in a query
	// as the key repeated once per value, in body_json as a JSON array.
	TypeArray = "array"
)

// DefaultMaxItems bounds an array arg that declares no max_items.
const DefaultMaxItems = 100

// Manifest is one service, format v1 (registry/manifests/<id>.json). Only
// [Parse] makes a valid one. A [Registry] hands out deep copies
// ([Manifest.Clone]): changing one changes nothing else.
type Manifest struct {
	// Manifest is the format version; it MUST be 1.
	Manifest int `json:"manifest"`
	// ID names the service in grants, tools and file names:
	// ^[a-z][a-z0-9]{1,30}$, equal to the file's base name.
	ID string `json:"id"`
	// Name is the human name ("GitHub").
	Name string `json:"name"`
	// Description is one sentence for the catalog.
	Description string `json:"description,omitempty"`
	// Docs is the provider's API reference (https URL).
	Docs string `json:"docs,omitempty"`
	// WebHosts are the provider's own web hosts (bare lower-case DNS
	// names, at most 8, e.g. "github.com"): pinned web links a URL from
	// the service's data (an issue's html_url) only when it is https to
	// one of these, and to no other host.
	WebHosts []string `json:"web_hosts,omitempty"`
	// Host is the ONE API host every op talks to: a bare lower-case DNS
	// name, no scheme, port, path, userinfo or IP literal. Requests go to
	// https://<Host>:443 only. With Tenant it is a pattern whose first
	// label is "{tenant}" ("{tenant}.atlassian.net"): each connection
	// fixes the label, and every op of it talks to that one host.
	Host string `json:"host"`
	// Tenant, present exactly when Host has "{tenant}", says what a
	// member enters to connect (their site's label) and which labels are
	// allowed.
	Tenant *Tenant `json:"tenant,omitempty"`
	// Auth says how the credential is presented and, for OAuth services,
	// where the broker sends members.
	Auth Auth `json:"auth"`
	// Headers are static request headers sent with every op (e.g. GitHub's
	// Accept and X-GitHub-Api-Version): names are HTTP tokens, unique
	// case-insensitively; values are non-empty printable ASCII without
	// placeholders. Names the host owns ([HostOwnedHeader]: Authorization,
	// Cookie, Host, Proxy-*, Forwarded, X-Forwarded-*, Expect,
	// Accept-Encoding, Content-Type, Content-Length, hop-by-hop headers;
	// and the Auth.Header name) are refused. Nil when there are none.
	Headers map[string]string `json:"headers,omitempty"`
	// GraphQL marks a GraphQL API: a 200 answer with a non-empty top-level
	// "errors" array is an error, and an error whose extensions.code is
	// "RATELIMITED" is a rate limit.
	GraphQL bool `json:"graphql,omitempty"`
	// ErrorMessage is the dot path of the human message in an error body
	// (default "message"; "errors.message" for GraphQL services). A path
	// through an array takes its first element.
	ErrorMessage string `json:"error_message,omitempty"`
	// ErrorDetails is the dot path of the field-level details in an error
	// body, e.g. "errors" for DNSimple's {"message": "Validation failed",
	// "errors": {"registrant_id": ["is invalid"]}}. Optional. The host
	// adds the strings found there (by their keys) to the message, within
	// the same cap: "Validation failed (registrant_id: is invalid)".
	ErrorDetails string `json:"error_details,omitempty"`
	// Viewer names the read op that identifies the credential's owner; the
	// catalog runs it to verify a pasted token.
	Viewer string `json:"viewer,omitempty"`
	// Ops is the closed list of operations, by name (^[a-z][a-z0-9_]{0,47}$).
	Ops map[string]*Op `json:"ops"`
	// Resources, by name, declare which args name a member's resources,
	// so a grant can be limited to chosen ones ([Resource]). Nil when the
	// service declares none: its grants cannot be limited.
	Resources map[string]Resource `json:"resources,omitempty"`
	// Draft marks a manifest `pinned registry import` wrote that no
	// reviewer has passed yet. [Parse] refuses a manifest that carries it,
	// so it is nil in every parsed manifest.
	Draft *Draft `json:"draft,omitempty"`
}

// Draft is the mark of an imported, unreviewed manifest: where it came
// from and what a reviewer must decide before deleting the mark.
type Draft struct {
	// Source names the description the draft was imported from.
	Source string `json:"source"`
	// Review lists what a reviewer must look at, one sentence each.
	Review []string `json:"review,omitempty"`
	// TextOff lists, by op, the free-text fields of the response that
	// the draft leaves out of pick: a reviewer turns one on by moving it
	// into pick.fields with class "text".
	TextOff map[string][]string `json:"text_off,omitempty"`
}

// Auth describes how a credential is presented (Scheme, Header) and how a
// member obtains one (PATHelp, OAuth).
type Auth struct {
	// Scheme is "bearer", "none", "header", "basic" or "template"; see
	// the Scheme constants.
	Scheme string `json:"scheme"`
	// Header is the header name for scheme "header", and only then.
	Header string `json:"header,omitempty"`
	// Prefix, for scheme "none" only, is the text the credential follows
	// in Authorization (Discord's "Bot ", PagerDuty's "Token token=").
	Prefix string `json:"prefix,omitempty"`
	// User is required for schemes "basic" and "template", and only then:
	// what the credential's first part is.
	User *UserPart `json:"user,omitempty"`
	// Template is the Authorization value of scheme "template", and only
	// then: printable ASCII holding {user} and {secret} once each.
	Template string `json:"template,omitempty"`
	// PATHelp is the provider page where a member mints a scoped token.
	PATHelp string `json:"pat_help,omitempty"`
	// OAuth is present when the provider offers an OAuth 2.0 authorization
	// code flow (RFC 6749 section 4.1) the broker can relay.
	OAuth *OAuth `json:"oauth,omitempty"`
}

// OAuth are the provider's OAuth 2.0 endpoints and scopes.
type OAuth struct {
	// AuthorizeURL is the authorization endpoint (RFC 6749 section 3.1).
	AuthorizeURL string `json:"authorize_url"`
	// TokenURL is the token endpoint (RFC 6749 section 3.2).
	TokenURL string `json:"token_url"`
	// RevokeURL is the token revocation endpoint (RFC 7009 section 2),
	// or "" when the provider documents none. Its host is the manifest's
	// host or the token endpoint's host; the broker reaches no other.
	RevokeURL string `json:"revoke_url,omitempty"`
	// Scopes are asked for by a read-only connection. Required, may be
	// empty (never nil in a parsed manifest); RFC 6749 scope tokens.
	Scopes []string `json:"scopes"`
	// ScopesWrite are asked for by a read & write connection. Required,
	// may be empty.
	ScopesWrite []string `json:"scopes_write"`
	// ScopeSeparator joins scopes in the "scope" parameter: "" or " " (a
	// space, RFC 6749 section 3.3, the default) or "," (as some providers
	// want).
	ScopeSeparator string `json:"scope_separator,omitempty"`
	// Refresh is true when the provider issues refresh tokens
	// (RFC 6749 section 6).
	Refresh bool `json:"refresh,omitempty"`
	// PKCE is true when the provider supports PKCE with S256 (RFC 7636).
	PKCE bool `json:"pkce,omitempty"`
	// AuthorizeParams are extra static query parameters for the
	// authorization request (e.g. Linear's "prompt": "consent"). They may
	// not set the broker's own parameters (response_type, client_id,
	// redirect_uri, scope, state, code_challenge, code_challenge_method).
	AuthorizeParams map[string]string `json:"authorize_params,omitempty"`
}

// Op is one operation: a single HTTP request to the manifest's host.
type Op struct {
	// Access is "read" or "write".
	Access string `json:"access"`
	// Summary is one line saying what the op does, for tool descriptions.
	Summary string `json:"summary"`
	// Description adds detail for tool descriptions.
	Description string `json:"description,omitempty"`
	// Confirm is the sentence a member taps before a write op runs, with
	// {arg} placeholders. Required on write ops, refused on read ops.
	Confirm string `json:"confirm,omitempty"`
	// Method is GET, POST, PUT, PATCH or DELETE.
	Method string `json:"method"`
	// Path is the request path template, starting with "/"; each {arg}
	// placeholder fills exactly one whole segment ([ParseTemplate] splits
	// it).
	Path string `json:"path"`
	// Args declares every argument the op takes, by name
	// (^[a-z][a-z0-9_]{0,47}$). Undeclared arguments are refused.
	Args map[string]*Arg `json:"args,omitempty"`
	// Headers are static headers this op sends besides the manifest's
	// (SendGrid's Accept on one endpoint), by the same rules; a name the
	// manifest's headers have is refused. Nil when there are none.
	Headers map[string]string `json:"headers,omitempty"`
	// Query maps query keys to value templates. A key whose template names
	// an absent optional arg is left out.
	Query map[string]string `json:"query,omitempty"`
	// BodyJSON is a JSON object template sent as application/json. A
	// string that is exactly "{arg}" takes the arg's typed value; other
	// strings interpolate as text; object keys are literal. Never together
	// with BodyForm. Parse stores it compacted, in the manifest's key order.
	BodyJSON json.RawMessage `json:"body_json,omitempty"`
	// BodyForm maps form keys to value templates, sent as
	// application/x-www-form-urlencoded. Never together with BodyJSON.
	BodyForm map[string]string `json:"body_form,omitempty"`
	// Target, on a write op, names the args that say where the write goes
	// (a repository's owner and name, an account and a domain, a team):
	// a consent shows them first, quoted, so no other arg's text can push
	// them out of view. Absent means the path args, in path order
	// ([Op.TargetArgs]). Each is a required arg or one with a default,
	// never secret.
	Target []string `json:"target,omitempty"`
	// Pick is the projection of the response: nothing else comes back.
	Pick *Pick `json:"pick"`
	// Paginate, on a read op, says where the next page's cursor is and
	// which declared arg carries it; the result then carries the args of
	// the next page (docs/MANIFEST.md, "Paginate"). Nil when the op does
	// not page.
	Paginate *Paginate `json:"paginate,omitempty"`
}

// Paginate styles (Paginate.Style): where the next page comes from.
const (
	// PaginateLink follows an RFC 8288 Link header with rel="next"
	// (GitHub): only the value of Arg's query key is taken from its URL,
	// which must name the manifest's host and the request's own path.
	PaginateLink = "link"
	// PaginateCursor reads the next cursor (a string) at the body path
	// Cursor, optionally gated by the boolean at HasMore (HubSpot
	// paging.next.after; GraphQL pageInfo endCursor/hasNextPage).
	PaginateCursor = "cursor"
	// PaginateLastItem continues after the last item: while the boolean
	// at HasMore is true, the field LastItem of the last element at
	// pick.root is the next cursor (Stripe has_more, starting_after).
	PaginateLastItem = "last_item"
	// PaginatePageCount counts pages: while the integer at Page is below
	// the integer at TotalPages, the next page is Page+1 (DNSimple
	// pagination.current_page, pagination.total_pages).
	PaginatePageCount = "page_count"
)

// MaxPagesLimit bounds Paginate.MaxPages.
const MaxPagesLimit = 100

// Paginate declares how an op's result leads to its next page. The host
// reads the cursor from the raw response beside the pick (the cursor is
// the only value that comes back outside the pick, and only as the value
// of the declared arg Arg, checked against that arg's declaration).
type Paginate struct {
	// Style is "link", "cursor", "last_item" or "page_count".
	Style string `json:"style"`
	// Arg is the declared, optional arg that carries the cursor: a string
	// for cursor and last_item, an integer for page_count, either for
	// link (then the whole template of exactly one query key).
	Arg string `json:"arg"`
	// Cursor is the dot path of the next cursor in the body (style
	// cursor only).
	Cursor string `json:"cursor,omitempty"`
	// HasMore is the dot path of a boolean saying a next page exists:
	// required with last_item, optional with cursor.
	HasMore string `json:"has_more,omitempty"`
	// LastItem is the dot path, inside each element at pick.root, of the
	// value the next page starts after (style last_item only).
	LastItem string `json:"last_item,omitempty"`
	// Page and TotalPages are dot paths of the current page number and
	// the page count (style page_count only).
	Page       string `json:"page,omitempty"`
	TotalPages string `json:"total_pages,omitempty"`
	// MaxPages bounds how many pages one call may follow (host.Call.Pages),
	// 1 to MaxPagesLimit.
	MaxPages int `json:"max_pages"`
}

// Arg declares one argument of an op.
type Arg struct {
	// Type is "string", "integer", "number" or "boolean".
	Type string `json:"type"`
	// Description tells a model what to pass.
	Description string `json:"description,omitempty"`
	// Required args must be present (path args must be required).
	Required bool `json:"required,omitempty"`
	// Default is used when the arg is absent; it must satisfy the
	// declaration itself (an integer's default is written without fraction
	// or exponent). Parse stores it compacted.
	Default json.RawMessage `json:"default,omitempty"`
	// Enum lists the allowed values of a string arg.
	Enum []string `json:"enum,omitempty"`
	// Pattern is an RE2 expression a string arg must match; it must be
	// anchored (start with ^ and end with $, enclosing every alternative)
	// and at most 1024 bytes.
	Pattern string `json:"pattern,omitempty"`
	// Min and Max bound an integer or number arg (inclusive).
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
	// MaxLength bounds a string arg in Unicode code points; absent means
	// DefaultMaxLength.
	MaxLength *int `json:"max_length,omitempty"`
	// Secret args are never logged.
	Secret bool `json:"secret,omitempty"`
	// Items, for an array arg only, declares each value: a type of string,
	// integer, number or boolean and its constraints (enum, pattern,
	// min, max, max_length); nothing else.
	Items *Arg `json:"items,omitempty"`
	// MaxItems, for an array arg only, bounds its length (1 to 1000;
	// absent means DefaultMaxItems).
	MaxItems *int `json:"max_items,omitempty"`
	// Style and Explode, for an array arg in a query only, say how its
	// values are written, in OpenAPI 3's terms (Parameter Object, "style
	// values"): style "form" (the default) with explode true (the
	// default) repeats the key per value ("labels=a&labels=b"); with
	// explode false it sends one pair, the values joined by a comma
	// ("labels=a,b"). Style "spaceDelimited" or "pipeDelimited" (explode
	// false only) join them by a space or "|". A joined value may not
	// contain its delimiter, nor be empty.
	Style   string `json:"style,omitempty"`
	Explode *bool  `json:"explode,omitempty"`
}

// Array styles (Arg.Style), named as in OpenAPI 3.
const (
	StyleForm           = "form"
	StyleSpaceDelimited = "spaceDelimited"
	StylePipeDelimited  = "pipeDelimited"
)

// Delimiter returns the byte that joins an array arg's values in one
// query value (',', ' ' or '|'), or 0 when each value is a pair of its
// own (explode) or the arg is no array.
func (a *Arg) Delimiter() byte {
	if a == nil || a.Type != TypeArray || a.Explode == nil || *a.Explode {
		return 0
	}
	switch a.Style {
	case StyleSpaceDelimited:
		return ' '
	case StylePipeDelimited:
		return '|'
	}
	return ','
}

// DefaultMaxLength bounds a string arg that declares no max_length, in
// Unicode code points.
const DefaultMaxLength = 4096

// Data-flow classes of a picked field (Pick.Classes): what a value is,
// so that what a service returns can be told apart from what it merely
// enumerates. Flow control (package internal/flow) records the values of
// the classes that carry a member's data or a third party's text.
const (
	// ClassIdentifier: a name or id that picks out one thing: a login, a
	// repository or domain name, an email address, a record id.
	ClassIdentifier = "identifier"
	// ClassEnum: one of a small set the provider defines (a state, a
	// type, a plan, a language).
	ClassEnum = "enum"
	// ClassNumber: a count, an amount or a measure.
	ClassNumber = "number"
	// ClassBoolean: true or false (an object or list of flags too).
	ClassBoolean = "boolean"
	// ClassTime: a date or a timestamp.
	ClassTime = "time"
	// ClassURL: a URL.
	ClassURL = "url"
	// ClassText: free text a third party can write — a title, a body, a
	// person's or company's name, a description, a note. Treat it as data,
	// never as instructions.
	ClassText = "text"
)

// Classes lists every data-flow class, in the order docs/MANIFEST.md
// gives them.
func Classes() []string {
	return []string{ClassIdentifier, ClassEnum, ClassNumber, ClassBoolean, ClassTime, ClassURL, ClassText}
}

// Pick is the projection applied to a response before anything else sees
// it. In a manifest it is {"root": "...", "fields": {"<dot path>":
// "<class>", ...}}: each kept field with its data-flow class, in the
// file's order.
type Pick struct {
	// Root is a dot path of object keys to descend first ("data.viewer",
	// "results"); empty means the whole body.
	Root string `json:"root,omitempty"`
	// Fields are dot paths kept in each element (when the value at Root is
	// an array) or in the object, in the manifest's order. A path through
	// an array maps over its elements. Missing fields are omitted.
	// Required; an empty list returns no data (never nil in a parsed
	// manifest).
	Fields []string `json:"-"`
	// Classes is each field's data-flow class (one of [Classes]), by
	// dot path: every field has one.
	Classes map[string]string `json:"-"`
}

// Class returns the data-flow class of the picked field path ("" when
// path is not a field).
func (p *Pick) Class(path string) string { return p.Classes[path] }
