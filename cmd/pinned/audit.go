package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"

	"github.com/elevenmessenger/pinned/internal/audit"
)

const auditUsage = `Usage:
  pinned audit verify DIR --pubkey KEY [--live] [--output text|json]
                                   check every replica's chain under DIR
  pinned audit keygen --out FILE   write a sealing key (and FILE.pub)

The sidecar keeps an audit trail (--audit-log DIR): one JSON record per
op and per refusal, hash-chained per replica under DIR/<replica>/ and
sealed by an Ed25519 signature of the chain head (docs/OPERATING.md,
"Audit and evidence").

verify reads each replica's chain and names its first bad record:
edited (a changed byte, a bad seal), removed, reordered or inserted, by
file and line. KEY is the sealing public key: a PEM file (the .pub file
beside the key) or its base64. Records after the last seal are not
proven by a seal; verify names the end of the log as unsealed unless
--live (a replica still running). It prints one line per replica:

  replica-a: whole: 503 records, sealed through seq 503

Exit status: 0 when every chain is whole, 1 when one is not, 2 on bad
usage.

keygen writes a fresh Ed25519 sealing key to FILE (mode 0600, PKCS #8
PEM) and its public key to FILE.pub, and prints the public key's base64.
Keep the public key where the log's readers can get it, and off the
sidecar's host if you can.
`

// auditSubcommands are audit's second words, for completion.
var auditSubcommands = []string{"verify", "keygen"}

func runAudit(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && isHelp(args[0]) {
		printHelp(stdout, auditUsage+"\nFlags of verify:\n", verifyFlags(new(auditVerifyFlags)))
		return 0
	}
	if len(args) == 0 {
		return flagError(stderr, "audit", "missing subcommand: verify or keygen")
	}
	switch sub, rest := args[0], args[1:]; sub {
	case "verify":
		return auditVerify(rest, stdout, stderr)
	case "keygen":
		return auditKeygen(rest, stdout, stderr)
	default:
		if len(sub) > 0 && sub[0] == '-' {
			return flagError(stderr, "audit", undefinedFlag(sub))
		}
		return flagError(stderr, "audit", unknownWord("subcommand", sub, auditSubcommands)+": want verify or keygen")
	}
}

type auditVerifyFlags struct {
	pubkey string
	live   bool
	output string
}

func verifyFlags(f *auditVerifyFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	fs.StringVar(&f.pubkey, "pubkey", "", "the sealing public `key`: a PEM file or its base64; required")
	fs.BoolVar(&f.live, "live", false, "accept records after the last seal (a replica still running)")
	fs.StringVar(&f.output, "output", "text", "`format`: text or json")
	return fs
}

func auditVerify(args []string, stdout, stderr io.Writer) int {
	var f auditVerifyFlags
	fs := verifyFlags(&f)
	words, code, ok := parseFlagsWords(fs, auditUsage+"\nFlags of verify:\n", args, 1, stdout, stderr)
	if !ok {
		return code
	}
	switch {
	case len(words) == 0:
		return flagError(stderr, "audit verify", "missing DIR (the --audit-log directory)")
	case f.pubkey == "":
		return flagError(stderr, "audit verify", "--pubkey is required (the .pub file beside the sealing key, or its base64)")
	case f.output != "text" && f.output != "json":
		return flagError(stderr, "audit verify", fmt.Sprintf("--output %q: want text or json", f.output))
	}
	pub, err := audit.ParsePublicKey(f.pubkey)
	if err != nil {
		return flagError(stderr, "audit verify", "--pubkey: "+err.Error())
	}
	reps, err := audit.Verify(words[0], pub)
	if err != nil {
		fmt.Fprintf(stderr, "pinned audit verify: %v\n", err)
		return 1
	}
	bad := false
	type jsonReport struct {
		Replica   string         `json:"replica"`
		Whole     bool           `json:"whole"`
		Records   int            `json:"records"`
		LastSeq   uint64         `json:"last_seq"`
		SealedSeq uint64         `json:"sealed_seq"`
		Problem   *audit.Problem `json:"problem,omitempty"`
	}
	var out []jsonReport
	for _, r := range reps {
		p := r.Problem
		if p != nil && p.Kind == audit.ProblemUnsealed && f.live && r.SealedSeq > 0 {
			p = nil
		}
		bad = bad || p != nil
		out = append(out, jsonReport{Replica: r.Replica, Whole: p == nil, Records: r.Records, LastSeq: r.LastSeq, SealedSeq: r.SealedSeq, Problem: p})
		if f.output == "json" {
			continue
		}
		switch {
		case p == nil && r.SealedSeq == r.LastSeq:
			fmt.Fprintf(stdout, "%s: whole: %d records, sealed through seq %d\n", r.Replica, r.Records, r.SealedSeq)
		case p == nil:
			fmt.Fprintf(stdout, "%s: whole: %d records, sealed through seq %d; seq %d to %d not yet sealed (--live)\n", r.Replica, r.Records, r.SealedSeq, r.SealedSeq+1, r.LastSeq)
		default:
			fmt.Fprintf(stdout, "%s: NOT WHOLE: %s\n", r.Replica, p)
		}
	}
	if f.output == "json" {
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	}
	if bad {
		return 1
	}
	return 0
}

func auditKeygen(args []string, stdout, stderr io.Writer) int {
	set := flag.NewFlagSet("audit keygen", flag.ContinueOnError)
	out := set.String("out", "", "`file` to write the private key to (mode 0600); the public key goes to FILE.pub")
	if code, ok := parseFlags(set, auditUsage+"\nFlags of keygen:\n", args, stdout, stderr); !ok {
		return code
	}
	if *out == "" {
		return flagError(stderr, "audit keygen", "--out FILE is required")
	}
	k, err := audit.CreateKey(*out)
	if errors.Is(err, fs.ErrExist) {
		fmt.Fprintf(stderr, "pinned audit keygen: %s exists; choose another file (a sealing key is never overwritten)\n", *out)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "pinned audit keygen: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", base64.StdEncoding.EncodeToString(k.Public().(ed25519.PublicKey)))
	return 0
}
