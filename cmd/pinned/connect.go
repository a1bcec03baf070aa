package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/elevenmessenger/pinned/secret"

	"golang.org/x/term"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/connstore"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/rotate"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

const connectUsage = `Usage: pinned connect SERVICE [--cap read|write] [flags]

Connects a service for your own agent (pinned mcp, docs/MCP.md): reads
the token, verifies it by running the manifest's viewer op through the
sandbox, and stores the connection sealed to a local key in
$XDG_CONFIG_HOME/pinned/connections.sealed (mode 0600).

The token is read without echo from the terminal, or from stdin when it is
not a terminal, or from the environment variable named by --token-env;
never from a flag value. An expiring OAuth pair: --kind oauth with
--refresh-env and --token-expires-in.

The cap is read-only unless --cap write: under a read-only cap the agent
gets no write tools at all; under read & write, every write still waits
for you to confirm its sentence.

--only [KIND=]NAME (repeatable) limits the agent to chosen resources of a
service whose manifest declares them (GitHub: owner/repo): every grant made
from the connection seals the limit, the list op shows only those, and a
call naming another is refused resource_denied before anything is sent.

Examples:
  pinned connect github                      # paste the token at the prompt
  printf %s "$GITHUB_TOKEN" | pinned connect github --cap write
  printf %s ghp_fake_pinned_github_token_000000000000 | pinned connect github --fake
  pinned connect github --cap write --only pinned-tester/notes   # this repository only

Exit status: 0 connected, 1 the token was refused (the viewer op's error
is printed) or the store failed, 2 bad usage.

Flags:
`

const connectionsUsage = `Usage: pinned connections
       pinned connections remove SERVICE [--broker-url URL --broker-token-file FILE]

Lists your connections (service, cap, credential kind, viewer identity,
when connected; never a token), or removes one.

Removing an OAuth connection of a service whose manifest declares a
revocation endpoint (auth.oauth.revoke_url) also revokes its tokens at the
provider through the broker (RFC 7009; the broker holds the client
secret): --broker-url with --broker-token-file or PINNED_MCP_BROKER_TOKEN.
The connection is removed locally whatever the provider answers; the
command says whether the provider confirmed the revocation and, when it
did not or cannot, the page where you revoke the token yourself.

Exit status: 0 success, 1 no such connection, the store failed, or the
provider did not confirm a revocation that was tried (the connection is
removed all the same), 2 bad usage.
`

// stdin is where connect reads a token that is piped in; a variable so
// tests can replace it.
var stdin io.Reader = os.Stdin

// stdinIsTerminal reports whether stdin is a terminal (then the token is read
// without echo).
var stdinIsTerminal = func() bool { return term.IsTerminal(int(os.Stdin.Fd())) }

// hostOverride builds the engine override of --fake or --connect-to and
// --cacert (cmd names the command in messages); the cleanup stops the
// in-process fake.
func hostOverride(cmd string, useFake bool, connectTo, caFile string) (*host.Override, func(), error) {
	switch {
	case useFake && connectTo != "":
		return nil, nil, fmt.Errorf("--fake and --connect-to exclude each other")
	case useFake:
		fake, err := fakeapi.New()
		if err != nil {
			return nil, nil, fmt.Errorf("start the provider fake: %s", errText(err))
		}
		return &host.Override{Addr: fake.Addr(), CAPEM: fake.CACertPEM()}, fake.Close, nil
	case connectTo != "" || caFile != "":
		if connectTo == "" || caFile == "" {
			return nil, nil, errors.New("--connect-to and --cacert go together (the address and CA of a running pinned fakeapi)")
		}
		if _, err := netip.ParseAddrPort(connectTo); err != nil {
			return nil, nil, fmt.Errorf("--connect-to %q: want ip:port, the address pinned fakeapi printed (e.g. 127.0.0.1:8443)", connectTo)
		}
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--cacert: %v", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("--cacert %s: no PEM certificate in it (pinned fakeapi --ca-out writes one)", caFile)
		}
		return &host.Override{Addr: connectTo, CAPEM: pem}, func() {}, nil
	}
	return nil, func() {}, nil
}

// firstWord is words[0], or "" when there is none.
func firstWord(words []string) string {
	if len(words) == 0 {
		return ""
	}
	return words[0]
}

