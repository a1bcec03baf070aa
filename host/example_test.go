package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/elevenmessenger/pinned/secret"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
)

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
	eng, err := host.New(ctx, host.Config{})
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
