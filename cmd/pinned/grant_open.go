package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/grant"
)

const grantOpenSummary = `pinned grant open --key MEMBER_KEY_FILE [--in FILE] [--output env|json | --bot-key PUB --access A]
  opens the rotated token pair an op answer carried ("rotated", sealed to
  the grant's --member-key) and prints it for the next pinned grant seal,
  or (--bot-key) seals the next grant with it.
`

const grantOpenUsage = `Usage: pinned grant open --key FILE [--in FILE|-] [--output env|json]
       pinned grant open --key FILE [--in FILE|-] --bot-key PUB --access read|write [--ttl 2m] [--op O [--args JSON]]

Opens a rotated token pair with the member's private key (the key file
pinned keygen wrote for the public key given to grant seal --member-key).
When the sidecar rotates an expiring OAuth pair it answers the op with
"rotated": the fresh pair sealed to the member; the old refresh token is
spent, so the member must seal the next grant with the fresh pair.

The input (--in FILE, or stdin when --in is - or absent) is either the
whole op answer (JSON with a "rotated" member, success or error) or the
sealed pair itself (base64).

--output env (the default) prints shell assignments for eval:

  export PINNED_TOKEN='...'
  export PINNED_REFRESH='...'
  export PINNED_TOKEN_EXPIRES_AT='2026-05-11T16:40:00Z'

so the next grant is sealed with

  eval "$(pinned grant open --key member.key --in answer.json)"
  pinned grant seal --kind oauth --refresh-env PINNED_REFRESH \
      --token-expires-at "$PINNED_TOKEN_EXPIRES_AT" --member-key "$MEMBER" ...

(PINNED_TOKEN_EXPIRES_AT is empty when the provider did not say: unknown).
--output json prints {"service","kind","access_token","refresh_token","expires_at"}.

With --bot-key it re-seals instead, printing nothing secret: the next grant
(as pinned grant seal would print it) for the pair's service, carrying the
fresh pair and its expiry, with this key's public half as --member-key so
the turn after works the same way:

  GRANT=$(pinned grant open --key member.key --in answer.json --bot-key "$PUB" --access read)

The tokens are the member's own secrets: print them only where the member
is.

Exit status: 0 opened, 1 the pair could not be opened (another key, not a
rotated pair, no "rotated" in the answer), 2 bad usage.

Flags:
`

func runGrantOpen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("grant open", flag.ContinueOnError)
	keyFile := fs.String("key", "", "the member's private key `file` (pinned keygen --out); required")
	in := fs.String("in", "-", "`file` holding the op answer or the sealed pair; - is stdin")
	output := fs.String("output", "env", "`format`: env (shell export lines) or json")
	botKey := fs.String("bot-key", "", "re-seal: seal the next grant with the pair to this bot public `key` and print it (instead of the pair)")
	access := fs.String("access", "", "with --bot-key: `read|write` access of the next grant")
	ttl := fs.Duration("ttl", 2*time.Minute, "with --bot-key: how long the next grant is valid")
	opName := fs.String("op", "", "with --bot-key: bind the next grant to the op of this `name`")
	argsJSON := fs.String("args", "", "with --bot-key and --op: bind it to these args (a `JSON` object, @FILE or -)")
	if code, ok := parseFlags(fs, grantOpenUsage, args, stdout, stderr); !ok {
		return code
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "pinned grant open: "+format+"\n", a...)
		return 2
	}
	if *keyFile == "" {
		return usage("--key FILE is required (the member's private key file, whose public key was --member-key)")
	}
	if *output != "env" && *output != "json" {
		return usage("--output must be env or json, not %q", *output)
	}
	key, err := grant.LoadKeyFile(*keyFile)
	if err != nil {
		return usage("--key: %s", errText(err))
	}
	var data []byte
	if *in == "-" {
		data, err = io.ReadAll(io.LimitReader(stdinReader(), 1<<20))
	} else {
		data, err = os.ReadFile(*in)
	}
	if err != nil {
		fmt.Fprintf(stderr, "pinned grant open: read the input: %s\n", errText(err))
		return 1
	}
	sealed, err := rotatedFromInput(data)
	if err != nil {
		fmt.Fprintf(stderr, "pinned grant open: %s\n", err)
		return 1
	}
	r, err := grant.OpenRotated(sealed, key)
	if err != nil {
		fmt.Fprintf(stderr, "pinned grant open: %s (is --key the member key the grant named with --member-key?)\n", errText(err))
		return 1
	}
	if *botKey != "" {
		// Re-seal: the next grant carries the fresh pair, its expiry, and
		// the same member key (this key's public half) for the next turn.
		f := &sealFlags{
			cmd: "grant open", botKey: *botKey, service: r.Service, access: *access, ttl: *ttl,
			opName: *opName, argsJSON: *argsJSON, kind: grant.KindOAuth, memberKey: key.Public().String(),
			tokenEnv: "the rotated access token", tokenExpiresAt: r.TokenExpiresAt, pair: r,
		}
		if r.Refresh != "" {
			f.refreshEnv = "the rotated refresh token"
		}
		return sealGrant(f, stdout, stderr)
	}
	for _, name := range []string{"access", "op", "args"} {
		if fl := fs.Lookup(name); fl.Value.String() != fl.DefValue {
			return usage("--%s belongs to re-sealing: give --bot-key too", name)
		}
	}
	if *output == "json" {
		b, _ := marshalJSON(struct {
			Service   string `json:"service"`
			Kind      string `json:"kind"`
			Access    string `json:"access_token"`
			Refresh   string `json:"refresh_token"`
			ExpiresAt string `json:"expires_at"`
		}{r.Service, r.Kind, string(r.Access), string(r.Refresh), r.TokenExpiresAt})
		fmt.Fprintf(stdout, "%s\n", b)
		return 0
	}
	fmt.Fprintf(stdout, "export PINNED_TOKEN=%s\nexport PINNED_REFRESH=%s\nexport PINNED_TOKEN_EXPIRES_AT=%s\n",
		shellQuote(string(r.Access)), shellQuote(string(r.Refresh)), shellQuote(r.TokenExpiresAt))
	fmt.Fprintf(stderr, "pinned grant open: the fresh %s pair; seal the next grant with --kind oauth --refresh-env PINNED_REFRESH --token-expires-at \"$PINNED_TOKEN_EXPIRES_AT\"\n", r.Service)
	return 0
}

// rotatedFromInput finds the sealed pair in data: an op answer's
// "rotated" member (a success or an error answer), or the bare base64.
func rotatedFromInput(data []byte) (string, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return "", fmt.Errorf("no input: pass the op answer or the sealed pair on stdin or with --in")
	}
	if data[0] != '{' {
		return string(data), nil
	}
	var a struct {
		Rotated string `json:"rotated"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return "", fmt.Errorf("the input starts with { but is not a JSON op answer: %v", err)
	}
	if a.Rotated == "" {
		return "", fmt.Errorf(`the op answer has no "rotated": the sidecar did not rotate the pair on this op (nothing to open)`)
	}
	return a.Rotated, nil
}

// shellQuote quotes s for a POSIX shell: 'it'\”s'.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
