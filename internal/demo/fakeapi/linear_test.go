package fakeapi

import (
	"regexp"
	"strings"
	"testing"
)

// TestLinearCannedQueries: every canned answer of
// testdata/linear/queries.json is consistent with its query text: the
// root field and every selected field name occur in it, every declared
// variable is declared there with that type, every "$name" argument is a
// declared variable, and every query text is listed once. A canned entry
// that drifted from its query would answer fields the query did not ask
// for.
func TestLinearCannedQueries(t *testing.T) {
	l := newLinear()
	all := l.queries
	if len(all) < 20 {
		t.Fatalf("%d canned queries loaded", len(all))
	}
	resolvers := map[string]bool{"viewer": true, "teams": true, "issues": true, "issue": true, "issueCreate": true}
	word := regexp.MustCompile(`[A-Za-z_]+`)
	for _, q := range all {
		text := q.Query + q.Pattern
		t.Run(text, func(t *testing.T) {
			if q.Error != nil {
				if q.Status != 400 || q.Error.Code == "" || q.Error.Message == "" {
					t.Errorf("error entry: status %d, %+v", q.Status, q.Error)
				}
				return
			}
			words := map[string]bool{}
			for _, w := range word.FindAllString(strings.ReplaceAll(text, `\`, " "), -1) {
				words[w] = true
			}
			if !resolvers[q.Field] || !words[q.Field] {
				t.Errorf("field %q: not a resolver or not in the query", q.Field)
			}
			if len(q.Select) == 0 {
				t.Error("no selection")
			}
			for _, p := range q.Select {
				for _, f := range strings.Split(p, ".") {
					if !words[f] {
						t.Errorf("selected %q is not in the query", p)
					}
				}
			}
			for n, typ := range q.Vars {
				if !strings.Contains(q.Query, "$"+n+": "+typ) {
					t.Errorf("variable $%s: %s is not declared by the query", n, typ)
				}
			}
			for k, a := range q.Args {
				if !words[k] {
					t.Errorf("argument %q is not in the query", k)
				}
				if s, ok := a.(string); ok && strings.HasPrefix(s, "$") && q.re == nil {
					if _, declared := q.Vars[s[1:]]; !declared {
						t.Errorf("argument %s = %s: not a declared variable", k, s)
					}
				}
			}
		})
	}
}
