package flow

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/registry"
)

// benchSession is a session that read what a busy research session
// reads: 100 GitHub repositories (name, description, URL), 100 issue
// titles and 30 DNSimple domains (name and id): 460 recorded values.
func benchSession(b *testing.B) *Session {
	b.Helper()
	s := New(nil, 0)
	var repos, issues, domains []map[string]any
	for i := range 100 {
		repos = append(repos, map[string]any{"full_name": fmt.Sprintf("pinned-tester/project-%03d", i),
			"description": fmt.Sprintf("Tools for the %dth experiment in reproducible builds", i),
			"html_url":    fmt.Sprintf("https://github.com/pinned-tester/project-%03d", i), "private": false, "stargazers_count": i})
		issues = append(issues, map[string]any{"number": i, "title": fmt.Sprintf("Investigate flaky test number %d in the worker", i), "state": "open"})
	}
	for i := range 30 {
		domains = append(domains, map[string]any{"id": 9001000 + i, "name": fmt.Sprintf("domain-%02d-fake.io", i), "state": "registered"})
	}
	defer func() {
		if n := len(s.byCanon); n != 460 {
			b.Fatalf("%d recorded values, want 460", n)
		}
	}()
	for _, r := range []struct {
		service, op string
		data        any
	}{{"github", "list_repos", repos}, {"github", "list_issues", issues}, {"dnsimple", "list_domains", domains}} {
		raw, _ := json.Marshal(r.data)
		if err := s.Record(r.service, r.op, pickOf(b, r.service, r.op), raw); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkFlow measures the flow check's cost per call beside a baseline
// every call already pays in the same run: the host's own validation and
// binding of the same args (host.ValidateArgs). "small" is a
// list_issues call, "body" a create_issue with a 16 KiB body; record is
// recording a 100-repository page, beside decoding it with encoding/json.
func BenchmarkFlow(b *testing.B) {
	s := benchSession(b)
	gh, _ := registry.Default().Service("github")
	small := json.RawMessage(`{"owner":"pinned-tester","repo":"project-042","state":"open","per_page":30}`)
	body := json.RawMessage(`{"owner":"pinned-tester","repo":"notes","title":"Weekly notes","body":` +
		string(must(json.Marshal(strings.Repeat("Notes of the week: nothing from another service here. ", 300)))) + `}`)
	for _, c := range []struct {
		name, op string
		args     json.RawMessage
	}{{"small", "list_issues", small}, {"body", "create_issue", body}} {
		if r, _ := s.Check("github", c.args); r != nil {
			b.Fatalf("%s refused: %+v", c.name, r)
		}
		b.Run("check-"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.Check("github", c.args)
			}
		})
		b.Run("validate-"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := host.ValidateArgs(gh, c.op, c.args, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	var repos []map[string]any
	for i := range 100 {
		repos = append(repos, map[string]any{"full_name": fmt.Sprintf("pinned-tester/repo-%03d", i), "description": "A description of the repository",
			"html_url": fmt.Sprintf("https://github.com/pinned-tester/repo-%03d", i), "private": false, "stargazers_count": i, "pushed_at": "2026-01-01T00:00:00Z"})
	}
	page := must(json.Marshal(repos))
	pk := pickOf(b, "github", "list_repos")
	b.Run("record-repos100", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(page)))
		for b.Loop() {
			if err := New(nil, 0).Record("github", "list_repos", pk, page); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-repos100", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(page)))
		for b.Loop() {
			var v any
			if err := json.Unmarshal(page, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
