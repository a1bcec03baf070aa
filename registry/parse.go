package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxManifestSize is the largest manifest Parse accepts, in bytes (256 KiB).
const MaxManifestSize = 256 << 10

// Limits of docs/MANIFEST.md.
const (
	maxOps        = 64
	maxArgs       = 32
	maxFields     = 64
	maxSegments   = 8     // per dot path (pick.root, pick.fields, error_message, error_details)
	maxNameLen    = 64    // name, in characters
	maxSummaryLen = 200   // op summary, in characters
	maxMaxLength  = 65536 // arg max_length, in code points
	maxPatternLen = 1024  // arg pattern, in bytes
	maxProblems   = 200   // problems reported per file
)

var (
	idRE         = regexp.MustCompile(`^[a-z][a-z0-9]{1,30}$`)
	nameRE       = regexp.MustCompile(`^[a-z][a-z0-9_]{0,47}$`) // op and arg names
	tokenRE      = regexp.MustCompile("^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$")
	queryKeyRE   = regexp.MustCompile(`^[A-Za-z0-9\-._~\[\]]+$`)
	literalSegRE = regexp.MustCompile(`^[A-Za-z0-9\-._~:@!$&'()*+,;=]+$`)
	dotSegRE     = regexp.MustCompile(`^[A-Za-z0-9_\-$@:]+$`)
	integerRE    = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)$`)
)

// hostOwnedHeaders are set by the host alone (lower case); so is every
// "proxy-*" and "x-forwarded-*" header ([HostOwnedHeader]) and the
// auth.header name. This is the one list: the loader refuses a manifest
// that declares one, and the host's egress policy refuses a request that
// carries one (ABI invariant 2, docs/SECURITY.md).
var hostOwnedHeaders = map[string]bool{
	"authorization": true, "cookie": true, "host": true, "accept-encoding": true,
	"content-type": true, "content-length": true, "transfer-encoding": true,
	"connection": true, "te": true, "trailer": true, "upgrade": true, "keep-alive": true,
	"expect": true, "forwarded": true,
}

// HostOwnedHeader reports whether the HTTP header name (any case) is one
// only the host sets: the credential and message framing (Authorization,
// Cookie, Host, Accept-Encoding, Content-Type, Content-Length, Expect),
// the hop-by-hop headers (RFC 9110 section 7.6.1: Connection, TE,
// Trailer, Upgrade, Keep-Alive, Transfer-Encoding), and the proxy headers
// (Proxy-*, Forwarded, X-Forwarded-*, RFC 7239). A manifest may not
// declare one ([Parse]); the host refuses a request that carries one. The
// manifest's own auth.header name is the host's too, per manifest.
func HostOwnedHeader(name string) bool {
	var buf [64]byte
	if l, ok := lowerASCII(buf[:0], name); ok {
		// string(l) in a map index and the prefix checks allocate nothing.
		return hostOwnedHeaders[string(l)] || bytes.HasPrefix(l, []byte("proxy-")) || bytes.HasPrefix(l, []byte("x-forwarded-"))
	}
	l := strings.ToLower(name)
	return hostOwnedHeaders[l] || strings.HasPrefix(l, "proxy-") || strings.HasPrefix(l, "x-forwarded-")
}

// lowerASCII appends name in lower case to dst when name is ASCII and
// fits dst's capacity (no allocation); ok is false otherwise, and the
// caller lowers it with strings.ToLower (Unicode case folding: the
// Kelvin sign lowers to "k").
func lowerASCII(dst []byte, name string) ([]byte, bool) {
	if len(name) > cap(dst) {
		return nil, false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= utf8.RuneSelf {
			return nil, false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst, true
}

// reservedAuthorizeParams are the authorization request parameters the
// broker sets itself (RFC 6749 section 4.1.1, RFC 7636 section 4.3); a
// manifest's authorize_params may not override them.
var reservedAuthorizeParams = map[string]bool{
	"response_type": true, "client_id": true, "redirect_uri": true, "scope": true,
	"state": true, "code_challenge": true, "code_challenge_method": true,
}

// Parse decodes and checks one manifest (format v1, docs/MANIFEST.md).
// file names the manifest in problems; when it ends in ".json" its base
// name without the extension must equal the manifest's id. data is the
// file's content, at most [MaxManifestSize] bytes of UTF-8 JSON.
//
// Parse fails closed: an unknown field, a key repeated in any object,
// trailing data, a wrong JSON type, or a broken rule of docs/MANIFEST.md
// refuses the whole manifest. The error is then an *[Error] listing every
// problem found, each with file, line, column, op and field.
//
// An accepted manifest is normalized: empty "headers", "args", "query" and
// "authorize_params" objects become nil maps, and body_json and default
// are compacted (json.Compact), so that encoding it with encoding/json
// (SetEscapeHTML(false)) and parsing the result yields an equal Manifest.
func Parse(file string, data []byte) (*Manifest, error) {
	m, _, err := Check(file, data)
	return m, err
}

// Check is [Parse] that also returns the manifest's warnings: what the
// loader accepts but a reviewer should look at, located like problems.
// Today one kind: a string arg of a read op with neither pattern nor
// enum (free text: a model can put any text a service returned into it,
// so declare the provider's format — docs/MANIFEST.md, "Args"). Warnings
// come only with an accepted manifest.
func Check(file string, data []byte) (*Manifest, []Problem, error) {
	p := &parser{file: file, data: data, bad: map[string]bool{}}
	if len(data) > MaxManifestSize {
		p.addAt(-1, "", "", fmt.Sprintf("file is %d bytes; a manifest is at most %d bytes (256 KiB)", len(data), MaxManifestSize))
		return nil, nil, p.err()
	}
	if !utf8.Valid(data) {
		p.addAt(-1, "", "", "not valid UTF-8; a manifest is UTF-8 JSON")
		return nil, nil, p.err()
	}
	if p.root = (&walker{p: p}).walk(); p.root == nil || p.bad[""] {
		return nil, nil, p.err()
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil && len(p.bad) == 0 {
		// Unreachable: the walker accepted the shape.
		p.addAt(0, "", "", "cannot decode: "+err.Error())
	}
	p.check(&m)
	if len(p.probs) > 0 {
		return nil, nil, p.err()
	}
	normalize(&m)
	return &m, p.locate(p.warns), nil
}

// normalize gives an accepted manifest the form that survives an
// encoding/json round trip (see Parse).
func normalize(m *Manifest) {
	if len(m.Headers) == 0 {
		m.Headers = nil
	}
	if o := m.Auth.OAuth; o != nil && len(o.AuthorizeParams) == 0 {
		o.AuthorizeParams = nil
	}
	for _, op := range m.Ops {
		if len(op.Args) == 0 {
			op.Args = nil
		}
		if len(op.Query) == 0 {
			op.Query = nil
		}
		if len(op.Headers) == 0 {
			op.Headers = nil
		}
		op.BodyJSON = compact(op.BodyJSON)
		for _, a := range op.Args {
			a.Default = compact(a.Default)
		}
	}
}

func compact(raw json.RawMessage) json.RawMessage {
	if raw == nil {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw // unreachable: the walker read it as JSON
	}
	return b.Bytes()
}

// parser collects the problems of one manifest.
type parser struct {
	file  string
	data  []byte
	root  *node           // where each value is
	bad   map[string]bool // paths with shape problems: later checks stay quiet at and below them
	probs []rawProblem
	warns []rawProblem // see Check
	// truncated is set when more than maxProblems problems were found.
	truncated bool
	// patterns holds each pattern checked so far (pattern), by its text:
	// a manifest's ops share patterns (an owner, a repository).
	patterns map[string]checkedPattern
}

// checkedPattern is patternProblem's answer for one pattern.
type checkedPattern struct {
	problem string
	re      *regexp.Regexp
}

// pattern is patternProblem, each text checked and compiled once per
// manifest.
func (p *parser) pattern(s string) (string, *regexp.Regexp) {
	if c, ok := p.patterns[s]; ok {
		return c.problem, c.re
	}
	problem, re := patternProblem(s)
	if p.patterns == nil {
		p.patterns = map[string]checkedPattern{}
	}
	p.patterns[s] = checkedPattern{problem, re}
	return problem, re
}

type rawProblem struct {
	off            int // byte offset; -1 for the file as a whole
	op, field, msg string
}

func (p *parser) addAt(off int, op, field, msg string) {
	if p.full() {
		return
	}
	p.probs = append(p.probs, rawProblem{off, clip(op, 100), clip(field, 200), clip(msg, 600)})
}

// clip shortens s to about n bytes by cutting out its middle, so that a
// huge value quoted in a message does not drown it.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n*2/3, n/3
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail > 0 && !utf8.RuneStart(s[len(s)-tail]) {
		tail--
	}
	return s[:head] + " … " + s[len(s)-tail:]
}

// full reports, and remembers, that no more problems are recorded.
func (p *parser) full() bool {
	if len(p.probs) >= maxProblems {
		p.truncated = true
	}
	return p.truncated
}

// add records a problem at the value op/field (or the nearest enclosing
// value present in the file), unless a shape problem covers it.
func (p *parser) add(op, field, format string, args ...any) {
	path := loc{op, field}.path()
	for up := path; len(p.bad) > 0; up = up[:strings.LastIndexAny(up, ".[")] {
		if p.bad[up] {
			return
		}
		if !strings.ContainsAny(up, ".[") {
			break
		}
	}
	if p.full() {
		return
	}
	off, _ := p.root.find(path)
	p.addAt(off, op, field, fmt.Sprintf(format, args...))
}

// has reports whether the value at op/field is present in the file.
func (p *parser) has(op, field string) bool {
	_, exact := p.root.find(loc{op, field}.path())
	return exact
}

// warn records a warning at the value op/field (see Check).
func (p *parser) warn(op, field, format string, args ...any) {
	off, _ := p.root.find(loc{op, field}.path())
	p.warns = append(p.warns, rawProblem{off, op, field, fmt.Sprintf(format, args...)})
}

// locate orders raw problems by position and gives each its line and
// column; nil for none.
func (p *parser) locate(raw []rawProblem) []Problem {
	if len(raw) == 0 {
		return nil
	}
	slices.SortStableFunc(raw, func(a, b rawProblem) int {
		if a.off != b.off {
			return a.off - b.off
		}
		return strings.Compare(a.op+"\x00"+a.field+"\x00"+a.msg, b.op+"\x00"+b.field+"\x00"+b.msg)
	})
	raw = slices.Compact(raw)
	out := make([]Problem, len(raw))
	line, lineStart, at := 1, 0, 0 // offsets only grow: count lines once
	for i, r := range raw {
		out[i] = Problem{File: p.file, Op: r.op, Field: r.field, Msg: r.msg}
		if r.off < 0 {
			continue
		}
		for off := min(r.off, len(p.data)); at < off; at++ {
			if p.data[at] == '\n' {
				line, lineStart = line+1, at+1
			}
		}
		out[i].Line, out[i].Col = line, at-lineStart+1
	}
	return out
}

// err returns the problems as an *Error, ordered by position.
func (p *parser) err() error {
	e := &Error{Problems: p.locate(p.probs)}
	if p.truncated {
		e.Problems = append(e.Problems, Problem{File: p.file, Msg: fmt.Sprintf("more problems not shown (at most %d are reported); fix these first", maxProblems)})
	}
	return e
}

func (p *parser) check(m *Manifest) {
	switch {
	case !p.has("", "manifest"):
		p.add("", "manifest", `required: "manifest": %d (the format version)`, FormatVersion)
	case m.Manifest != FormatVersion:
		p.add("", "manifest", "format version %d is not supported; this loader reads format %d", m.Manifest, FormatVersion)
	}
	switch base := filepath.Base(p.file); {
	case m.ID == "":
		p.add("", "id", "required: the service id, e.g. \"github\"")
	case !idRE.MatchString(m.ID):
		p.add("", "id", "%q must match ^[a-z][a-z0-9]{1,30}$ (lower-case letters and digits, starting with a letter)", m.ID)
	case strings.HasSuffix(base, ".json") && strings.TrimSuffix(base, ".json") != m.ID:
		p.add("", "id", "%q must equal the file name without .json: rename the file to %s.json or set the id to %q", m.ID, m.ID, strings.TrimSuffix(base, ".json"))
	}
	switch {
	case m.Name == "":
		p.add("", "name", "required: the human name of the service, e.g. \"GitHub\"")
	case utf8.RuneCountInString(m.Name) > maxNameLen:
		p.add("", "name", "is %d characters; at most %d", utf8.RuneCountInString(m.Name), maxNameLen)
	}
	p.text("", "name", m.Name, false)
	p.text("", "description", m.Description, true)
	p.url("", "docs", m.Docs, false)
	if len(m.WebHosts) > maxWebHosts {
		p.add("", "web_hosts", "has %d hosts; at most %d", len(m.WebHosts), maxWebHosts)
	}
	for i, h := range m.WebHosts {
		if msg := hostProblem(h); msg != "" {
			p.add("", "web_hosts", "host %d: %s", i+1, msg)
		} else if slices.Index(m.WebHosts, h) != i {
			p.add("", "web_hosts", "%q is listed twice", h)
		}
	}
	p.checkHost(m)
	if p.has("", "auth") {
		p.checkAuth(&m.Auth)
		p.checkRevoke(m)
	} else {
		p.add("", "auth", `required: how the credential is sent, e.g. {"scheme": "bearer"}`)
	}
	p.checkHeaders(m)
	if m.ErrorMessage != "" {
		p.dotPath("", "error_message", m.ErrorMessage)
	}
	if m.ErrorDetails != "" {
		p.dotPath("", "error_details", m.ErrorDetails)
	}
	switch {
	case len(m.Ops) == 0:
		p.add("", "ops", "required: at least one op")
	case len(m.Ops) > maxOps:
		p.add("", "ops", "has %d ops; at most %d", len(m.Ops), maxOps)
	}
	for _, name := range slices.Sorted(maps.Keys(m.Ops)) {
		if !nameRE.MatchString(name) {
			p.add(name, "", "op name must match ^[a-z][a-z0-9_]{0,47}$ (lower-case letters, digits and _, starting with a letter)")
		}
		if op := m.Ops[name]; op != nil {
			p.checkOp(name, op)
			if m.Headers == nil {
				p.headers(m, name, op.Headers, map[string]string{})
			} else {
				p.headers(m, name, op.Headers, m.Headers)
			}
			if m.GraphQL {
				p.checkGraphQLOp(name, op)
			}
		}
	}
	p.checkResources(m)
	if m.Draft != nil {
		p.add("", "draft", "this manifest is a draft written by `pinned registry import` and not reviewed yet: check every op's args, confirm sentence and pick against the provider's reference, turn on the free-text fields you want (draft.text_off: move a field into pick.fields as \"text\"), then delete \"draft\"")
	}
	if m.Viewer != "" {
		op, ok := m.Ops[m.Viewer]
		switch {
		case !ok:
			p.add("", "viewer", "names op %q, which does not exist (ops: %s)", m.Viewer, strings.Join(slices.Sorted(maps.Keys(m.Ops)), ", "))
		case op == nil:
		case op.Access != AccessRead:
			p.add("", "viewer", "names op %q, whose access is %q; the viewer must be a read op", m.Viewer, op.Access)
		default:
			for _, a := range op.ArgNames() {
				if op.Args[a] != nil && op.Args[a].Required {
					p.add("", "viewer", "names op %q, which requires arg %q; the viewer must run with no args", m.Viewer, a)
				}
			}
		}
	}
}

// text refuses control characters (but a newline where multiLine).
func (p *parser) text(op, field, s string, multiLine bool) {
	for _, r := range s {
		if unicode.IsControl(r) && !(multiLine && r == '\n') {
			what := "one line of text"
			if multiLine {
				what = "text (newlines allowed)"
			}
			p.add(op, field, "contains the control character %U; write %s without control characters", r, what)
			return
		}
	}
}

// url checks an optional (or, if required, mandatory) https URL.
func (p *parser) url(op, field, s string, required bool) {
	if s == "" {
		if required {
			p.add(op, field, "required: an https:// URL")
		}
		return
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		p.add(op, field, "%q is not a valid URL; want an https:// URL without spaces", s)
	case u.Scheme != "https":
		p.add(op, field, "%q must be an https:// URL", s)
	case u.Host == "" || u.User != nil:
		p.add(op, field, "%q must be an https:// URL with a host and no userinfo", s)
	}
}

// checkHost checks the host, or a per-connection host pattern and its
// tenant.
func (p *parser) checkHost(m *Manifest) {
	rest, tenant := strings.CutPrefix(m.Host, TenantPlaceholder+".")
	switch {
	case !tenant && strings.Contains(m.Host, "{"):
		p.add("", "host", "%q: a per-connection host is written %s.<registered domain>, the tenant's label first (\"{tenant}.atlassian.net\")", m.Host, TenantPlaceholder)
		return
	case !tenant:
		if msg := hostProblem(m.Host); msg != "" {
			p.add("", "host", "%s", msg)
		}
		if m.Tenant != nil {
			p.add("", "tenant", "only with a per-connection host (\"host\": \"{tenant}.example.com\"); this manifest's host is fixed")
		}
		return
	}
	if !strings.Contains(rest, ".") {
		p.add("", "host", "%q: the tenant's label must sit under a registered domain of at least two labels (\"{tenant}.atlassian.net\"), never directly under a top-level domain", m.Host)
	} else if msg := hostProblem(rest); msg != "" {
		p.add("", "host", "after %s.: %s", TenantPlaceholder, msg)
	}
	switch {
	case m.Tenant == nil:
		p.add("", "tenant", `required with a per-connection host: {"label": "what a member enters, e.g. your site's name"}`)
	case m.Tenant.Label == "" || utf8.RuneCountInString(m.Tenant.Label) > 100:
		p.add("", "tenant.label", "required: one line of at most 100 characters telling a member what to enter")
	case m.Tenant.Pattern != "":
		if msg, _ := p.pattern(m.Tenant.Pattern); msg != "" {
			p.add("", "tenant.pattern", "%s", msg)
		}
	}
	if m.Tenant != nil {
		p.text("", "tenant.label", m.Tenant.Label, false)
	}
}

// maxWebHosts bounds a manifest's web_hosts.
const maxWebHosts = 8

// hostProblem explains what is wrong with a manifest's host, or returns "".
func hostProblem(h string) string {
	const want = "; write the bare lower-case DNS name, e.g. \"api.github.com\""
	switch {
	case h == "":
		return "required: the one API host every op talks to" + want
	case strings.Contains(h, "://"):
		return fmt.Sprintf("%q has a scheme (requests are always https)%s", h, want)
	case strings.ContainsAny(h, "/?#"):
		return fmt.Sprintf("%q has a path; ops carry their paths%s", h, want)
	case strings.Contains(h, "@"):
		return fmt.Sprintf("%q has userinfo%s", h, want)
	case strings.HasPrefix(h, "[") || strings.Count(h, ":") > 1 || net.ParseIP(h) != nil:
		return fmt.Sprintf("%q is an IP literal%s", h, want)
	case strings.Contains(h, ":"):
		return fmt.Sprintf("%q has a port (requests always go to port 443)%s", h, want)
	case strings.HasSuffix(h, "."):
		return fmt.Sprintf("%q has a trailing dot%s", h, want)
	case h != strings.ToLower(h):
		return fmt.Sprintf("%q is not lower-case%s", h, want)
	case len(h) > 253:
		return fmt.Sprintf("is %d bytes; a DNS name is at most 253", len(h))
	}
	labels := strings.Split(h, ".")
	if len(labels) < 2 {
		return fmt.Sprintf("%q has no dot; want a fully qualified name%s", h, want)
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' ||
			strings.ContainsFunc(l, func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-') }) {
			return fmt.Sprintf("%q has the label %q; a label is 1 to 63 of a-z, 0-9 and -, not starting or ending with -%s", h, l, want)
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return fmt.Sprintf("%q is an IP literal (its last label is numeric)%s", h, want)
	}
	return ""
}

func (p *parser) checkAuth(a *Auth) {
	if a.Prefix != "" && a.Scheme != SchemeNone {
		p.add("", "auth.prefix", "only with scheme %q (the credential after a fixed text in Authorization); scheme %q writes its own", SchemeNone, a.Scheme)
	}
	twoPart := a.Scheme == SchemeBasic || a.Scheme == SchemeTemplate
	if a.User != nil && !twoPart {
		p.add("", "auth.user", "only with scheme %q or %q (a credential of two parts); remove it or use one of them", SchemeBasic, SchemeTemplate)
	}
	if a.Template != "" && a.Scheme != SchemeTemplate {
		p.add("", "auth.template", "only with scheme %q", SchemeTemplate)
	}
	if twoPart {
		switch {
		case a.User == nil:
			p.add("", "auth.user", `required with scheme %q: {"label": "what the first part is, e.g. Atlassian account email"}`, a.Scheme)
		case a.User.Label == "" || utf8.RuneCountInString(a.User.Label) > 100:
			p.add("", "auth.user.label", "required: one line of at most 100 characters telling a member what the first part of the credential is")
		case a.User.Suffix != "" && a.Scheme != SchemeBasic:
			p.add("", "auth.user.suffix", "only with scheme %q (appended to the user-id)", SchemeBasic)
		case len(a.User.Suffix) > 32 || !printableASCII(a.User.Suffix) || strings.ContainsAny(a.User.Suffix, ": "):
			p.add("", "auth.user.suffix", "%q: a suffix is at most 32 printable ASCII characters without \":\" or a space (RFC 7617: the user-id holds no colon)", a.User.Suffix)
		}
		if a.User != nil {
			p.text("", "auth.user.label", a.User.Label, false)
		}
	}
	switch a.Scheme {
	case SchemeBearer, SchemeNone, SchemeBasic, SchemeTemplate:
		if a.Header != "" {
			p.add("", "auth.header", "only with scheme %q; scheme %q sends the Authorization header", SchemeHeader, a.Scheme)
		}
		if a.Scheme == SchemeNone && a.Prefix != "" {
			switch {
			case len(a.Prefix) > 32 || !printableASCII(a.Prefix) || strings.ContainsAny(a.Prefix, "{}\\\""):
				p.add("", "auth.prefix", "%q: a prefix is at most 32 printable ASCII characters, without braces, quotes or backslashes", a.Prefix)
			case !strings.HasSuffix(a.Prefix, " ") && !strings.HasSuffix(a.Prefix, "="):
				p.add("", "auth.prefix", "%q must end with a space or \"=\", so the credential stays a token of its own (\"Bot \", \"Token token=\")", a.Prefix)
			case strings.EqualFold(strings.TrimSpace(a.Prefix), "bearer") || strings.EqualFold(strings.TrimSpace(a.Prefix), "basic"):
				p.add("", "auth.prefix", "%q: use scheme %q or %q instead of a prefix", a.Prefix, SchemeBearer, SchemeBasic)
			}
		}
		if a.Scheme == SchemeTemplate {
			t := a.Template
			switch {
			case t == "":
				p.add("", "auth.template", `required with scheme "template": the Authorization value with {user} and {secret}, e.g. "OAuth oauth_consumer_key=\"{user}\", oauth_token=\"{secret}\""`)
			case len(t) > 200 || !printableASCII(t):
				p.add("", "auth.template", "want at most 200 printable ASCII characters")
			case strings.Count(t, TemplateUser) != 1 || strings.Count(t, TemplateSecret) != 1:
				p.add("", "auth.template", "%q must hold %s and %s exactly once each", t, TemplateUser, TemplateSecret)
			case strings.ContainsAny(strings.NewReplacer(TemplateUser, "", TemplateSecret, "").Replace(t), "{}"):
				p.add("", "auth.template", "%q: the only placeholders are %s and %s", t, TemplateUser, TemplateSecret)
			case strings.HasPrefix(t, TemplateUser) || strings.HasPrefix(t, TemplateSecret):
				p.add("", "auth.template", "%q must start with the scheme's name (\"OAuth \"), not a placeholder", t)
			}
		}
	case SchemeHeader:
		switch {
		case a.Header == "":
			p.add("", "auth.header", "required with scheme %q: the header that carries the key, e.g. \"X-Api-Key\"", SchemeHeader)
		case !tokenRE.MatchString(a.Header):
			p.add("", "auth.header", "%q is not an HTTP header name (RFC 9110 token)", a.Header)
		case strings.EqualFold(a.Header, "Authorization"):
			p.add("", "auth.header", "%q is set by the host; for a key in Authorization use scheme %q (or %q)", a.Header, SchemeBearer, SchemeNone)
		case hostOwned(a.Header):
			p.add("", "auth.header", "%q is owned by the host; name the header the provider reads the key from, e.g. \"X-Api-Key\"", a.Header)
		}
	case "":
		p.add("", "auth.scheme", `required: "bearer", "none", "header", "basic" or "template"`)
	default:
		p.add("", "auth.scheme", `%q is not a scheme; want "bearer", "none", "header", "basic" or "template"`, a.Scheme)
	}
	p.url("", "auth.pat_help", a.PATHelp, false)
	o := a.OAuth
	if o == nil {
		return
	}
	p.url("", "auth.oauth.authorize_url", o.AuthorizeURL, true)
	p.url("", "auth.oauth.token_url", o.TokenURL, true)
	sep := o.ScopeSeparator
	switch sep {
	case "":
		sep = " "
	case " ", ",":
	default:
		p.add("", "auth.oauth.scope_separator", `%q is not a scope separator; want " " (the default, RFC 6749 section 3.3) or ","`, sep)
	}
	for field, scopes := range map[string][]string{"auth.oauth.scopes": o.Scopes, "auth.oauth.scopes_write": o.ScopesWrite} {
		if scopes == nil {
			p.add("", field, "required: an array of the provider scopes to ask for (may be empty: [])")
		}
		seen := map[string]bool{}
		for i, s := range scopes {
			f := field + "[" + strconv.Itoa(i) + "]"
			switch {
			case s == "" || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r > '~' || r == '"' || r == '\\' }):
				p.add("", f, "%q is not an OAuth scope token (RFC 6749 section 3.3: printable ASCII without space, \" or \\)", s)
			case strings.Contains(s, sep):
				p.add("", f, "%q contains the scope separator %q", s, sep)
			case seen[s]:
				p.add("", f, "%q is listed twice", s)
			}
			seen[s] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(o.AuthorizeParams)) {
		f := "auth.oauth.authorize_params." + k
		switch v := o.AuthorizeParams[k]; {
		case !queryKeyRE.MatchString(k):
			p.add("", f, "%q is not a query key; keys use letters, digits, - . _ ~ [ ]", k)
		case reservedAuthorizeParams[k]:
			p.add("", f, "%q is set by the broker; authorize_params may add parameters, not override %s", k, strings.Join(slices.Sorted(maps.Keys(reservedAuthorizeParams)), ", "))
		case !printableASCII(v) || hasPlaceholderStart(v):
			p.add("", f, "%q: a value is static printable ASCII, with no {arg} placeholders", v)
		}
	}
}

// checkRevoke refuses a revocation endpoint (RFC 7009) on a host the
// manifest does not already trust: the broker sends client credentials and
// tokens there, so it must be the API host or the token endpoint's host.
func (p *parser) checkRevoke(m *Manifest) {
	o := m.Auth.OAuth
	if o == nil || o.RevokeURL == "" {
		return
	}
	const f = "auth.oauth.revoke_url"
	before := len(p.probs)
	p.url("", f, o.RevokeURL, false)
	if len(p.probs) != before {
		return
	}
	u, _ := url.Parse(o.RevokeURL)
	tokenHost := ""
	if t, err := url.Parse(o.TokenURL); err == nil {
		tokenHost = t.Host
	}
	switch {
	case u.Port() != "":
		p.add("", f, "%q names a port; write the provider's https URL without one", o.RevokeURL)
	case u.RawQuery != "" || u.Fragment != "":
		p.add("", f, "%q has a query or fragment; the token goes in the POST body (RFC 7009 section 2.1)", o.RevokeURL)
	case u.Host != m.Host && u.Host != tokenHost:
		p.add("", f, "host %q is neither the API host %q nor the token_url host %q; the broker sends client credentials only to those", u.Host, m.Host, tokenHost)
	}
}

func (p *parser) checkHeaders(m *Manifest) { p.headers(m, "", m.Headers, nil) }

// headers checks static headers, a manifest's or (with taken, the
// manifest's) an op's.
func (p *parser) headers(m *Manifest, op string, hs, taken map[string]string) {
	seen := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(hs)) {
		f, v := "headers."+name, hs[name]
		lower := strings.ToLower(name)
		switch {
		case !tokenRE.MatchString(name):
			p.add(op, f, "%q is not an HTTP header name (RFC 9110 token)", name)
		case hostOwned(name) || m.Auth.Header != "" && strings.EqualFold(name, m.Auth.Header):
			p.add(op, f, "%q is set by the host; a manifest may not set Authorization, Proxy-*, Forwarded, X-Forwarded-*, Cookie, Host, Accept-Encoding, Content-Type, Content-Length, Expect, hop-by-hop headers or the auth.header name", name)
		case seen[lower] != "":
			p.add(op, f, "%q and %q name the same header (names are case-insensitive); keep one", seen[lower], name)
		case slices.ContainsFunc(slices.Collect(maps.Keys(taken)), func(k string) bool { return strings.EqualFold(k, name) }):
			p.add(op, f, "%q is one of the manifest's headers already; an op's headers add others", name)
		case v == "" || !printableASCII(v):
			p.add(op, f, "value %q: want non-empty printable ASCII", v)
		case hasPlaceholderStart(v):
			p.add(op, f, "value %q looks like a placeholder; headers are static and take no {arg}", v)
		}
		seen[lower] = name
	}
}

func hostOwned(name string) bool { return HostOwnedHeader(name) }

func printableASCII(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r > '~' })
}

// dotPath checks a dot path (pick.root, pick.fields, error_message,
// error_details).
func (p *parser) dotPath(op, field, s string) {
	segs := strings.Split(s, ".")
	if len(segs) > maxSegments {
		p.add(op, field, "%q has %d segments; at most %d", s, len(segs), maxSegments)
		return
	}
	for _, seg := range segs {
		if !dotSegRE.MatchString(seg) {
			p.add(op, field, "%q is not a dot path: segments are non-empty and use letters, digits and _ - $ @ :, joined by \".\" (e.g. \"data.viewer\")", s)
			return
		}
	}
}

// checkGraphQLOp: a GraphQL op sends the query text the manifest wrote,
// and nothing else: body_json has a "query" member that is literal text
// (no {arg}: values go in "variables", never into the query, so neither a
// caller nor a guest can change what is asked).
func (p *parser) checkGraphQLOp(name string, o *Op) {
	var body map[string]json.RawMessage
	if o.BodyJSON == nil || json.Unmarshal(o.BodyJSON, &body) != nil {
		p.add(name, "body_json", "a GraphQL op needs body_json with a \"query\" member")
		return
	}
	raw, ok := body["query"]
	var q string
	if !ok || json.Unmarshal(raw, &q) != nil {
		p.add(name, "body_json.query", "a GraphQL op needs body_json.query, the query text")
		return
	}
	pieces, err := ParseTemplate(q)
	if err != nil {
		return // reported by the template check
	}
	for _, pc := range pieces {
		if pc.Arg != "" {
			p.add(name, "body_json.query", "names {%s} inside the GraphQL text; pass values as variables (\"variables\": {\"%s\": \"{%s}\"}) and keep the query literal", pc.Arg, pc.Arg, pc.Arg)
			return
		}
	}
}

func (p *parser) checkOp(name string, o *Op) {
	switch o.Access {
	case AccessRead, AccessWrite:
	case "":
		p.add(name, "access", `required: "read" or "write"`)
	default:
		p.add(name, "access", `%q is not an access level; want "read" or "write"`, o.Access)
	}
	switch n := utf8.RuneCountInString(o.Summary); {
	case n == 0:
		p.add(name, "summary", "required: one line saying what the op does")
	case n > maxSummaryLen:
		p.add(name, "summary", "is %d characters; at most %d", n, maxSummaryLen)
	}
	p.text(name, "summary", o.Summary, false)
	p.text(name, "description", o.Description, true)
	switch {
	case o.Access == AccessWrite && o.Confirm == "":
		p.add(name, "confirm", "required on a write op: the sentence a member taps before it runs, e.g. \"Open an issue titled \\\"{title}\\\"?\"")
	case o.Access != AccessWrite && o.Confirm != "":
		p.add(name, "confirm", "only write ops ask for confirmation; remove it or make the op \"write\"")
	}
	p.text(name, "confirm", o.Confirm, false)
	// hasBody: the method takes a body. methodKnown: the body checks below
	// mean something (a refused method is one problem, not also "has no
	// body").
	hasBody, methodKnown := false, true
	switch o.Method {
	case "GET", "DELETE":
	case "POST", "PUT", "PATCH":
		hasBody = true
	case "":
		methodKnown = false
		p.add(name, "method", "required: GET, POST, PUT, PATCH or DELETE")
	default:
		methodKnown = false
		switch up := strings.ToUpper(o.Method); up {
		case "GET", "DELETE", "POST", "PUT", "PATCH":
			p.add(name, "method", "%q must be written in upper case: %q", o.Method, up)
		default:
			p.add(name, "method", "%q is not allowed; want GET, POST, PUT, PATCH or DELETE (upper case)", o.Method)
		}
	}

	if len(o.Args) > maxArgs {
		p.add(name, "args", "has %d args; at most %d", len(o.Args), maxArgs)
	}
	for _, a := range o.ArgNames() {
		if !nameRE.MatchString(a) {
			p.add(name, "args."+a, "arg name must match ^[a-z][a-z0-9_]{0,47}$ (lower-case letters, digits and _, starting with a letter)")
		}
		if arg := o.Args[a]; arg != nil {
			p.checkArg(name, a, arg)
			if o.Access == AccessRead && arg.Type == TypeString && arg.Pattern == "" && len(arg.Enum) == 0 {
				p.warn(name, "args."+a, "string arg %q of a read op is free text (no pattern, no enum): a model could put anything a service returned into it; declare the provider's format (a pattern with a short max_length)", a)
			}
			if it := arg.Items; o.Access == AccessRead && arg.Type == TypeArray && it != nil && it.Type == TypeString && it.Pattern == "" && len(it.Enum) == 0 {
				p.warn(name, "args."+a+".items", "array arg %q of a read op holds free text (no pattern, no enum): a model could put anything a service returned into it; declare the provider's format of each value", a)
			}
		}
	}

	used := map[string]bool{}
	p.checkPath(name, o, used)
	for _, k := range o.QueryKeys() {
		if !queryKeyRE.MatchString(k) {
			p.add(name, "query."+k, "%q is not a query key; keys are non-empty and use letters, digits, - . _ ~ [ ]", k)
		}
		p.template(name, "query."+k, o.Query[k], o, used, false)
	}
	if o.BodyJSON != nil {
		if !hasBody && methodKnown {
			p.add(name, "body_json", "a %s request has no body; body_json goes only with POST, PUT or PATCH", o.Method)
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(o.BodyJSON))
		dec.UseNumber()
		if dec.Decode(&v) == nil {
			if _, ok := v.(map[string]any); !ok {
				p.add(name, "body_json", "must be a JSON object (the request body), got %s", jsonKind(v))
			}
			p.bodyValue(name, []string{"body_json"}, v, o, used)
		}
	}
	if o.BodyForm != nil {
		switch {
		case o.BodyJSON != nil:
			p.add(name, "body_form", "an op has one body: body_json or body_form, never both")
		case !hasBody && methodKnown:
			p.add(name, "body_form", "a %s request has no body; body_form goes only with POST, PUT or PATCH", o.Method)
		case len(o.BodyForm) == 0:
			p.add(name, "body_form", "is empty; leave it out for no body")
		}
	}
	for _, k := range o.FormKeys() {
		if !queryKeyRE.MatchString(k) {
			p.add(name, "body_form."+k, "%q is not a form key; keys are non-empty and use letters, digits, - . _ ~ [ ]", k)
		}
		p.template(name, "body_form."+k, o.BodyForm[k], o, used, false)
	}
	inConfirm := map[string]bool{}
	p.template(name, "confirm", o.Confirm, o, inConfirm, false)
	for a := range inConfirm {
		used[a] = true
		if arg := o.Args[a]; arg != nil && arg.Type == TypeArray {
			p.add(name, "confirm", "names array arg %q; the consent shows every value of an array after the sentence, so leave it out of the confirm line", a)
			continue
		}
		if arg := o.Args[a]; arg != nil && arg.Secret {
			p.add(name, "confirm", "shows secret arg %q; a secret is never displayed: leave it out of the confirm line", a)
		}
		if arg := o.Args[a]; arg != nil && !arg.Required && len(arg.Default) == 0 {
			p.add(name, "confirm", "names optional arg %q without a default; the sentence a member taps must be complete, so make it required, give it a default, or leave it out", a)
		}
	}
	for _, a := range o.ArgNames() {
		if !used[a] {
			p.add(name, "args."+a, "is declared but no template uses it; use it as {%s} in the path, query, body_json, body_form or confirm, or remove it", a)
		}
	}
	for _, a := range o.ArgNames() {
		if arg := o.Args[a]; arg != nil && arg.Type == TypeArray {
			if o.BodyForm != nil {
				p.checkWholeUses(name, o, a, "body_form", "array arg %q cannot go in %s; an array is sent as a query key repeated per value or a body_json array")
			}
			p.checkWholeUses(name, o, a, "", "array arg %q is used inside %q; an array is a whole value: exactly %q as a query value (the key repeated per value) or a body_json string (a JSON array)")
			if (arg.Style != "" || arg.Explode != nil) && !slices.Contains(slices.Collect(maps.Values(o.Query)), "{"+a+"}") {
				p.add(name, "args."+a+".style", "array arg %q is not sent in a query; style and explode say how a query writes it (a body_json array is JSON), so remove them", a)
			}
		}
	}
	p.checkTarget(name, o)
	p.checkPick(name, o.Pick)
	if o.Paginate != nil {
		p.checkPaginate(name, o)
	}
}

// MaxCursorLength bounds the max_length of a string paginate arg, in
// code points: the provider chooses the cursor, and it reaches the caller
// outside the pick (docs/MANIFEST.md, "Paginate").
const MaxCursorLength = 1024

// checkCursorUses refuses a paginate arg the request uses other than as
// a whole value: every template naming it must be exactly "{arg}" (a
// query value, a form value, or a body_json string such as a GraphQL
// variable). The provider chooses the cursor, so it may replace one value
// of the request, never be spliced into text that says what is asked. (A
// path arg is required, and a paginate arg optional, so it is never in
// the path; a read op has no confirm line.)
func (p *parser) checkCursorUses(name string, o *Op, arg string) {
	p.checkWholeUses(name, o, arg, "", "uses paginate arg %q inside %q; the provider chooses the cursor, so it must be a whole value (%q), never part of one")
}

// checkWholeUses refuses a template of o's query, body_form or body_json
// naming arg other than as the whole value "{arg}", with msg (taking the
// arg, the template and "{arg}"). With only "body_form" it refuses every
// form value naming arg, msg taking the arg and "body_form".
func (p *parser) checkWholeUses(name string, o *Op, arg, only, msg string) {
	whole := "{" + arg + "}"
	bad := func(field, s string) {
		if s == whole && only == "" {
			return
		}
		uses := map[string]bool{}
		for i := 0; ; {
			open, end, _ := nextPlaceholder(s, i)
			if open < 0 {
				break
			}
			uses[s[open+1:end]] = true
			i = end
		}
		switch {
		case !uses[arg]:
		case only != "":
			p.add(name, field, msg, arg, only)
		default:
			p.add(name, field, msg, arg, clip(s, 80), whole)
		}
	}
	if only == "" {
		for _, k := range o.QueryKeys() {
			bad("query."+k, o.Query[k])
		}
	}
	for _, k := range o.FormKeys() {
		bad("body_form."+k, o.BodyForm[k])
	}
	if o.BodyJSON != nil && only == "" {
		var v any
		if json.Unmarshal(o.BodyJSON, &v) == nil {
			var walk func(segs []string, v any)
			walk = func(segs []string, v any) {
				switch v := v.(type) {
				case map[string]any:
					for _, k := range slices.Sorted(maps.Keys(v)) {
						walk(append(segs, k), v[k])
					}
				case []any:
					for i, e := range v {
						walk(append(segs, "["+strconv.Itoa(i)+"]"), e)
					}
				case string:
					bad(locOf(segs).field, v)
				}
			}
			walk([]string{"body_json"}, v)
		}
	}
}

// paginatePathWhat says what each paginate path names, for messages.
var paginatePathWhat = map[string]string{
	"cursor":      "next cursor in the body",
	"has_more":    "boolean saying a next page exists",
	"last_item":   "value, inside each item at pick.root, the next page starts after",
	"page":        "current page number",
	"total_pages": "page count",
}

// checkPaginate checks an op's paginate block (docs/MANIFEST.md,
// "Paginate"): a read op, a known style with exactly its fields, an
// optional declared arg of the right type whose declaration bounds what
// comes back outside the pick, and a page bound.
func (p *parser) checkPaginate(name string, o *Op) {
	pg := o.Paginate
	const f = "paginate"
	if o.Access == AccessWrite {
		p.add(name, f, "only read ops page: following pages repeats the request, which a write op must never do")
	}
	// Which path fields each style takes: required (true) or optional.
	fields := map[string]map[string]bool{
		PaginateLink:      {},
		PaginateCursor:    {"cursor": true, "has_more": false},
		PaginateLastItem:  {"has_more": true, "last_item": true},
		PaginatePageCount: {"page": true, "total_pages": true},
	}
	want, known := fields[pg.Style]
	switch {
	case pg.Style == "":
		p.add(name, f+".style", `required: "link", "cursor", "last_item" or "page_count"`)
	case !known:
		p.add(name, f+".style", `%q is not a paging style; want "link" (a Link header rel="next"), "cursor" (a body path), "last_item" (has_more and the last item's id) or "page_count" (current and total pages)`, pg.Style)
	}
	if known {
		for _, x := range []struct{ field, v string }{
			{"cursor", pg.Cursor}, {"has_more", pg.HasMore}, {"last_item", pg.LastItem},
			{"page", pg.Page}, {"total_pages", pg.TotalPages},
		} {
			required, takes := want[x.field]
			switch {
			case x.v == "" && required:
				p.add(name, f+"."+x.field, "required with style %q: the dot path of the %s", pg.Style, paginatePathWhat[x.field])
			case x.v != "" && !takes:
				p.add(name, f+"."+x.field, "style %q takes no %s; remove it", pg.Style, x.field)
			case x.v != "":
				p.dotPath(name, f+"."+x.field, x.v)
			}
		}
	}
	switch {
	case !p.has(name, f+".max_pages"):
		p.add(name, f+".max_pages", "required: how many pages one call may follow, 1 to %d", MaxPagesLimit)
	case pg.MaxPages < 1 || pg.MaxPages > MaxPagesLimit:
		p.add(name, f+".max_pages", "%d is out of range; want 1 to %d", pg.MaxPages, MaxPagesLimit)
	}
	if pg.Arg == "" {
		p.add(name, f+".arg", "required: the declared arg that carries the cursor or page (%s)", declared(o))
		return
	}
	a, ok := o.Args[pg.Arg]
	if !ok {
		p.add(name, f+".arg", "%q is not a declared arg (%s)", pg.Arg, declared(o))
		return
	}
	if a == nil {
		return
	}
	af := f + ".arg"
	switch wantType := map[string]string{PaginateCursor: TypeString, PaginateLastItem: TypeString, PaginatePageCount: TypeInteger}[pg.Style]; {
	case a.Required:
		p.add(name, af, "arg %q is required; the cursor arg is optional (the first page is asked without it)", pg.Arg)
	case len(a.Default) > 0:
		p.add(name, af, "arg %q has a default; the cursor arg takes none (the first page is asked without it)", pg.Arg)
	case a.Secret:
		p.add(name, af, "arg %q is secret; a cursor comes back to the caller in next, so it cannot be secret", pg.Arg)
	case wantType != "" && a.Type != wantType:
		p.add(name, af, "arg %q is %q; style %q carries a %s", pg.Arg, a.Type, pg.Style, wantType)
	case a.Type != TypeString && a.Type != TypeInteger:
		p.add(name, af, "arg %q is %q; a link page arg is a string or an integer", pg.Arg, a.Type)
	case a.Type == TypeString && a.Pattern == "" && a.Enum == nil:
		p.add(name, af, "arg %q declares no pattern; a cursor comes back outside the pick, so its pattern (with max_length) is its review, e.g. \"^[A-Za-z0-9_-]+$\"", pg.Arg)
	case a.Type == TypeString && a.Enum == nil && (a.MaxLength == nil || *a.MaxLength > MaxCursorLength):
		p.add(name, af, "arg %q needs a max_length of at most %d; a cursor comes back outside the pick, so bound how much provider text it can carry (without one it could carry %d)", pg.Arg, MaxCursorLength, DefaultMaxLength)
	case a.Type == TypeInteger && a.Max == nil:
		p.add(name, af, "arg %q declares no max; a page number comes back outside the pick, so bound it, e.g. \"max\": 1000", pg.Arg)
	}
	p.checkCursorUses(name, o, pg.Arg)
	if pg.Style == PaginateLink {
		var keys []string
		for _, k := range o.QueryKeys() {
			if o.Query[k] == "{"+pg.Arg+"}" {
				keys = append(keys, k)
			}
		}
		if len(keys) != 1 {
			p.add(name, af, "with style \"link\", arg %q must be the whole template of exactly one query key (e.g. \"query\": {\"page\": \"{%s}\"}); it is of %d", pg.Arg, pg.Arg, len(keys))
		}
	}
}

