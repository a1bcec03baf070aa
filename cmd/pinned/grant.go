package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/secret"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

const grantUsage = `Usage: pinned grant seal ...   seal a grant to a bot (below)
       pinned grant open ...   open a rotated token pair (pinned grant open --help)

Usage: pinned grant seal --bot-key PUB --service S --access read|write --ttl 2m [flags]

Seals a grant to a bot's public key and prints it (base64) on stdout: what
a member's device does when it grants a bot access to a service. For
operators and tests; the web catalog does the same in the browser.

The credential is read from the environment variable named by --token-env
(default PINNED_TOKEN), never from the command line. An expiring OAuth
pair adds its refresh token from the variable named by --refresh-env and
its expiry with --token-expires-in; the sidecar then rotates the pair
through the broker when it is stale, and seals the new pair back to
--member-key, which such a grant needs (docs/OAUTH.md).

--flow FROM:TO (repeatable) seals a flow a research consent allowed into a
read grant: a research session may let what service FROM returned go into
its reads of service TO only when the grants of both services seal it.

--only [KIND=]NAME (repeatable) limits the grant to chosen resources of a
kind the manifest declares (GitHub: repository, owner/repo): the sidecar
refuses a call naming another (resource_denied) and filters the listing.

--op binds the grant to one op; --args (which needs --op) binds it to
exactly those args too (args_sha256 of their canonical JSON): the bot can
then run that op with those args and nothing else. The args are checked
as the sidecar will check them when the bot runs the op: args the op
refuses (the sidecar would answer bad_args) are refused here.

Examples:
  PINNED_TOKEN=ghp_... pinned grant seal --bot-key "$PUB" --service github --access read --ttl 10m
  PINNED_TOKEN=... PINNED_REFRESH=... pinned grant seal --bot-key "$PUB" --service hubspot --access read \
      --kind oauth --refresh-env PINNED_REFRESH --token-expires-in 30m --member-key "$MEMBER_PUB"
  PINNED_TOKEN=ghp_... pinned grant seal --bot-key "$PUB" --service github --access write --ttl 10m \
      --only pinned-tester/notes
  PINNED_TOKEN=ghp_... pinned grant seal --bot-key "$PUB" --service github --access write --ttl 2m \
      --op create_issue --args '{"owner":"pinned-tester","repo":"notes","title":"Hi"}'

Exit status: 0 success, 1 sealing failed, 2 bad usage (an unknown flag, a
missing or malformed flag value, args the op refuses).

Flags:
`

// credentialHint is the fix for a credential the host would refuse.
const credentialHint = "strip the spaces and line breaks around the token (read -r, or $(cat FILE), drop a trailing newline) and any pasted \"Bearer \" prefix: the host adds the scheme"

// grantSubcommands are the words after "pinned grant".
var grantSubcommands = []string{"seal", "open"}

func runGrant(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return flagError(stderr, "grant", "missing subcommand: want seal or open")
	}
	switch args[0] {
	case "seal":
		return runGrantSeal(args[1:], stdout, stderr)
	case "open":
		return runGrantOpen(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fs, _ := grantSealFlags()
		printHelp(stdout, grantUsage, fs)
		fmt.Fprint(stdout, "\n"+grantOpenSummary)
		return 0
	}
	if strings.HasPrefix(args[0], "-") {
		return flagError(stderr, "grant", undefinedFlag(args[0]))
	}
	return flagError(stderr, "grant", unknownWord("subcommand", args[0], grantSubcommands)+": want seal or open")
}

// sealFlags are the flags of grant seal.
type sealFlags struct {
	botKey, service, access, opName, argsJSON, tokenEnv, kind, memberKey, refreshEnv, tokenExpiresAt string
	ttl, tokenExpiresIn                                                                              time.Duration
	flows                                                                                            []string
	only                                                                                             []string
	// standing seals a standing read grant; series renews an existing
	// one (implies standing).
	standing              bool
	series                string
	tenant, user, userEnv *string

	// pair, when set, is the credential instead of the environment: the
	// rotated pair pinned grant open re-seals.
	pair *grant.Rotated
	// cmd names the command in messages ("grant seal", "grant open").
	cmd string
}

