package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestCommandConventions: every command answers an unknown flag with one
// line naming the command and a hint (exit 2), and --help with its help on
// stdout (exit 0), whose flags all have deliberate placeholders.
func TestCommandConventions(t *testing.T) {
	t.Setenv("PINNED_TOKEN", "")
	// A flag line of PrintDefaults whose placeholder the flag package
	// derived from the type instead of a backquoted word.
	derived := regexp.MustCompile(`(?m)^  -\S+ (string|value)$`)
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			tests := []struct {
				name   string
				args   []string
				code   int
				stdout string // fragment
				stderr string // whole stderr
			}{
				{name: "unknown flag", args: []string{c.name, "--bogus"}, code: 2,
					stderr: "pinned " + c.name + ": flag provided but not defined: -bogus\nrun 'pinned " + c.name + " --help' for usage\n"},
				{name: "unknown flag with a value", args: []string{c.name, "-bogus=1"}, code: 2,
					stderr: "pinned " + c.name + ": flag provided but not defined: -bogus\nrun 'pinned " + c.name + " --help' for usage\n"},
				{name: "--help", args: []string{c.name, "--help"}, code: 0, stdout: "Usage:"},
				{name: "-h", args: []string{c.name, "-h"}, code: 0, stdout: "Usage:"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					var stdout, stderr bytes.Buffer
					code := dispatch(tt.args, &stdout, &stderr)
					if code != tt.code || stderr.String() != tt.stderr || !strings.Contains(stdout.String(), tt.stdout) {
						t.Fatalf("exit %d, stderr %q, stdout %.100q; want %d, %q and %q", code, stderr.String(), stdout.String(), tt.code, tt.stderr, tt.stdout)
					}
					if code != 0 && stdout.Len() > 0 {
						t.Fatalf("stdout %q on a usage error", stdout.String())
					}
					if m := derived.FindString(stdout.String()); m != "" {
						t.Errorf("flag line %q has no deliberate placeholder", m)
					}
					if strings.Contains(stdout.String(), "Flags:\n") && !strings.Contains(stdout.String(), "Flags:\n  -") {
						t.Errorf("an empty Flags: section:\n%s", &stdout)
					}
					if n := strings.Count(stdout.String(), "(default "); n > strings.Count(stdout.String(), "\n  -") {
						t.Errorf("more defaults (%d) than flags:\n%s", n, &stdout)
					}
				})
			}
		})
	}
}

func TestDispatch(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string // whole stderr
	}{
		{name: "help documents the exit codes", args: []string{"--help"}, code: 0,
			stdout: []string{"Usage: pinned <command>", "Exit status (every command):\n  0  success", "\n  1  the command failed", "\n  2  bad usage"}},
		{name: "no command", args: nil, code: 2, stderr: "pinned runs third-party"},
		{name: "unknown command", args: []string{"frob"}, code: 2, stderr: "pinned: unknown command \"frob\"\nrun 'pinned --help' for usage\n"},
		{name: "a typo of a command", args: []string{"opp"}, code: 2, stderr: "pinned: unknown command \"opp\" (did you mean \"op\"?)\nrun 'pinned --help' for usage\n"},
		{name: "a swapped pair of letters", args: []string{"sidecra"}, code: 2, stderr: "pinned: unknown command \"sidecra\" (did you mean \"sidecar\"?)\nrun 'pinned --help' for usage\n"},
		{name: "a typo of a flag", args: []string{"op", "--servce", "github"}, code: 2, stderr: "pinned op: flag provided but not defined: -servce (did you mean --service?)\nrun 'pinned op --help' for usage\n"},
		{name: "a duration without a unit", args: []string{"op", "--timeout", "5"}, code: 2, stderr: "pinned op: --timeout 5: a duration needs a unit: use 5s (or e.g. 500ms, 2m, 1h)\nrun 'pinned op --help' for usage\n"},
		{name: "a typo of a grant subcommand", args: []string{"grant", "sael"}, code: 2, stderr: "pinned grant: unknown subcommand \"sael\" (did you mean \"seal\"?): want seal or open\nrun 'pinned grant --help' for usage\n"},
		{name: "a typo of a registry subcommand", args: []string{"registry", "lsit"}, code: 2, stderr: "pinned registry: unknown subcommand \"lsit\" (did you mean \"list\"?): want check, import, keygen, lint, list, replay, show, sign, snapshot or verify\nrun 'pinned registry --help' for usage\n"},
		{name: "unknown flag", args: []string{"--bogus"}, code: 2, stderr: "pinned: flag provided but not defined: -bogus\nrun 'pinned --help' for usage\n"},
		{name: "demo rejects a stray argument", args: []string{"demo", "extra"}, code: 2, stderr: "pinned demo: unexpected argument \"extra\" (flags only; see --help)\n"},
		{name: "demo --listen without --web", args: []string{"demo", "--listen", "127.0.0.1:9999"}, code: 2, stderr: "pinned demo: --listen is pinned web's address, for --web only (pinned demo --web --listen 127.0.0.1:9999)\nrun 'pinned demo --help' for usage\n"},
		{name: "demo --full with --web", args: []string{"demo", "--web", "--full"}, code: 2, stderr: "pinned demo: --full prints the results of the ops run without --web; --web serves the catalog instead\nrun 'pinned demo --help' for usage\n"},
		{name: "version rejects a stray argument", args: []string{"version", "extra"}, code: 2, stderr: "pinned version: unexpected argument \"extra\" (flags only; see --help)\n"},
		{name: "fakeapi rejects a stray argument", args: []string{"fakeapi", "extra"}, code: 2, stderr: "pinned fakeapi: unexpected argument \"extra\" (flags only; see --help)\n"},
		{name: "version", args: []string{"version"}, code: 0, stdout: []string{"pinned ", "registry sha256:"}},
		{name: "--version is version", args: []string{"--version"}, code: 0, stdout: []string{"pinned ", "registry sha256:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := dispatch(tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, &stderr)
			}
			if tt.code == 2 && tt.args != nil && stderr.String() != tt.stderr {
				t.Errorf("stderr\n got %q\nwant %q", &stderr, tt.stderr)
			}
			if tt.args == nil && !strings.HasPrefix(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q does not start with %q", &stderr, tt.stderr)
			}
			for _, f := range tt.stdout {
				if !strings.Contains(stdout.String(), f) {
					t.Errorf("stdout lacks %q:\n%s", f, &stdout)
				}
			}
		})
	}
}

