package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/elevenmessenger/pinned/sidecar/grant"
)

const keygenUsage = `Usage: pinned keygen --out FILE [--force]

Generates a bot's X25519 key pair. The private key is written to FILE as
one line of base64 with mode 0600 (the sidecar refuses a key file the group
or others can read); the public key is printed on stdout, and is what
members seal grants to (pinned grant seal --bot-key, or the web catalog).

An existing FILE is never replaced unless --force is given: grants sealed to
the old key could no longer be opened.

Example:
  PUB=$(pinned keygen --out bot.key)

Exit status: 0 success, 1 the key could not be written, 2 bad usage.

Flags:
`

func runKeygen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("keygen", flag.ContinueOnError)
	out := fs.String("out", "", "`file` to write the private key to (required; mode 0600)")
	force := fs.Bool("force", false, "replace an existing key file")
	if code, ok := parseFlags(fs, keygenUsage, args, stdout, stderr); !ok {
		return code
	}
	if *out == "" {
		fmt.Fprintln(stderr, "pinned keygen: --out FILE is required (where to write the private key)")
		return 2
	}
	k, err := grant.GenerateKey(nil)
	if err != nil {
		fmt.Fprintf(stderr, "pinned keygen: %s\n", errText(err))
		return 1
	}
	if err := grant.WriteKeyFile(*out, k, *force); err != nil {
		fmt.Fprintf(stderr, "pinned keygen: %s\n", errText(err))
		if _, serr := os.Stat(*out); serr == nil && !*force {
			fmt.Fprintln(stderr, "pinned keygen: choose another --out, or add --force to replace it")
		} else if dir := filepath.Dir(*out); !isDir(dir) {
			fmt.Fprintf(stderr, "pinned keygen: the directory %s does not exist: create it first (mkdir -p %s; chmod 700 %s)\n", dir, dir, dir)
		}
		return 1
	}
	fmt.Fprintf(stderr, "pinned keygen: private key written to %s (mode 0600); the public key follows on stdout\n", *out)
	fmt.Fprintln(stdout, k.Public().String())
	return 0
}

// isDir reports whether path is an existing directory.
func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
