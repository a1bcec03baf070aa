package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// The conventions every subcommand follows:
//
//   - --help (or -h) prints the command's help and its flags on stdout and
//     exits 0;
//   - bad usage (an unknown flag, a malformed or missing flag value, a
//     stray argument) prints one line "pinned <cmd>: <message>" on stderr,
//     plus a hint line for flag errors, and exits 2;
//   - a failure while running prints "pinned <cmd>: <message>" and exits 1.

// parseFlags parses the flags of the command fs.Name() ("op", "grant
// seal"), which takes flags only. ok is false when the command is done:
// with exit code 0 after --help, 2 after a flag error or a stray argument.
func parseFlags(fs *flag.FlagSet, help string, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	// The flag package would print the error and the whole help on
	// stderr; both are printed here instead.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printHelp(stdout, help, fs)
		return 0, false
	case err != nil:
		return flagError(stderr, fs.Name(), err.Error()), false
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "pinned %s: unexpected argument %q (flags only; see --help)\n", fs.Name(), fs.Arg(0))
		return 2, false
	}
	return 0, true
}

// printHelp prints a command's help text and then its flags.
func printHelp(w io.Writer, help string, fs *flag.FlagSet) {
	fmt.Fprint(w, help)
	out := fs.Output()
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(out)
}

// flagError prints a flag error of the command cmd with a hint to its
// help, and returns 2.
func flagError(w io.Writer, cmd, msg string) int {
	fmt.Fprintf(w, "pinned %s: %s\nrun 'pinned %s --help' for usage\n", cmd, msg, cmd)
	return 2
}

// undefinedFlag is the flag package's message for an unknown flag arg
// ("--bogus=1"), for commands that parse their own arguments.
func undefinedFlag(arg string) string {
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	return "flag provided but not defined: -" + name
}

// internalPrefixes are the package names the project's packages start
// their error messages with ("grant: key file ...").
var internalPrefixes = []string{"grant", "host", "broker", "fakeapi", "sidecar", "rotate", "executor"}

// errText is err's message without the internal package prefixes, at its
// start or after a ": " (wrapped errors repeat them): "grant: key file
// k: grant: a private key is ..." reads "key file k: a private key is ...".
// The CLI puts its own "pinned <cmd>: " in front.
func errText(err error) string {
	if err == nil {
		return ""
	}
	parts := strings.Split(err.Error(), ": ")
	kept := parts[:0]
	for i, p := range parts {
		if i < len(parts)-1 && isInternalPrefix(p) {
			continue
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, ": ")
}

func isInternalPrefix(s string) bool {
	for _, p := range internalPrefixes {
		if s == p {
			return true
		}
	}
	return false
}

// joinList formats names as the CLI lists them everywhere: "a, b, c".
func joinList(names []string) string { return strings.Join(names, ", ") }
