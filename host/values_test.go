package host

import (
	"os"
	"strings"
	"testing"
)

// TestPublicValuesStable: the wire values of Applied and StopReason are
// part of the API and the host's doc names each beside its constant;
// their one home is an internal package (host/internal/upstream,
// host/internal/paginate), where a rename would change host's API unnoticed.
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
		{string(AppliedYes), "yes"}, {string(AppliedMaybe), "maybe"}, {string(AppliedNo), "no"},
		{string(StopLastPage), "last_page"}, {string(StopPages), "pages"}, {string(StopResultCap), "result_cap"},
		{string(StopPageFailed), "page_failed"}, {string(StopRepeatedCursor), "repeated_cursor"},
		{string(StopCursorCycle), "cursor_cycle"}, {string(StopEmptyPages), "empty_pages"},
		{string(StopEmptyCursor), "empty_cursor"}, {string(StopLinkRefused), "link_refused"},
		{string(StopCursorInvalid), "cursor_invalid"}, {string(StopTimeLimit), "time_limit"},
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
