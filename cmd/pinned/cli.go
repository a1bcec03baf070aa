package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/elevenmessenger/pinned/host"
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
		return flagError(stderr, fs.Name(), explainFlagError(fs, err)), false
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "pinned %s: unexpected argument %q (flags only; see --help)\n", fs.Name(), fs.Arg(0))
		return 2, false
	}
	return 0, true
}

// parseFlagsWords is parseFlags for a command that takes up to max
// positional words besides its flags (pinned connect SERVICE): the words
// may come before, between or after the flags ("connect --fake github"
// and "connect github --fake" are the same), and everything after "--"
// is a word. A word past max is refused as a stray argument (exit 2).
func parseFlagsWords(fs *flag.FlagSet, help string, args []string, max int, stdout, stderr io.Writer) (words []string, code int, ok bool) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	for {
		err := fs.Parse(args)
		switch {
		case errors.Is(err, flag.ErrHelp):
			printHelp(stdout, help, fs)
			return nil, 0, false
		case err != nil:
			return nil, flagError(stderr, fs.Name(), explainFlagError(fs, err)), false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		// The flag package stops at the first word, or after "--".
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			words = append(words, rest...)
			break
		}
		words = append(words, rest[0])
		args = rest[1:]
	}
	if len(words) > max {
		fmt.Fprintf(stderr, "pinned %s: unexpected argument %q (see --help)\n", fs.Name(), words[max])
		return nil, 2, false
	}
	return words, 0, true
}

// explainFlagError rewrites the flag package's errors into ones that say
// what to do: an unknown flag gets "did you mean --x?" when a defined
// flag is close, and a duration without a unit ("--timeout 5") the
// spelling that works ("use 5s").
func explainFlagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if s := suggest(name, names); s != "" {
			msg += " (did you mean --" + s + "?)"
		}
		return msg
	}
	// invalid value "5" for flag -timeout: parse error
	var val, name string
	if n, _ := fmt.Sscanf(msg, "invalid value %q for flag -%s", &val, &name); n == 2 {
		name = strings.TrimSuffix(name, ":")
		if f := fs.Lookup(name); f != nil && isDurationFlag(f) {
			if _, perr := strconv.ParseFloat(val, 64); perr == nil {
				return fmt.Sprintf("--%s %s: a duration needs a unit: use %ss (or e.g. 500ms, 2m, 1h)", name, val, val)
			}
			return fmt.Sprintf("--%s %q is not a duration: use e.g. 500ms, 15s, 2m or 1h", name, val)
		}
	}
	return msg
}

// isDurationFlag reports whether f holds a time.Duration.
func isDurationFlag(f *flag.Flag) bool {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	_, ok = g.Get().(time.Duration)
	return ok
}

// unknownWord is the message for an unknown subcommand word of cmd
// ("pinned", "grant"), with a "did you mean" among known when one is close.
func unknownWord(kind, word string, known []string) string {
	msg := fmt.Sprintf("unknown %s %q", kind, word)
	if s := suggest(word, known); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg
}

// suggest returns the name of names closest to word when it is close
// enough to be a typo (an edit distance of at most 2, and less than half
// the word), else "".
func suggest(word string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		d := editDistance(strings.ToLower(word), n)
		if d < bestD && 2*d < max(len(word), len(n)) {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b, in
// bytes: insertions, deletions, substitutions and transpositions of two
// neighbours ("shwo" is one edit from "show") each count one.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
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
// invokedAs is this binary as the person ran it, for the commands a
// command prints to copy: os.Args[0] when it is pinned by a path
// ("bin/pinned", "./bin/pinned", "/usr/local/bin/pinned", or "pinned" from
// PATH), else "pinned" (a test binary, a renamed copy).
func invokedAs() string {
	if a := os.Args[0]; filepath.Base(a) == "pinned" && !strings.ContainsAny(a, " \t'\"$`\\") {
		return a
	}
	return "pinned"
}

// listenFailed is errText(err) for an address that could not be bound,
// and, when another program holds it (EADDRINUSE), what to do about it.
func listenFailed(err error) string {
	msg := errText(err)
	if errors.Is(err, syscall.EADDRINUSE) {
		msg += " (another program holds this address: choose another with --listen, or port 0 for a free one)"
	}
	return msg
}

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

// engineFailed prints why host.New failed for the command cmd and
// returns the exit status: 2 for a refused compilation cache (bad
// configuration: the message names the flag that moves it), 1 otherwise.
func engineFailed(w io.Writer, cmd string, err error) int {
	fmt.Fprintf(w, "pinned %s: %s\n", cmd, errText(err))
	if errors.Is(err, host.ErrCacheDir) {
		fmt.Fprintf(w, "pinned %s: set --cache-dir to a directory only this user can write (or --cache-dir '' to compile in memory at every start)\n", cmd)
		return 2
	}
	return 1
}