// maxMaxItems bounds an array arg's max_items.
const maxMaxItems = 1000

func (p *parser) checkArg(op, name string, a *Arg) {
	f := "args." + name
	switch a.Type {
	case TypeString, TypeInteger, TypeNumber, TypeBoolean, TypeArray:
	case "":
		p.add(op, f+".type", `required: "string", "integer", "number", "boolean" or "array"`)
	default:
		p.add(op, f+".type", `%q is not a type; want "string", "integer", "number", "boolean" or "array"`, a.Type)
	}
	p.text(op, f+".description", a.Description, true)
	if a.Type != TypeArray {
		if a.Style != "" || a.Explode != nil {
			p.add(op, f+".style", "only array args take style and explode; this arg is %q", a.Type)
		}
		if a.Items != nil {
			p.add(op, f+".items", "only array args take items; this arg is %q", a.Type)
		}
		if a.MaxItems != nil {
			p.add(op, f+".max_items", "only array args take max_items; this arg is %q", a.Type)
		}
		p.checkValue(op, f, a)
		return
	}
	// An array: its own constraints are its items' and its length.
	if a.MaxItems != nil && (*a.MaxItems < 1 || *a.MaxItems > maxMaxItems) {
		p.add(op, f+".max_items", "%d is out of range; want 1 to %d", *a.MaxItems, maxMaxItems)
	}
	for _, x := range []struct {
		field string
		set   bool
	}{{"pattern", a.Pattern != ""}, {"enum", a.Enum != nil}, {"min", a.Min != nil}, {"max", a.Max != nil}, {"max_length", a.MaxLength != nil}} {
		if x.set {
			p.add(op, f+"."+x.field, "an array arg declares %s on its items (\"items\": {\"type\": \"string\", \"%s\": …})", x.field, x.field)
		}
	}
	if a.Default != nil {
		p.add(op, f+".default", "an array arg takes no default; leave it out to send nothing")
	}
	if a.Secret {
		p.add(op, f+".secret", "an array arg cannot be secret; declare a secret as a string arg")
	}
	switch a.Style {
	case "", StyleForm:
	case StyleSpaceDelimited, StylePipeDelimited:
		if a.Explode == nil || *a.Explode {
			p.add(op, f+".explode", "style %q joins the values in one pair: it needs \"explode\": false (OpenAPI 3 style values)", a.Style)
		}
	default:
		p.add(op, f+".style", "%q is not a style; want \"form\" (the default), \"spaceDelimited\" or \"pipeDelimited\" (OpenAPI 3 style values)", a.Style)
	}
	it := a.Items
	if it == nil {
		p.add(op, f+".items", `required for an array arg: each value's type and constraints, e.g. {"type": "string", "enum": ["open", "closed"]}`)
		return
	}
	if it.Type == TypeArray || it.Items != nil || it.MaxItems != nil {
		p.add(op, f+".items.type", "an array's items are strings, integers, numbers or booleans, not arrays")
		return
	}
	for _, x := range []struct {
		field string
		set   bool
	}{{"description", it.Description != ""}, {"required", it.Required}, {"default", it.Default != nil}, {"secret", it.Secret}} {
		if x.set {
			p.add(op, f+".items."+x.field, "items take a type and constraints only (enum, pattern, min, max, max_length); %s belongs to the array arg, if anywhere", x.field)
		}
	}
	p.checkValue(op, f+".items", it)
}