func TestErrText(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "nil", err: nil, want: ""},
		{name: "one prefix", err: errors.New("grant: /tmp/k already exists"), want: "/tmp/k already exists"},
		{name: "wrapped twice", err: fmt.Errorf("grant: key file /tmp/kbad: %w", errors.New("grant: a private key is 44 characters")),
			want: "key file /tmp/kbad: a private key is 44 characters"},
		{name: "host", err: errors.New(`host: override address "x": invalid`), want: `override address "x": invalid`},
		{name: "after a flag name", err: fmt.Errorf("--broker-url: %w", errors.New("rotate: want https")), want: "--broker-url: want https"},
		{name: "a word inside a message stays", err: errors.New("listen on the host: port 80"), want: "listen on the host: port 80"},
		{name: "the last part stays", err: errors.New("open x: host"), want: "open x: host"},
		{name: "no prefix", err: errors.New("open /x: no such file or directory"), want: "open /x: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errText(tt.err); got != tt.want {
				t.Errorf("errText = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestParseFlagsWords: positional words may come before, between or after
// the flags; "--" ends the flags; a word past the limit is refused.
func TestParseFlagsWords(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		max   int
		words []string
		fake  bool
		code  int
		ok    bool
	}{
		{name: "word first", args: []string{"github", "--fake"}, max: 1, words: []string{"github"}, fake: true, ok: true},
		{name: "word last", args: []string{"--fake", "github"}, max: 1, words: []string{"github"}, fake: true, ok: true},
		{name: "words around a flag", args: []string{"github", "--fake", "list_repos"}, max: 2, words: []string{"github", "list_repos"}, fake: true, ok: true},
		{name: "after --, a dash word is a word", args: []string{"--fake", "--", "-x"}, max: 1, words: []string{"-x"}, fake: true, ok: true},
		{name: "no words", args: []string{"--fake"}, max: 1, fake: true, ok: true},
		{name: "one word too many", args: []string{"a", "--fake", "b"}, max: 1, code: 2},
		{name: "unknown flag after a word", args: []string{"github", "--nope"}, max: 1, code: 2},
		{name: "help after a word", args: []string{"github", "--help"}, max: 1, code: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("connect", flag.ContinueOnError)
			fake := fs.Bool("fake", false, "")
			var stdout, stderr bytes.Buffer
			words, code, ok := parseFlagsWords(fs, "help\n", tc.args, tc.max, &stdout, &stderr)
			if ok != tc.ok || code != tc.code || strings.Join(words, " ") != strings.Join(tc.words, " ") || (ok && *fake != tc.fake) {
				t.Errorf("words %q code %d ok %v fake %v, want %q %d %v %v (stderr %q)", words, code, ok, *fake, tc.words, tc.code, tc.ok, tc.fake, stderr.String())
			}
		})
	}
}

// TestListenTaken: a command whose --listen address another program holds
// exits 1 and says what to do, not only the kernel's "address already in
// use".
func TestListenTaken(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	addr := held.Addr().String()
	hint := "(another program holds this address: choose another with --listen, or port 0 for a free one)\n"
	cases := []struct {
		name string
		args []string
	}{
		{name: "web", args: []string{"web", "--bot", "eleven=http://127.0.0.1:1", "--listen", addr}},
		{name: "fakeapi", args: []string{"fakeapi", "--listen", addr}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := dispatch(tc.args, &stdout, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), "address already in use "+hint) {
				t.Errorf("exit %d, stderr %q; want 1 and the hint %q", code, stderr.String(), hint)
			}
		})
	}
	if got := listenFailed(errors.New("listen tcp: lookup nohost: no such host")); strings.Contains(got, "another program") {
		t.Errorf("a lookup failure got the address-in-use hint: %q", got)
	}
}

// TestInvokedAs: the commands a command prints to copy name the binary as
// it was run, and plain "pinned" when that is not a pinned binary or could
// not be pasted into a shell as is.
func TestInvokedAs(t *testing.T) {
	saved := os.Args[0]
	t.Cleanup(func() { os.Args[0] = saved })
	for _, tc := range []struct{ arg0, want string }{
		{"bin/pinned", "bin/pinned"},
		{"./bin/pinned", "./bin/pinned"},
		{"/usr/local/bin/pinned", "/usr/local/bin/pinned"},
		{"pinned", "pinned"},
		{"/tmp/go-build1/b001/pinned.test", "pinned"},
		{"/home/a b/pinned", "pinned"},
	} {
		os.Args[0] = tc.arg0
		if got := invokedAs(); got != tc.want {
			t.Errorf("os.Args[0] %q: invokedAs() = %q, want %q", tc.arg0, got, tc.want)
		}
	}
}
