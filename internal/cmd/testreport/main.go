// Command testreport runs `go test -json` and prints what `go test` would,
// then one line for every test that skipped, with its reason, and the
// slowest packages and tests. `make test` runs it, so a skipped check
// says so without -v.
//
//	testreport [-slowest N] -- go test -json [flags] [packages]
//
// It exits 1 when a test, a build or the command failed. It is a
// development tool (internal), not part of the product.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
)

func main() {
	fs := flag.NewFlagSet("testreport", flag.ContinueOnError)
	slowest := fs.Int("slowest", 5, "list the `N` slowest packages and tests")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: testreport [-slowest N] -- go test -json [flags] [packages]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	args := fs.Args()
	if len(args) == 0 {
		fs.Usage()
		os.Exit(2)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stderr = os.Stdin, os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	r := newReport(os.Stdout)
	readErr := r.read(out)
	if readErr != nil {
		_, _ = io.Copy(io.Discard, out)
	}
	waitErr := cmd.Wait()
	ok := r.summary(*slowest)
	switch {
	case readErr != nil:
		fmt.Fprintln(os.Stderr, "testreport: reading the test output:", readErr)
		os.Exit(1)
	case waitErr != nil:
		if ok { // the command failed, yet no test did: say how
			fmt.Fprintf(os.Stderr, "testreport: %s: %v\n", args[0], waitErr)
		}
		os.Exit(1)
	case !ok:
		os.Exit(1)
	}
}