// checkValue checks a's type-specific constraints at field f (an arg or
// an array's items).
func (p *parser) checkValue(op, f string, a *Arg) {
	isStr, isNum := a.Type == TypeString, a.Type == TypeInteger || a.Type == TypeNumber
	var re *regexp.Regexp
	if a.Pattern != "" {
		if !isStr {
			p.add(op, f+".pattern", "only string args take a pattern; this arg is %q", a.Type)
		} else if msg, compiled := p.pattern(a.Pattern); msg != "" {
			p.add(op, f+".pattern", "%s", msg)
		} else {
			re = compiled
		}
	}
	if a.MaxLength != nil {
		if !isStr {
			p.add(op, f+".max_length", "only string args take max_length; this arg is %q", a.Type)
		} else if *a.MaxLength < 1 || *a.MaxLength > maxMaxLength {
			p.add(op, f+".max_length", "%d is out of range; want 1 to %d (code points)", *a.MaxLength, maxMaxLength)
		}
	}
	if a.Enum != nil {
		switch {
		case !isStr:
			p.add(op, f+".enum", "only string args take an enum; this arg is %q", a.Type)
		case len(a.Enum) == 0:
			p.add(op, f+".enum", "is empty; list the allowed values or leave enum out")
		}
		seen := map[string]bool{}
		for i, v := range a.Enum {
			ef := f + ".enum[" + strconv.Itoa(i) + "]"
			if seen[v] {
				p.add(op, ef, "%q is listed twice", v)
			} else if msg := stringProblem(a, re, v); isStr && msg != "" {
				p.add(op, ef, "%q %s", v, msg)
			}
			seen[v] = true
		}
	}
	for _, b := range []struct {
		field string
		v     *float64
	}{{".min", a.Min}, {".max", a.Max}} {
		switch {
		case b.v == nil:
		case !isNum:
			p.add(op, f+b.field, "only integer and number args take min and max; this arg is %q", a.Type)
		case a.Type == TypeInteger && *b.v != math.Trunc(*b.v):
			p.add(op, f+b.field, "%v is not a whole number; an integer arg takes integer bounds", *b.v)
		}
	}
	if isNum && a.Min != nil && a.Max != nil && *a.Min > *a.Max {
		p.add(op, f+".min", "min %v is greater than max %v", *a.Min, *a.Max)
	}
	if a.Default != nil {
		if a.Required {
			p.add(op, f+".default", "a required arg is always passed, so it takes no default; drop one of them")
		} else if msg := defaultProblem(a, re); msg != "" {
			p.add(op, f+".default", "%s %s", a.Default, msg)
		}
	}
}

