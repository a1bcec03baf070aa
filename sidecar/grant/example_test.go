package grant_test

import (
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// A member seals a grant to the bot's public key; only the bot's private
// key opens it. The credential inside stays a secret.Secret.
func Example() {
	bot, err := grant.GenerateKey(nil)
	if err != nil {
		log.Fatal(err)
	}
	sealed, err := grant.Seal(&grant.Grant{
		Service:   "github",
		Access:    grant.AccessWrite,
		Kind:      grant.KindPAT,
		Secret:    "ghp_example",
		ExpiresAt: time.Now().Add(time.Hour),
	}, bot.Public(), nil)
	if err != nil {
		log.Fatal(err)
	}
	g, err := grant.Open(sealed, bot)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(g.Service, g.Access, g.Secret, len(g.Nonce) >= 16)
	// Output: github write [redacted] true
}

// Every failure to open is ErrInvalid, whatever step failed: here a grant
// sealed to another bot.
func ExampleOpen_wrongKey() {
	bot, _ := grant.GenerateKey(nil)
	other, _ := grant.GenerateKey(nil)
	sealed, err := grant.Seal(&grant.Grant{Service: "github", Secret: "ghp_example", ExpiresAt: time.Now().Add(time.Hour)}, other.Public(), nil)
	if err != nil {
		log.Fatal(err)
	}
	_, err = grant.Open(sealed, bot)
	fmt.Println(errors.Is(err, grant.ErrInvalid))
	// Output: true
}

// A grant bound to its args (ArgsSHA256) runs only with args of the same
// canonical form: key order and spacing do not matter.
func ExampleCanonicalArgs() {
	a, _ := grant.CanonicalArgs([]byte(`{"title": "Typo", "owner": "octo"}`))
	h1, _ := grant.ArgsSHA256([]byte(`{"title": "Typo", "owner": "octo"}`))
	h2, _ := grant.ArgsSHA256([]byte(`{"owner":"octo","title":"Typo"}`))
	fmt.Println(string(a), h1 == h2)
	// Output: {"owner":"octo","title":"Typo"} true
}
