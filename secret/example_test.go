package secret_test

import (
	"encoding/json"
	"fmt"

	"github.com/elevenmessenger/pinned/secret"
)

// A Secret prints, formats and marshals as "[redacted]" however it is
// logged; the code that sends it converts it explicitly.
func Example() {
	token := secret.Secret("ghp_example")
	b, _ := json.Marshal(map[string]secret.Secret{"token": token})
	fmt.Println(token)
	fmt.Printf("%s %q %v %+v %#v\n", token, token, token, token, token)
	fmt.Println(string(b))
	fmt.Println("Authorization: Bearer " + string(token))
	// Output:
	// [redacted]
	// [redacted] [redacted] [redacted] [redacted] [redacted]
	// {"token":"[redacted]"}
	// Authorization: Bearer ghp_example
}
