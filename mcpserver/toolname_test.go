package mcpserver

import "testing"

// TestToolNameRule: the tool name rule takes what every major model API
// takes, and refuses what any of them refuses.
func TestToolNameRule(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"github_list_repos", true},
		{"dnsimple_op", true},
		{"_private_op", true},
		{"a234567890123456789012345678901234567890123456789012345678901234", true},
		{"a2345678901234567890123456789012345678901234567890123456789012345", false}, // 65
		{"1password_get_item", false}, // a leading digit
		{"github.list_repos", false},  // a dot
		{"github-list-repos", false},  // a dash: not in every API
		{"GitHub_list", false},        // upper case
		{"github list", false},
		{"", false},
		{"gïthub_list", false},
	} {
		if got := toolNameRE.MatchString(tc.name); got != tc.ok {
			t.Errorf("%q: %v, want %v", tc.name, got, tc.ok)
		}
	}
}