func grantSealFlags() (*flag.FlagSet, *sealFlags) {
	var f sealFlags
	fs := flag.NewFlagSet("grant seal", flag.ContinueOnError)
	fs.StringVar(&f.botKey, "bot-key", "", "the bot's public `key` (base64, as pinned keygen printed it); required")
	fs.StringVar(&f.service, "service", "", "`id` of the service, e.g. github (see pinned registry list); required")
	fs.StringVar(&f.access, "access", "", "`read|write` access; required (write also allows read ops)")
	fs.DurationVar(&f.ttl, "ttl", 2*time.Minute, "how long the grant is valid; a sidecar refuses grants living longer than its --max-grant-ttl, "+
		shortDuration(grant.DefaultMaxTTL)+" unless configured")
	fs.StringVar(&f.opName, "op", "", "bind the grant to the op of this `name` only")
	fs.StringVar(&f.argsJSON, "args", "", "with --op: bind the grant to exactly these args (a `JSON` object, @FILE, or - for stdin), checked as the op will check them")
	fs.StringVar(&f.tokenEnv, "token-env", "PINNED_TOKEN", "environment `variable` holding the credential")
	fs.StringVar(&f.kind, "kind", "pat", "credential kind: `pat|oauth` (pat: a pasted token, sent as the manifest's scheme says; oauth: always Bearer)")
	fs.StringVar(&f.memberKey, "member-key", "", "the member's public `key` (base64), to which rotated tokens are sealed back")
	fs.StringVar(&f.refreshEnv, "refresh-env", "", "environment `variable` holding the pair's refresh token (with --kind oauth and --member-key)")
	fs.DurationVar(&f.tokenExpiresIn, "token-expires-in", 0, "the credential expires this `duration` from now (0: unknown; negative: already expired, to try rotation)")
	fs.Func("flow", "seal the research flow `FROM:TO` the member's consent allowed (repeatable; e.g. dnsimple:github)", func(v string) error {
		a, err := parseFlow(v)
		f.flows = append(f.flows, a.From+":"+a.To)
		return err
	})
	fs.Func("only", "limit the grant to this resource, `[KIND=]NAME` (repeatable; e.g. pinned-tester/notes, or repository=pinned-tester/notes; KIND may be left out when the service declares one kind)", func(v string) error {
		if v == "" {
			return errors.New("empty: want a resource name such as owner/repo")
		}
		f.only = append(f.only, v)
		return nil
	})
	fs.BoolVar(&f.standing, "standing", false, "seal a standing read grant: the bot runs the service's read ops under it, without a tap per op, until --ttl (at most the sidecar's --standing-grant-ttl, "+
		shortDuration(grant.DefaultStandingMaxTTL)+") or until revoked; needs --access read; prints its series id on stderr")
	fs.StringVar(&f.series, "series", "", "with --standing: renew the standing grant of this series `id` (what a first --standing printed); a renewal must seal what the first grant sealed")
	f.tenant, f.user, f.userEnv = connectionFlags(fs)
	fs.StringVar(&f.tokenExpiresAt, "token-expires-at", "", "the credential expires at this `time` (RFC 3339, as pinned grant open prints it; empty: unknown)")
	return fs, &f
}

// onlyLimits turns --only values ([KIND=]NAME) into a grant's resource
// limits, or says what is wrong. KIND must be one the manifest declares;
// it may be left out when the manifest declares exactly one.
func onlyLimits(m *registry.Manifest, only []string) (map[string][]string, string) {
	kinds := slices.Sorted(maps.Keys(m.Resources))
	if len(kinds) == 0 {
		return nil, fmt.Sprintf("service %s declares no resources, so its grants cannot be limited", m.ID)
	}
	out := map[string][]string{}
	for _, v := range only {
		kind, name, ok := strings.Cut(v, "=")
		if !ok {
			if len(kinds) != 1 {
				return nil, fmt.Sprintf("%q: name the kind, one of %s (KIND=NAME)", v, joinList(kinds))
			}
			kind, name = kinds[0], v
		}
		r, declared := m.Resources[kind]
		if !declared {
			return nil, fmt.Sprintf("service %s has no resource kind %q (kinds: %s)", m.ID, kind, joinList(kinds))
		}
		if n := len(strings.Split(name, r.Separator)); len(r.Args) > 1 && n != len(r.Args) {
			return nil, fmt.Sprintf("%q: a %s is %s joined by %q", name, kind, strings.Join(r.Args, ", "), r.Separator)
		}
		if len(r.Args) == 1 && integerArg(m, r.Args[0]) && !decimalName.MatchString(name) {
			return nil, fmt.Sprintf("%q: %s are named by their %s id in decimal digits (e.g. 1385)", name, strings.ToLower(r.Label), m.Name)
		}
		if !slices.Contains(out[kind], name) {
			out[kind] = append(out[kind], name)
		}
	}
	return out, ""
}