// patternProblem explains why s is not an anchored RE2 pattern, or
// returns "" and s compiled.
func patternProblem(s string) (string, *regexp.Regexp) {
	if len(s) > maxPatternLen {
		return fmt.Sprintf("is %d bytes; a pattern is at most %d", len(s), maxPatternLen), nil
	}
	if !strings.HasPrefix(s, "^") || !strings.HasSuffix(s, "$") {
		return fmt.Sprintf("%q must be anchored: start with ^ and end with $, e.g. \"^[a-z]+$\"", s), nil
	}
	tree, err := syntax.Parse(s, syntax.Perl)
	var re *regexp.Regexp
	if err == nil {
		re, err = regexp.Compile(s)
	}
	if err != nil {
		return fmt.Sprintf("%q is not an RE2 pattern: %v", s, err), nil
	}
	if tree.Op != syntax.OpConcat || len(tree.Sub) < 2 || tree.Sub[0].Op != syntax.OpBeginText || tree.Sub[len(tree.Sub)-1].Op != syntax.OpEndText {
		return fmt.Sprintf("%q must match the whole value: ^ and $ must enclose every alternative, e.g. \"^(?:a|b)$\" rather than \"^a|b$\" (and no (?m))", s), nil
	}
	return "", re
}

// stringProblem says why v does not satisfy string arg a (re is its
// compiled pattern, if valid), or returns "".
func stringProblem(a *Arg, re *regexp.Regexp, v string) string {
	limit := DefaultMaxLength
	if a.MaxLength != nil {
		limit = *a.MaxLength
	}
	switch {
	case re != nil && !re.MatchString(v):
		return fmt.Sprintf("does not match the pattern %q", a.Pattern)
	case utf8.RuneCountInString(v) > limit:
		return fmt.Sprintf("is longer than max_length (%d code points)", limit)
	}
	return ""
}

