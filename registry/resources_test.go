package registry

import (
	"os"
	"strings"
	"testing"
)

// github returns manifests/github.json with old→new edits applied.
func githubWith(t *testing.T, edits ...string) []byte {
	t.Helper()
	data, err := os.ReadFile("manifests/github.json")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for i := 0; i+1 < len(edits); i += 2 {
		if n := strings.Count(s, edits[i]); n != 1 {
			t.Fatalf("edit %q occurs %d times in manifests/github.json, want 1", edits[i], n)
		}
		s = strings.Replace(s, edits[i], edits[i+1], 1)
	}
	return []byte(s)
}

func TestResourcesRefused(t *testing.T) {
	const unscoped = `"unscoped": ["get_viewer"]`
	tests := []struct {
		name  string
		edits []string
		want  string
	}{
		{name: "an op left unclassified", edits: []string{unscoped, `"unscoped": []`},
			want: `resources.repository.unscoped: op "get_viewer" takes none of resource "repository"'s args`},
		{name: "a write op unscoped", edits: []string{unscoped, `"unscoped": ["get_viewer", "create_issue"]`},
			want: `names op "create_issue", a write op; a write must name its resource`},
		{name: "the list op takes the args", edits: []string{`"list": {"op": "list_repos"`, `"list": {"op": "list_issues"`},
			want: `names op "list_issues", which takes the resource's args`},
		{name: "the list field is not picked", edits: []string{`"field": "full_name"`, `"field": "name"`},
			want: `list.field: "name" is not a pick field of op "list_repos"`},
		{name: "two args without a separator", edits: []string{`"separator": "/",`, ``},
			want: `resources.repository.separator: "": with 2 args`},
		{name: "a letter as separator", edits: []string{`"separator": "/",`, `"separator": "x",`},
			want: `resources.repository.separator: "x"`},
		{name: "an op with some of the args", edits: []string{`"args": ["owner", "repo"],`, `"args": ["owner", "repo", "state"],`},
			want: `declares some but not all of resource "repository"'s args (owner, repo, state)`},
		{name: "an unknown member in a resource", edits: []string{`"args": ["owner", "repo"],`, `"args": ["owner", "repo", "state"], "separator_": 1,`},
			want: `unknown field "separator_"`},
		{name: "no label", edits: []string{`"label": "Repositories",`, ``},
			want: `resources.repository.label: required`},
		{name: "a bad name", edits: []string{`"repository": {`, `"Repo": {`},
			want: `resource name must match`},
		{name: "the unscoped op does not exist", edits: []string{unscoped, `"unscoped": ["get_viewer", "get_everything"]`},
			want: `names op "get_everything", which does not exist`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(problems(t, "github.json", githubWith(t, tt.edits...)), "\n")
			if !strings.Contains(got, tt.want) {
				t.Errorf("problems:\n%s\nwant one containing %q", got, tt.want)
			}
		})
	}
}

func TestResourceRoles(t *testing.T) {
	m, err := Parse("github.json", githubWith(t))
	if err != nil {
		t.Fatal(err)
	}
	r, ok := m.Resources["repository"]
	if !ok {
		t.Fatal("github declares no repository resource")
	}
	want := map[string]string{
		"get_viewer": RoleUnscoped, "list_repos": RoleList, "get_repo": RoleScoped,
		"get_pages": RoleScoped, "list_issues": RoleScoped, "create_issue": RoleScoped,
	}
	for op, role := range want {
		if got := r.Role(op, m.Ops[op]); got != role {
			t.Errorf("Role(%s) = %q, want %q", op, got, role)
		}
	}
	if len(want) != len(m.Ops) {
		t.Errorf("github has %d ops, the table %d", len(m.Ops), len(want))
	}
	if got := r.Join([]string{"octo", "hello"}); got != "octo/hello" {
		t.Errorf("Join = %q", got)
	}
	c := m.Clone()
	c.Resources["repository"].Args[0] = "changed"
	c.Resources["repository"].List.Op = "changed"
	if m.Resources["repository"].Args[0] != "owner" || m.Resources["repository"].List.Op != "list_repos" {
		t.Error("changing a clone's resource changed the manifest")
	}
}
