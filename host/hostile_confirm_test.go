package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestConfirmNotSpoofable (found by the red team; it guards the fix): the confirm sentence is "the consent a
// member taps" (docs/RATIONALE.md). Check fills it with the caller's
// (untrusted, model-written) args verbatim: a title may hold quotes,
// newlines and bidi controls, so it can print a fake target before the
// real one and push the real one out of view. Here the member reads
// "... in pinned-tester/notes?" while the op writes to victim/secrets.
func TestConfirmNotSpoofable(t *testing.T) {
	env := newEnv(t, nil)
	title := "Weekly notes\" in pinned-tester/notes?" + strings.Repeat("\n", 40) + "\u202e"
	args, _ := json.Marshal(map[string]string{"owner": "victim", "repo": "secrets", "title": title})
	c, err := env.eng.Check(context.Background(), "github", "create_issue", args)
	if err != nil {
		t.Fatal(err)
	}
	first := strings.SplitN(c.Confirm, "\n", 2)[0]
	t.Logf("confirm first line: %q", first)
	if strings.Contains(first, "pinned-tester/notes") && !strings.Contains(first, "victim/secrets") {
		t.Errorf("the consent line names pinned-tester/notes; the op writes to victim/secrets:\n%q", c.Confirm)
	}
}