// defaultProblem says why a's default does not satisfy a's declaration,
// or returns "".
func defaultProblem(a *Arg, re *regexp.Regexp) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(a.Default))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return "is not JSON" // unreachable: the walker read it
	}
	bounds := func(f float64) string {
		if a.Min != nil && f < *a.Min || a.Max != nil && f > *a.Max {
			return fmt.Sprintf("is outside min/max [%v, %v]", deref(a.Min), deref(a.Max))
		}
		return ""
	}
	switch a.Type {
	case TypeString:
		s, ok := v.(string)
		switch {
		case !ok:
			return "is not a string; a string arg's default is a JSON string"
		case a.Enum != nil && !slices.Contains(a.Enum, s):
			return fmt.Sprintf("is not in the enum [%s]", strings.Join(a.Enum, ", "))
		}
		return stringProblem(a, re, s)
	case TypeInteger:
		n, ok := v.(json.Number)
		if !ok || !integerRE.MatchString(n.String()) {
			return "is not an integer; write it without fraction or exponent, e.g. 30"
		}
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil {
			return "is out of the 64-bit integer range"
		}
		return bounds(float64(i))
	case TypeNumber:
		n, ok := v.(json.Number)
		if !ok {
			return "is not a number"
		}
		f, err := n.Float64()
		if err != nil {
			return "is out of range"
		}
		return bounds(f)
	case TypeBoolean:
		if _, ok := v.(bool); !ok {
			return "is not true or false"
		}
	}
	return ""
}