// unknownService is the message for a SERVICE word no manifest has, with
// "did you mean" for a typo and the list of services.
func unknownService(service string) string {
	return fmt.Sprintf("%s (services: %s)", unknownWord("service", service, serviceIDs()), joinList(serviceIDs()))
}

func runConnect(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("connect", flag.ContinueOnError)
	capFlag := fs.String("cap", connstore.CapRead, "what the agent may do: `read|write` (read: read-only; write: read & write, every write still waiting for your confirmation)")
	kind := fs.String("kind", grant.KindPAT, "credential kind: `pat|oauth` (pat: a pasted token, sent as the manifest's scheme says; oauth: always Bearer)")
	tokenEnv := fs.String("token-env", "", "read the token from this environment `variable` instead of the terminal or stdin")
	refreshEnv := fs.String("refresh-env", "", "environment `variable` holding the refresh token of an expiring OAuth pair (needs --kind oauth)")
	expiresIn := fs.Duration("token-expires-in", 0, "with --refresh-env: the access token's remaining `lifetime` (e.g. 8h), so it is refreshed before it expires")
	useFake := fs.Bool("fake", false, "verify against an in-process provider fake (tests and trials)")
	connectTo := fs.String("connect-to", "", "verify against a running pinned fakeapi at this `ip:port`; needs --cacert")
	caFile := fs.String("cacert", "", "PEM `file` of the CA to trust with --connect-to")
	timeout := fs.Duration("timeout", host.DefaultTimeout, "deadline for the viewer op")
	var only []string
	fs.Func("only", "limit the agent to this resource, `[KIND=]NAME` (repeatable; e.g. pinned-tester/notes): every grant made from the connection seals the limit, and a call naming another resource is refused resource_denied before anything is sent", func(v string) error {
		if v == "" {
			return errors.New("empty: want a resource name such as owner/repo")
		}
		only = append(only, v)
		return nil
	})
	tenant, user, userEnv := connectionFlags(fs)
	// SERVICE may come before or after the flags.
	words, code, ok := parseFlagsWords(fs, connectUsage, args, 1, stdout, stderr)
	if !ok {
		return code
	}
	service := firstWord(words)
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "pinned connect: "+format+"\n", a...)
		return 2
	}
	if service == "" {
		return usage("which service? e.g. pinned connect github (services: %s)", joinList(serviceIDs()))
	}
	m, ok := registry.Default().Service(service)
	if !ok {
		return usage("%s", unknownService(service))
	}
	if m.Viewer == "" {
		fmt.Fprintf(stderr, "pinned connect: the %s manifest declares no viewer op, so a token cannot be verified\n", service)
		return 1
	}
	if *capFlag != connstore.CapRead && *capFlag != connstore.CapWrite {
		return usage("--cap must be read or write, not %q", *capFlag)
	}
	if *kind != grant.KindPAT && *kind != grant.KindOAuth {
		return usage("--kind must be pat or oauth, not %q", *kind)
	}
	if *refreshEnv != "" && *kind != grant.KindOAuth {
		return usage("--refresh-env needs --kind oauth (a refresh token belongs to an OAuth pair)")
	}
	if (*expiresIn != 0) != (*refreshEnv != "") {
		return usage("--refresh-env and --token-expires-in go together (an expiring pair and when its access token expires)")
	}
	if *expiresIn < 0 {
		return usage("--token-expires-in must be positive, not %s", *expiresIn)
	}
	var limit grant.Grant
	if len(only) > 0 {
		limits, msg := onlyLimits(m, only)
		if msg != "" {
			return usage("--only: %s", msg)
		}
		if err := limit.SetResources(limits); err != nil {
			return usage("--only: %s", errText(err))
		}
	}
	override, stop, err := hostOverride("connect", *useFake, *connectTo, *caFile)
	if err != nil {
		return usage("%s", err)
	}
	defer stop()

	token, err := readToken(m, *tokenEnv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "pinned connect: %s\n", err)
		return 2
	}
	cred, msg := connectionCredential(m, *kind, token, *tenant, *user, *userEnv)
	if msg != "" {
		return usage("%s", msg)
	}
	conn := connstore.Connection{Service: service, Cap: *capFlag, Kind: *kind, Token: secret.Secret(token), User: cred.User, Tenant: cred.Tenant, Resources: limit.Resources}
	if *refreshEnv != "" {
		r := strings.TrimSpace(os.Getenv(*refreshEnv))
		if r == "" {
			return usage("%s is not set or empty", *refreshEnv)
		}
		conn.Refresh = secret.Secret(r)
		conn.TokenExpiresAt = time.Now().Add(*expiresIn).UTC().Format(time.RFC3339)
	}

	ctx := context.Background()
	one, err := registry.Default().Only(service) // the engine warms this service's ops only
	if err != nil {
		fmt.Fprintf(stderr, "pinned connect: %s\n", errText(err))
		return 1
	}
	eng, err := host.New(ctx, host.Config{Timeout: *timeout, CacheDir: defaultCacheDir(), Override: override, Registry: one})
	if err != nil {
		fmt.Fprintf(stderr, "pinned connect: %s\n", errText(err))
		return 1
	}
	defer eng.Close(ctx)
	res, err := eng.Run(ctx, host.Call{Service: service, Op: m.Viewer, Args: json.RawMessage(`{}`),
		Credential: cred})
	if err != nil {
		var he *host.Error
		if errors.As(err, &he) {
			fmt.Fprintf(stderr, "pinned connect: %s refused the token (%s.%s): %s: %s", m.Name, service, m.Viewer, he.Code, he.Message)
			if he.Status != 0 {
				fmt.Fprintf(stderr, " (HTTP %d)", he.Status)
			}
			fmt.Fprintln(stderr, "\nnothing was stored")
			return 1
		}
		fmt.Fprintf(stderr, "pinned connect: %s\n", errText(err))
		return 1
	}
	conn.Viewer = viewerIdentity(m, res.Data)
	dir, err := connstore.DefaultDir()
	if err != nil {
		fmt.Fprintf(stderr, "pinned connect: %s\n", errText(err))
		return 1
	}
	store, err := connstore.Open(dir)
	var prev connstore.Connection
	replaced := false
	if err == nil {
		// A service has one connection: say so when this one replaces it.
		if prev, err = store.Get(service); err == nil {
			replaced = true
		} else if errors.Is(err, connstore.ErrNotConnected) {
			err = nil
		}
	}
	if err == nil {
		err = store.Put(conn)
	}
	if err != nil {
		fmt.Fprintf(stderr, "pinned connect: %s\n", strings.TrimPrefix(err.Error(), "connstore: "))
		return 1
	}
	what := "read-only"
	if conn.Cap == connstore.CapWrite {
		what = "read & write (every write waits for your confirmation)"
	}
	fmt.Fprintf(stdout, "connected %s as %s, %s; stored in %s\n", service, orDash(conn.Viewer), what, store.Path())
	if l := limitText(conn.Resources); l != "" {
		fmt.Fprintf(stdout, "limited to %s: a call naming anything else is refused before it is sent\n", l)
	}
	if replaced {
		was := "read-only"
		if prev.Cap == connstore.CapWrite {
			was = "read & write"
		}
		fmt.Fprintf(stdout, "replaced the earlier %s connection (%s as %s, connected %s)\n", service, was, orDash(prev.Viewer), prev.ConnectedAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(stdout, "next: pinned mcp (docs/MCP.md configures your agent)")
	return 0
}

func serviceIDs() []string { return registry.Default().IDs() }

// limitText says a connection's resource limit for a person ("repository
// pinned-tester/notes, octo/hello"), or "" when it has none.
func limitText(resources string) string {
	limits := (&grant.Grant{Resources: resources}).ResourceLimits()
	var parts []string
	for _, kind := range slices.Sorted(maps.Keys(limits)) {
		parts = append(parts, kind+" "+strings.Join(limits[kind], ", "))
	}
	return strings.Join(parts, "; ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// maxTokenBytes bounds a token read from stdin.
const maxTokenBytes = grant.MaxSecretLen

// readToken reads the token: from the environment variable, from the
// terminal without echo, or from stdin. It never repeats the token.
func readToken(m *registry.Manifest, env string, stderr io.Writer) (string, error) {
	var tok string
	switch {
	case env != "":
		v, ok := os.LookupEnv(env)
		if !ok {
			return "", fmt.Errorf("--token-env %s: the variable is not set", env)
		}
		tok = v
	case stdinIsTerminal():
		hint := ""
		if m.Auth.PATHelp != "" {
			hint = " (create one at " + m.Auth.PATHelp + ")"
		}
		fmt.Fprintf(stderr, "Paste the %s token%s; input is hidden: ", m.Name, hint)
		b, err := term.ReadPassword(int(os.Stdin.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", fmt.Errorf("reading the token: %v", err)
		}
		tok = string(b)
	default:
		b, err := io.ReadAll(io.LimitReader(stdin, maxTokenBytes+1))
		if err != nil {
			return "", fmt.Errorf("reading the token from stdin: %v", err)
		}
		if len(b) > maxTokenBytes {
			return "", fmt.Errorf("the token on stdin is longer than %d bytes", maxTokenBytes)
		}
		tok = string(b)
	}
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return "", errors.New("no token: paste it at the prompt, pipe it on stdin or name a variable with --token-env")
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] <= 0x20 || tok[i] >= 0x7f {
			return "", errors.New("the token must be printable ASCII without spaces (one token, one line)")
		}
	}
	return tok, nil
}

// viewerIdentity is who the viewer op says the token belongs to: the first
// of login, email, displayName, name present in its projected answer, else
// its first pick field with a value.
func viewerIdentity(m *registry.Manifest, data json.RawMessage) string {
	op, ok := m.Op(m.Viewer)
	if !ok {
		return ""
	}
	var v any
	if json.Unmarshal(data, &v) != nil {
		return ""
	}
	get := func(path string) string {
		cur := v
		for _, k := range strings.Split(path, ".") {
			o, ok := cur.(map[string]any)
			if !ok {
				return ""
			}
			cur = o[k]
		}
		switch x := cur.(type) {
		case string:
			return x
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64)
		}
		return ""
	}
	var prefer []string
	for _, want := range []string{"login", "email", "displayName", "name"} {
		for _, f := range op.Pick.Fields {
			if f == want || strings.HasSuffix(f, "."+want) {
				prefer = append(prefer, f)
			}
		}
	}
	for _, f := range append(prefer, op.Pick.Fields...) {
		if s := get(f); s != "" {
			return connstore.CleanViewer(s) // the provider's text, printed on a terminal
		}
	}
	return ""
}

func runConnections(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "remove" {
		fs := flag.NewFlagSet("connections remove", flag.ContinueOnError)
		brokerURL := fs.String("broker-url", "", "the broker's base `URL`, to revoke an OAuth connection's tokens at the provider")
		brokerTokenFile := fs.String("broker-token-file", "", "`file` holding the broker instance token (or set PINNED_MCP_BROKER_TOKEN)")
		words, code, ok := parseFlagsWords(fs, connectionsUsage, args[1:], 1, stdout, stderr)
		if !ok {
			return code
		}
		service := firstWord(words)
		if service == "" {
			fmt.Fprintln(stderr, "pinned connections remove: which service? e.g. pinned connections remove github")
			return 2
		}
		bc, err := mcpBroker(*brokerURL, *brokerTokenFile)
		if err != nil {
			fmt.Fprintf(stderr, "pinned connections remove: %s\n", errText(err))
			return 2
		}
		store, err := openStore()
		var conn connstore.Connection
		if err == nil {
			conn, err = store.Get(service)
		}
		if err == nil {
			err = store.Remove(service)
		}
		if errors.Is(err, connstore.ErrNotConnected) {
			fmt.Fprintf(stderr, "pinned connections remove: %s is not connected (see pinned connections)\n", service)
			return 1
		}
		if err != nil {
			fmt.Fprintf(stderr, "pinned connections remove: %s\n", strings.TrimPrefix(err.Error(), "connstore: "))
			return 1
		}
		fmt.Fprintf(stdout, "removed %s\n", service)
		return revokeRemoved(conn, bc, stdout)
	}
	fs := flag.NewFlagSet("connections", flag.ContinueOnError)
	if code, ok := parseFlags(fs, connectionsUsage, args, stdout, stderr); !ok {
		return code
	}
	store, err := openStore()
	var all []connstore.Connection
	if err == nil {
		all, err = store.List()
	}
	if err != nil {
		fmt.Fprintf(stderr, "pinned connections: %s\n", strings.TrimPrefix(err.Error(), "connstore: "))
		return 1
	}
	if len(all) == 0 {
		fmt.Fprintln(stdout, "no connections (connect one: pinned connect github)")
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tCAP\tKIND\tVIEWER\tCONNECTED\tTOKEN EXPIRES\tLIMITED TO")
	for _, c := range all {
		capName := "read-only"
		if c.Cap == connstore.CapWrite {
			capName = "read & write"
		}
		exp := "-"
		if c.TokenExpiresAt != "" {
			exp = c.TokenExpiresAt
			if c.Refresh != "" {
				exp += " (refreshed by pinned mcp --broker-url)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Service, capName, c.Kind, orDash(c.Viewer), c.ConnectedAt.Format(time.RFC3339), exp, orDash(limitText(c.Resources)))
	}
	tw.Flush()
	return 0
}

func openStore() (*connstore.Store, error) {
	dir, err := connstore.DefaultDir()
	if err != nil {
		return nil, err
	}
	return connstore.Open(dir)
}

// connectionFlags declares the flags of a connection's other parts: the
// tenant label of a per-connection host and the user part of a two-part
// credential.
func connectionFlags(fs *flag.FlagSet) (tenant, user, userEnv *string) {
	tenant = fs.String("tenant", "", "the tenant `label` of a service whose host is per connection (acme for acme.atlassian.net)")
	user = fs.String("user", "", "the first `part` of a two-part credential (an account email for HTTP Basic, an API key beside a token)")
	userEnv = fs.String("user-env", "", "read the first part of a two-part credential from this environment `variable` instead of --user")
	return tenant, user, userEnv
}

// connectionCredential is the credential of a connection to m: the token
// with the user part and tenant label m asks for, or a message saying
// what is missing or refused (host.CheckConnection's rules).
func connectionCredential(m *registry.Manifest, kind, token, tenant, user, userEnv string) (host.Credential, string) {
	if userEnv != "" {
		if user != "" {
			return host.Credential{}, "--user and --user-env exclude each other"
		}
		user = strings.TrimSpace(os.Getenv(userEnv))
		if user == "" {
			return host.Credential{}, userEnv + " is not set or empty"
		}
	}
	cred := host.Credential{Kind: kind, Secret: secret.Secret(token), User: secret.Secret(user), Tenant: tenant}
	switch {
	case m.HasTenant() && tenant == "":
		return cred, fmt.Sprintf("%s has a host per connection (%s): pass --tenant (%s)", m.ID, m.Host, m.Tenant.Label)
	case m.Auth.TwoPart() && kind != grant.KindOAuth && user == "":
		return cred, fmt.Sprintf("%s takes a credential of two parts: pass --user or --user-env (%s) besides the token", m.ID, m.Auth.User.Label)
	}
	if err := host.CheckConnection(m, cred); err != nil {
		var he *host.Error
		if errors.As(err, &he) {
			return cred, he.Message
		}
		return cred, err.Error()
	}
	return cred, ""
}

// revokeRemoved revokes a removed connection's tokens at the provider
// through the broker where its manifest declares a revocation endpoint,
// and tells the member what became of the token: revoked (0), or still
// valid and where to revoke it (0 when nothing could be tried, 1 when the
// provider did not confirm).
func revokeRemoved(c connstore.Connection, bc *rotate.BrokerClient, stdout io.Writer) int {
	m, _ := registry.Default().Service(c.Service)
	where := "on the provider's site"
	if m != nil && m.Auth.PATHelp != "" {
		where = "at " + m.Auth.PATHelp
	}
	switch {
	case c.Kind != grant.KindOAuth || m == nil || m.Auth.OAuth == nil:
		fmt.Fprintf(stdout, "the token is still valid at the provider (a pasted token cannot be revoked from here): revoke it %s\n", where)
		return 0
	case m.Auth.OAuth.RevokeURL == "":
		fmt.Fprintf(stdout, "%s declares no revocation endpoint, so the grant is still valid at the provider: revoke it %s\n", m.Name, where)
		return 0
	case bc == nil:
		fmt.Fprintf(stdout, "not revoked at the provider: no broker to revoke with (--broker-url); the grant is still valid: revoke it %s\n", where)
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), rotate.DefaultBrokerTimeout)
	defer cancel()
	revoked, err := bc.Revoke(ctx, c.Service, c.Refresh, c.Token)
	if err != nil {
		fmt.Fprintf(stdout, "the provider did NOT confirm the revocation (%s); the token may still be valid: revoke it %s\n", errText(err), where)
		return 1
	}
	fmt.Fprintf(stdout, "revoked at the provider: %s\n", strings.Join(revoked, ", "))
	return 0
}
