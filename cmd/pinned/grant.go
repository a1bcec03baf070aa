package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

const grantUsage = `Usage: pinned grant seal --bot-key PUB --service S --access read|write --ttl 2m [flags]

Seals a grant to a bot's public key and prints it (base64) on stdout: what
a member's device does when it grants a bot access to a service. For
operators and tests; the web catalog does the same in the browser.

The credential is read from the environment variable named by --token-env
(default PINNED_TOKEN), never from the command line.

--op binds the grant to one op; --args (which needs --op) binds it to
exactly those args too (args_sha256 of their canonical JSON): the bot can
then run that op with those args and nothing else.

Examples:
  PINNED_TOKEN=ghp_... pinned grant seal --bot-key "$PUB" --service github --access read --ttl 10m
  PINNED_TOKEN=ghp_... pinned grant seal --bot-key "$PUB" --service github --access write --ttl 2m \
      --op create_issue --args '{"owner":"pinned-tester","repo":"notes","title":"Hi"}'

Exit status: 0 success, 1 sealing failed, 2 bad usage.

Flags:
`

func runGrant(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "pinned grant: missing subcommand (seal)")
		fmt.Fprint(stderr, "\n"+grantUsage)
		return 2
	}
	switch args[0] {
	case "seal":
		return runGrantSeal(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, grantUsage)
		return 0
	}
	fmt.Fprintf(stderr, "pinned grant: unknown subcommand %q (want seal)\n", args[0])
	return 2
}

func runGrantSeal(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("grant seal", flag.ContinueOnError)
	fs.SetOutput(stderr)
	botKey := fs.String("bot-key", "", "the bot's public key (base64, as pinned keygen printed it); required")
	service := fs.String("service", "", "service id, e.g. github (see pinned registry list); required")
	access := fs.String("access", "", "read or write; required (write also allows read ops)")
	ttl := fs.Duration("ttl", 2*time.Minute, "how long the grant is valid; the sidecar refuses grants living longer than its --max-grant-ttl (default 24h)")
	opName := fs.String("op", "", "bind the grant to this op only")
	argsJSON := fs.String("args", "", "with --op: bind the grant to exactly these args (a JSON object)")
	tokenEnv := fs.String("token-env", "PINNED_TOKEN", "environment variable holding the credential")
	kind := fs.String("kind", "pat", "credential kind: pat (pasted token, sent as the manifest's scheme says) or oauth (always Bearer)")
	memberKey := fs.String("member-key", "", "the member's public key (base64), to which rotated tokens are sealed back")
	fs.Usage = func() {
		fmt.Fprint(stderr, grantUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "pinned grant seal: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() > 0 {
		return usage("unexpected argument %q (flags only; see --help)", fs.Arg(0))
	}
	if *botKey == "" || *service == "" || *access == "" {
		return usage("--bot-key, --service and --access are required")
	}
	pub, err := grant.ParsePublicKey(*botKey)
	if err != nil {
		return usage("--bot-key: %v", err)
	}
	if *access != grant.AccessRead && *access != grant.AccessWrite {
		return usage("--access must be read or write, not %q", *access)
	}
	if *kind != grant.KindPAT && *kind != grant.KindOAuth {
		return usage("--kind must be pat or oauth, not %q", *kind)
	}
	if *ttl <= 0 {
		return usage("--ttl must be positive, e.g. 2m")
	}
	m, ok := registry.Default().Service(*service)
	if !ok {
		return usage("unknown service %q (see pinned registry list)", *service)
	}
	g := &grant.Grant{
		Service: *service, Access: *access, Kind: *kind,
		ExpiresAt: time.Now().Add(*ttl).Truncate(time.Second), MemberKey: *memberKey,
	}
	if *memberKey != "" {
		if _, err := grant.ParsePublicKey(*memberKey); err != nil {
			return usage("--member-key: %v", err)
		}
	}
	if *argsJSON != "" && *opName == "" {
		return usage("--args binds the grant to args of one op: give --op too")
	}
	if *opName != "" {
		op, ok := m.Op(*opName)
		if !ok {
			return usage("service %s has no op %q (ops: %v)", *service, *opName, m.OpNames())
		}
		if op.Access == registry.AccessWrite && *access != grant.AccessWrite {
			return usage("op %s writes: it needs --access write", *opName)
		}
		g.Op = *opName
		if *argsJSON != "" {
			if !json.Valid([]byte(*argsJSON)) {
				return usage("--args is not valid JSON: %s", *argsJSON)
			}
			h, err := grant.ArgsSHA256([]byte(*argsJSON))
			if err != nil {
				return usage("--args: %v", err)
			}
			g.ArgsSHA256 = h
		}
	}
	secret := os.Getenv(*tokenEnv)
	if secret == "" {
		return usage("no credential: set %s to the token to seal", *tokenEnv)
	}
	g.Secret = grant.Secret(secret)
	if *ttl > grant.DefaultMaxTTL {
		fmt.Fprintf(stderr, "pinned grant seal: warning: --ttl %s is longer than the sidecar's default --max-grant-ttl (%s); it will refuse this grant unless configured otherwise\n", *ttl, grant.DefaultMaxTTL)
	}
	sealed, err := grant.Seal(g, pub, nil)
	if err != nil {
		fmt.Fprintf(stderr, "pinned grant seal: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, sealed)
	return 0
}