func deref(f *float64) any {
	if f == nil {
		return "none"
	}
	return *f
}

// checkPath checks the path template: literal segments and whole-segment
// placeholders naming required string or integer args.
func (p *parser) checkPath(op string, o *Op, used map[string]bool) {
	s := o.Path
	switch {
	case s == "":
		p.add(op, "path", "required: the request path, starting with /")
		return
	case s[0] != '/':
		p.add(op, "path", "%q must start with /", s)
		return
	case strings.ContainsAny(s, "?#"):
		p.add(op, "path", "%q contains ? or #; declare query parameters under \"query\"", s)
		return
	case s == "/":
		return
	}
	for _, seg := range strings.Split(s[1:], "/") {
		pieces, err := ParseTemplate(seg)
		switch {
		case seg == "":
			p.add(op, "path", "%q has an empty segment (a doubled or trailing /)", s)
		case seg == "." || seg == "..":
			p.add(op, "path", "%q has the segment %q; dot segments are not allowed", s, seg)
		case err == nil && len(pieces) == 1 && pieces[0].Arg != "":
			name := pieces[0].Arg
			a, ok := o.Args[name]
			if !ok {
				p.add(op, "path", "%q: %q is not a declared arg (%s)", s, name, declared(o))
			} else if a != nil {
				if !a.Required {
					p.add(op, "args."+name, "is a path arg, so it must be required (\"required\": true)")
				}
				if a.Type == TypeNumber || a.Type == TypeBoolean || a.Type == TypeArray {
					p.add(op, "args."+name, "is a path arg of type %q; path args are string or integer", a.Type)
				}
			}
			used[name] = true
		case strings.ContainsAny(seg, "{}"):
			p.add(op, "path", "%q: segment %q: a placeholder fills a whole segment, like /{name}/, and literal segments take no braces", s, seg)
		case !literalSegRE.MatchString(seg):
			p.add(op, "path", "%q: segment %q: literal segments use only letters, digits, - . _ ~ and :@!$&'()*+,;= (no percent-encoding)", s, seg)
		}
	}
}

