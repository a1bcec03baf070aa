package host

import (
	"os"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/host/api"
)

// TestPublicValuesStable: the wire values of api.Applied and
// api.StopReason are part of the API, each named beside its constant in
// host/api, and docs/API.md has a row for each: a rename would change the
// API unnoticed.
// This pins them, and docs/API.md's tables ("Writes that happened",
// "Pages") list each one.
func TestPublicValuesStable(t *testing.T) {
	doc, err := os.ReadFile("../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	values := []struct {
		got, want string
	}{
		{string(api.AppliedYes), "yes"}, {string(api.AppliedMaybe), "maybe"}, {string(api.AppliedNo), "no"},
		{string(api.StopLastPage), "last_page"}, {string(api.StopPages), "pages"}, {string(api.StopResultCap), "result_cap"},
		{string(api.StopPageFailed), "page_failed"}, {string(api.StopRepeatedCursor), "repeated_cursor"},
		{string(api.StopCursorCycle), "cursor_cycle"}, {string(api.StopEmptyPages), "empty_pages"},
		{string(api.StopEmptyCursor), "empty_cursor"}, {string(api.StopLinkRefused), "link_refused"},
		{string(api.StopCursorInvalid), "cursor_invalid"}, {string(api.StopTimeLimit), "time_limit"},
	}
	for _, v := range values {
		if v.got != v.want {
			t.Errorf("value %q, want %q", v.got, v.want)
		}
		if !strings.Contains(string(doc), "\n| `"+v.got+"` |") {
			t.Errorf("docs/API.md has no table row for %q", v.got)
		}
	}
}