// integerArg reports whether an op of m declares arg name an integer.
func integerArg(m *registry.Manifest, name string) bool {
	for _, o := range m.Ops {
		if a := o.Args[name]; a != nil && a.Type == registry.TypeInteger {
			return true
		}
	}
	return false
}

// decimalName is the one spelling of an integer resource name.
var decimalName = regexp.MustCompile(`^(?:0|[1-9][0-9]{0,18})$`)

// shortDuration prints 24h0m0s as 24h and 2m0s as 2m.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func runGrantSeal(args []string, stdout, stderr io.Writer) int {
	fs, f := grantSealFlags()
	if code, ok := parseFlags(fs, grantUsage, args, stdout, stderr); !ok {
		return code
	}
	f.cmd = "grant seal"
	return sealGrant(f, stdout, stderr)
}

// sealGrant checks the flags of a grant, seals it and prints it: grant
// seal with the credential from the environment, grant open --bot-key
// with the rotated pair (f.pair).
func sealGrant(f *sealFlags, stdout, stderr io.Writer) int {
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "pinned "+f.cmd+": "+format+"\n", a...)
		return 2
	}
	if f.botKey == "" || f.service == "" || f.access == "" {
		if f.pair != nil {
			return usage("re-sealing needs --access too (read or write; the service is the pair's, %s)", f.service)
		}
		return usage("--bot-key, --service and --access are required")
	}
	pub, err := grant.ParsePublicKey(f.botKey)
	if err != nil {
		if _, serr := os.Stat(f.botKey); serr == nil {
			return usage("--bot-key: %s (pass the public key pinned keygen printed, not the key file)", errText(err))
		}
		return usage("--bot-key: %s", errText(err))
	}
	if f.access != grant.AccessRead && f.access != grant.AccessWrite {
		return usage("--access must be read or write, not %q", f.access)
	}
	if f.kind != grant.KindPAT && f.kind != grant.KindOAuth {
		return usage("--kind must be pat or oauth, not %q", f.kind)
	}
	if f.ttl <= 0 {
		return usage("--ttl must be positive, e.g. 2m")
	}
	m, ok := registry.Default().Service(f.service)
	if !ok {
		return usage("unknown service %q (see pinned registry list)", f.service)
	}
	g := &grant.Grant{
		Service: f.service, Access: f.access, Kind: f.kind,
		ExpiresAt: time.Now().Add(f.ttl).Truncate(time.Second), MemberKey: f.memberKey, Flows: strings.Join(f.flows, ","),
	}
	if f.memberKey != "" {
		if _, err := grant.ParsePublicKey(f.memberKey); err != nil {
			return usage("--member-key: %s", errText(err))
		}
	}
	if f.series != "" && !f.standing {
		return usage("--series renews a standing grant: add --standing")
	}
	newSeries := false
	if f.standing {
		switch {
		case f.access != grant.AccessRead:
			return usage("--standing: a standing grant is read-only (--access read); writes stay one-shot, each with its own consent")
		case f.opName != "":
			return usage("--standing: a standing grant runs every read op of the service; leave out --op")
		case f.ttl > grant.DefaultStandingMaxTTL:
			return usage("--ttl %s: a standing grant lives at most %s (the sidecar's --standing-grant-ttl); renew it with --series before it expires", f.ttl, shortDuration(grant.DefaultStandingMaxTTL))
		}
		g.Standing = f.series
		if g.Standing == "" {
			id, err := grant.NewNonce()
			if err != nil {
				fmt.Fprintf(stderr, "pinned %s: series: %s\n", f.cmd, errText(err))
				return 1
			}
			g.Standing, newSeries = id, true
		}
	}
	if len(f.only) > 0 {
		limits, msg := onlyLimits(m, f.only)
		if msg != "" {
			return usage("--only: %s", msg)
		}
		if err := g.SetResources(limits); err != nil {
			return usage("--only: %s", errText(err))
		}
	}
	if f.argsJSON != "" && f.opName == "" {
		return usage("--args binds the grant to args of one op: give --op too")
	}
	if f.opName != "" {
		op, ok := m.Op(f.opName)
		if !ok {
			return usage("service %s has no op %q (ops: %s)", f.service, f.opName, joinList(m.OpNames()))
		}
		if op.Access == registry.AccessWrite && f.access != grant.AccessWrite {
			return usage("op %s writes: it needs --access write", f.opName)
		}
		g.Op = f.opName
		if f.argsJSON != "" {
			args, err := readArgs(f.argsJSON)
			if err != nil {
				return usage("--args%s", err)
			}
			f.argsJSON = args
			h, err := grant.ArgsSHA256([]byte(f.argsJSON))
			if err != nil {
				return usage("--args: %s", errText(err))
			}
			// A grant bound to args the op refuses could never be used:
			// refuse them now with the message the sidecar would answer.
			msg, err := checkArgs(m, f.opName, op, []byte(f.argsJSON))
			if err != nil {
				fmt.Fprintf(stderr, "pinned %s: check --args: %s\n", f.cmd, errText(err))
				return 1
			}
			if msg != "" {
				return usage("%s: %s", api.CodeBadArgs, msg)
			}
			g.ArgsSHA256 = h
		}
	}
	token := os.Getenv(f.tokenEnv)
	if f.pair != nil {
		token = string(f.pair.Access)
	}
	if token == "" {
		return usage("no credential: set %s to the token to seal", f.tokenEnv)
	}
	// What the host would refuse when the op runs is refused now, by the
	// host's own check: the bot would otherwise get credential_invalid.
	if he := credentialError(host.Credential{Kind: f.kind, Secret: secret.Secret(token)}); he != nil {
		return usage("%s: %s in %s: %s", he.Code, he.Message, f.tokenEnv, credentialHint)
	}
	deref := func(p *string) string {
		if p == nil { // grant open re-seals a rotated OAuth pair: no flags of its own
			return ""
		}
		return *p
	}
	cred, msg := connectionCredential(m, f.kind, token, deref(f.tenant), deref(f.user), deref(f.userEnv))
	if msg != "" {
		return usage("%s", msg)
	}
	g.Secret, g.User, g.Tenant = secret.Secret(token), cred.User, cred.Tenant
	if f.refreshEnv != "" {
		if f.kind != grant.KindOAuth {
			return usage("--refresh-env: a refresh token belongs to an OAuth pair: add --kind oauth")
		}
		if f.memberKey == "" {
			return usage("--refresh-env needs --member-key: the sidecar seals the rotated pair back to the member, and refuses to rotate without one")
		}
		refresh := os.Getenv(f.refreshEnv)
		if f.pair != nil {
			refresh = string(f.pair.Refresh)
		}
		if refresh == "" {
			return usage("no refresh token: set %s", f.refreshEnv)
		}
		if he := credentialError(host.Credential{Kind: grant.KindOAuth, Secret: secret.Secret(refresh)}); he != nil {
			return usage("%s: %s in %s: %s", he.Code, he.Message, f.refreshEnv, credentialHint)
		}
		g.Refresh = secret.Secret(refresh)
	}
	switch {
	case f.tokenExpiresIn != 0 && f.tokenExpiresAt != "":
		return usage("--token-expires-in and --token-expires-at exclude each other")
	case f.tokenExpiresIn != 0:
		g.TokenExpiresAt = time.Now().Add(f.tokenExpiresIn).UTC().Truncate(time.Second).Format(time.RFC3339)
	case f.tokenExpiresAt != "":
		t, err := time.Parse(time.RFC3339, f.tokenExpiresAt)
		if err != nil {
			return usage("--token-expires-at %q: want RFC 3339, e.g. 2026-05-11T16:40:00Z (what pinned grant open prints)", f.tokenExpiresAt)
		}
		g.TokenExpiresAt = t.UTC().Format(time.RFC3339)
	}
	if f.ttl > grant.DefaultMaxTTL {
		fmt.Fprintf(stderr, "pinned "+f.cmd+": warning: --ttl %s is longer than the sidecar's default --max-grant-ttl (%s); it will refuse this grant unless configured otherwise\n", f.ttl, grant.DefaultMaxTTL)
	}
	sealed, err := grant.Seal(g, pub, nil)
	if err != nil {
		fmt.Fprintf(stderr, "pinned %s: %s\n", f.cmd, errText(err))
		return 1
	}
	fmt.Fprintln(stdout, sealed)
	if newSeries {
		fmt.Fprintf(stderr, "pinned %s: standing series %s: renew with --standing --series %s before %s; revoke with the sidecar's POST /v1/grants/revoke\n",
			f.cmd, g.Standing, g.Standing, g.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return 0
}