// declared lists o's args for messages.
func declared(o *Op) string {
	if len(o.Args) == 0 {
		return "the op declares no args"
	}
	return "declared args: " + strings.Join(o.ArgNames(), ", ")
}

// template checks the brace rule in template s: every "{" followed by a
// letter, digit or "_" must be "{name}" with name a declared arg of o.
// Names used are added to used. body says s is inside body_json, where the
// likely slip is GraphQL text.
func (p *parser) template(op, field, s string, o *Op, used map[string]bool, body bool) {
	for i := 0; ; {
		open, end, closed := nextPlaceholder(s, i)
		if open < 0 {
			return
		}
		name, slip := s[open+1:end], s[open:end]
		if _, ok := o.Args[name]; !ok {
			hint := fmt.Sprintf("a literal brace is followed by a space: %q", "{ "+name)
			if body {
				hint = fmt.Sprintf("GraphQL text keeps a space inside braces: %q", "{ "+name)
			}
			p.add(op, field, "%q starts a placeholder but %q is not a declared arg (%s); %s%s", slip, name, hint, declared(o), near(s, open, end))
		} else if !closed {
			p.add(op, field, "%q starts a placeholder but is not closed: write %q for the arg, or %q for a literal brace%s", slip, slip+"}", "{ "+name, near(s, open, end))
		}
		used[name] = true
		i = end
	}
}

