package secret

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestSecretNeverPrints: every fmt verb, a struct holding it, and
// encoding/json show "[redacted]", never the value.
func TestSecretNeverPrints(t *testing.T) {
	s := Secret("ghp_hunter2")
	holder := struct {
		Token Secret
		N     int
	}{s, 1}
	outs := map[string]string{}
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10s"} {
		outs["Sprintf "+f] = fmt.Sprintf(f, s)
		outs["struct "+f] = fmt.Sprintf(f, holder)
	}
	outs["Sprint"] = fmt.Sprint(s)
	b, err := json.Marshal(holder)
	if err != nil {
		t.Fatal(err)
	}
	outs["json"] = string(b)
	for name, out := range outs {
		if strings.Contains(out, "hunter2") || strings.Contains(out, fmt.Sprintf("%x", "ghp_hunter2")) {
			t.Errorf("%s leaks the secret: %s", name, out)
		}
		if !strings.Contains(out, Redacted) {
			t.Errorf("%s: %q has no %s", name, out, Redacted)
		}
	}
	if string(s) != "ghp_hunter2" {
		t.Fatal("string(s) is not the value")
	}
}
