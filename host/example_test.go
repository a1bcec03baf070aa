package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/elevenmessenger/pinned/secret"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/registry"
)

// cacheDir holds wazero's compilation cache: the first engine compiles
// the guest into it, and every later one starts warm.
var cacheDir = filepath.Join(os.TempDir(), "pinned-test-wazero-cache")

// An engine runs ops of the embedded registry: Run renders the request in
// the sandbox, checks it against the op's egress policy, sends it with the
// credential the host alone holds, and returns the projected answer. Here
// the provider is the local fake (Override); in production the zero
// Config reaches the real pinned hosts.
func Example() {
	fake, err := fakeapi.New()
	if err != nil {
		log.Fatal(err)
	}
	defer fake.Close()

	ctx := context.Background()
	eng, err := host.New(ctx, host.Config{
		CacheDir: cacheDir, // the compiled guest, kept for the next start
		Override: &host.Override{Addr: fake.Addr(), CAPEM: fake.CACertPEM()},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close(ctx)

	res, err := eng.Run(ctx, host.Call{
		Service:    "github",
		Op:         "get_viewer",
		Args:       json.RawMessage(`{}`),
		Credential: host.Credential{Kind: "pat", Secret: secret.Secret(fakeapi.Token("github"))},
	})
	if err != nil {
		log.Fatal(err) // a *host.Error with a stable Code
	}
	var viewer map[string]any
	if err := json.Unmarshal(res.Data, &viewer); err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, viewer["login"] != nil, len(res.Data) < int(res.RawBytes))
	// Output: 200 true true
}

// Check validates args without running anything: the sandbox renders the
// request and the policy checks it, but nothing is sent. A refused call is
// a *host.Error whose Code says why.
func ExampleEngine_Check() {
	ctx := context.Background()
	eng, err := host.New(ctx, host.Config{CacheDir: cacheDir})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close(ctx)

	_, err = eng.Check(ctx, "github", "list_issues", json.RawMessage(`{"owner":"octo","repo":"hello","per_page":1000}`))
	var he *host.Error
	if errors.As(err, &he) {
		fmt.Println(he.Code, he.Arg)
	}
	// Output: bad_args per_page
}

// Render shows the exact request a member's args bind an op to, with no
// engine, guest or credential: what a consent screen displays before a
// write is sealed.
func ExampleRender() {
	m, _ := registry.Default().Service("github")
	req, err := host.Render(m, "create_issue", json.RawMessage(`{"owner":"octo","repo":"hello","title":"Typo"}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(req.Method, req.URL)
	fmt.Println(req.Body)
	fmt.Println(req.Confirm)
	// Output:
	// POST https://api.github.com/repos/octo/hello/issues
	// {"title":"Typo"}
	// [GitHub: owner "octo", repo "hello"] Open an issue titled "Typo" in octo/hello?
}

// ValidateArgs refuses bad args in microseconds, without a sandbox; the
// error is a *host.Error naming the arg.
func ExampleValidateArgs() {
	m, _ := registry.Default().Service("github")
	err := host.ValidateArgs(m, "list_issues", json.RawMessage(`{"owner":"octo"}`), 0)
	var he *host.Error
	if errors.As(err, &he) {
		fmt.Println(he.Code, he.Arg)
	}
	// Output: bad_args repo
}