// near quotes the text around s[open:end] when s is long enough for the
// slip to be hard to find.
func near(s string, open, end int) string {
	const ctx = 24
	if len(s) <= 2*ctx {
		return ""
	}
	from, to := max(0, open-ctx), min(len(s), end+ctx)
	for from > 0 && !utf8.RuneStart(s[from]) {
		from--
	}
	for to < len(s) && !utf8.RuneStart(s[to]) {
		to++
	}
	q := s[from:to]
	if from > 0 {
		q = "…" + q
	}
	if to < len(s) {
		q += "…"
	}
	return fmt.Sprintf("; near %q", q)
}

// bodyValue checks the templates inside a body_json value at path segs.
// Object keys are not templates, and a key that would read as a
// placeholder is refused. The field path is built only for a problem.
func (p *parser) bodyValue(op string, segs []string, v any, o *Op, used map[string]bool) {
	field := func() string { return locOf(segs).field }
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			segs := append(segs, k)
			if hasPlaceholderStart(k) && !p.full() {
				p.add(op, locOf(segs).field, "key %q reads like a placeholder; body_json keys are not templates: write the key literally without \"{\" before a letter, digit or _", k)
			}
			p.bodyValue(op, segs, e, o, used)
		}
	case []any:
		for i, e := range v {
			p.bodyValue(op, append(segs, "["+strconv.Itoa(i)+"]"), e, o, used)
		}
	case string:
		if hasPlaceholderStart(v) && !p.full() {
			p.template(op, field(), v, o, used, true)
		}
	}
}

// jsonKind names the JSON type of a decoded value, for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

func (p *parser) checkPick(op string, pk *Pick) {
	if pk == nil {
		p.add(op, "pick", "required: the response fields the op may return, each with its data-flow class, e.g. {\"fields\": {\"id\": \"identifier\"}} ({} returns no data)")
		return
	}
	if pk.Root != "" {
		p.dotPath(op, "pick.root", pk.Root)
	}
	switch {
	case pk.Fields == nil:
		p.add(op, "pick.fields", "required: an object of dot path → data-flow class, e.g. {\"id\": \"identifier\", \"title\": \"text\"} ({} returns no data)")
	case len(pk.Fields) > maxFields:
		p.add(op, "pick.fields", "has %d fields; at most %d", len(pk.Fields), maxFields)
	}
	for _, f := range pk.Fields {
		ff := "pick.fields." + f
		p.dotPath(op, ff, f)
		switch c := pk.Classes[f]; {
		case c == "":
			p.add(op, ff, "declares no data-flow class; say what %q is: one of %s (text is free text a third party can write: titles, bodies, names, descriptions, notes)", f, strings.Join(Classes(), ", "))
		case !slices.Contains(Classes(), c):
			p.add(op, ff, "%q is not a data-flow class; want one of %s", c, strings.Join(Classes(), ", "))
		}
	}
}

// checkTarget checks a write op's target args (see Op.Target).
func (p *parser) checkTarget(name string, o *Op) {
	if o.Target == nil {
		return
	}
	if o.Access != AccessWrite {
		p.add(name, "target", "only write ops have a target (the consent shows it first); remove it")
		return
	}
	if len(o.Target) == 0 {
		p.add(name, "target", "is empty; leave it out to show the path args first, or name the args that say where the write goes")
		return
	}
	seen := map[string]bool{}
	for i, a := range o.Target {
		f := "target[" + strconv.Itoa(i) + "]"
		arg := o.Args[a]
		switch {
		case seen[a]:
			p.add(name, f, "%q is listed twice", a)
		case arg == nil:
			p.add(name, f, "names %q, which is not a declared arg", a)
		case arg.Secret:
			p.add(name, f, "names secret arg %q; a secret is never displayed", a)
		case arg.Type == TypeArray:
			p.add(name, f, "names array arg %q; a target is one value per arg (the consent shows the array after the sentence)", a)
		case !arg.Required && len(arg.Default) == 0:
			p.add(name, f, "names optional arg %q without a default; a target is always sent: make it required or give it a default", a)
		}
		seen[a] = true
	}
}
