package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/secret"
)

const registryReplayUsage = `Usage: pinned registry replay DIR --fixtures FIXDIR

Replays every op of the manifests in DIR against the local provider fake
serving the fixtures in FIXDIR/<id>/ (the layout of docs/MANIFEST.md's
fixtures, internal/demo/fakeapi/testdata/README.md), through the
WebAssembly sandbox, the egress checks and the pick, as the sidecar runs
them. Each op runs once with its fixture's example args (a paged op
reads its first page) and the fake's credential. Nothing leaves this
machine: the fake listens on loopback and every request is dialed to it.

It prints one line per op, "ok SERVICE.OP (N bytes)" or "FAIL SERVICE.OP:
why", then a summary. A registry repository's CI runs it on every pull
request (registry/README.md).

Exit status: 0 every op ran, 1 a manifest, fixture or op failed, 2 bad
usage.

Flags:
`

// runRegistryReplay implements pinned registry replay.
func runRegistryReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("registry replay", flag.ContinueOnError)
	fixtures := fs.String("fixtures", "", "`directory` of fixtures, one folder per service id (required)")
	words, code, ok := parseFlagsWords(fs, registryReplayUsage, args, 1, stdout, stderr)
	if !ok {
		return code
	}
	if len(words) != 1 || *fixtures == "" {
		return flagError(stderr, "registry replay", "want one DIR of manifests and --fixtures FIXDIR")
	}
	reg, err := registry.Load(os.DirFS(words[0]))
	if err != nil {
		printLoadError(stderr, words[0], err)
		return 1
	}
	var opts []fakeapi.Option
	failed := 0
	for _, m := range reg.Services() {
		dir := filepath.Join(*fixtures, m.ID)
		if !isDir(dir) {
			fmt.Fprintf(stdout, "FAIL %s: no fixtures (%s/)\n", m.ID, dir)
			failed++
			continue
		}
		opts = append(opts, fakeapi.WithService(m, os.DirFS(dir)))
	}
	fake, err := fakeapi.New(opts...)
	if err != nil {
		fmt.Fprintf(stderr, "pinned registry replay: %s\n", errText(err))
		return 1
	}
	defer fake.Close()
	ctx := context.Background()
	eng, err := host.New(ctx, host.Config{Registry: reg, CacheDir: defaultCacheDir(), Override: &host.Override{Addr: fake.Addr(), CAPEM: fake.CACertPEM()}})
	if err != nil {
		fmt.Fprintf(stderr, "pinned registry replay: %s\n", errText(err))
		return 1
	}
	defer eng.Close(ctx)
	ran := 0
	for _, m := range reg.Services() {
		token, user, tenant, served := fake.ServedCredential(m.ID)
		if !served {
			continue
		}
		cred := host.Credential{Kind: "pat", Secret: secret.Secret(token), Tenant: tenant}
		if m.Auth.TwoPart() {
			cred.User = secret.Secret(user)
		}
		for _, name := range m.OpNames() {
			ran++
			example := fake.ServedExample(m.ID, name)
			if example == nil {
				fmt.Fprintf(stdout, "FAIL %s.%s: no example args in the fixtures (ops.%s.example)\n", m.ID, name, name)
				failed++
				continue
			}
			if p := m.Ops[name].Paginate; p != nil {
				var a map[string]json.RawMessage
				if json.Unmarshal(example, &a) == nil {
					delete(a, p.Arg) // the first page
					example, _ = json.Marshal(a)
				}
			}
			res, err := eng.Run(ctx, host.Call{Service: m.ID, Op: name, Args: example, Credential: cred})
			if err != nil {
				fmt.Fprintf(stdout, "FAIL %s.%s: %s\n", m.ID, name, errText(err))
				failed++
				continue
			}
			fmt.Fprintf(stdout, "ok   %s.%s (%d bytes)\n", m.ID, name, len(res.Data))
		}
	}
	if failed > 0 {
		fmt.Fprintf(stdout, "replay: %d of %d ops failed\n", failed, ran)
		return 1
	}
	fmt.Fprintf(stdout, "replay: %d ops of %d services ran against their fixtures\n", ran, len(reg.IDs()))
	return 0
}
