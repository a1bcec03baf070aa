package registry_test

import (
	"errors"
	"fmt"
	"testing/fstest"

	"github.com/elevenmessenger/pinned/registry"
)

// acme is a manifest of one read op, which the examples parse, load and
// add.
const acme = `{
  "manifest": 1,
  "id": "acme",
  "name": "Acme",
  "host": "api.acme.example",
  "auth": {"scheme": "bearer"},
  "ops": {
    "get_viewer": {
      "access": "read",
      "summary": "Who the token belongs to",
      "method": "GET",
      "path": "/v1/me",
      "pick": {"fields": {"id": "identifier", "name": "text"}}
    }
  }
}`

// Parse checks a manifest against every rule of docs/MANIFEST.md and
// returns it normalized; ops are looked up by name.
func ExampleParse() {
	m, err := registry.Parse("acme.json", []byte(acme))
	if err != nil {
		fmt.Println(err)
		return
	}
	op, _ := m.Op("get_viewer")
	fmt.Println(m.ID, m.Host, m.OpNames(), op.Method, op.Path)
	// Output: acme api.acme.example [get_viewer] GET /v1/me
}

// A refused manifest is a *registry.Error listing every problem, each with
// its file, line, column, op and field.
func ExampleParse_problems() {
	_, err := registry.Parse("acme.json", []byte(`{
  "manifest": 1,
  "id": "acme",
  "name": "Acme",
  "host": "api.acme.example",
  "auth": {"scheme": "bearer"},
  "headers": {"X-Forwarded-For": "10.0.0.1"},
  "ops": {
    "get_viewer": {
      "access": "read",
      "summary": "Who the token belongs to",
      "method": "get",
      "path": "/v1/me",
      "pick": {"fields": {"id": "identifier"}}
    }
  }
}`))
	var re *registry.Error
	if errors.As(err, &re) {
		for _, p := range re.Problems {
			fmt.Printf("%s:%d:%d op=%q field=%q\n", p.File, p.Line, p.Col, p.Op, p.Field)
		}
	}
	// Output:
	// acme.json:7:34 op="" field="headers.X-Forwarded-For"
	// acme.json:12:17 op="get_viewer" field="method"
}

// Default is the embedded registry; a service's manifest gives each op's
// access, method and path template.
func ExampleRegistry_Service() {
	m, ok := registry.Default().Service("github")
	if !ok {
		return
	}
	op, _ := m.Op("create_issue")
	fmt.Println(m.Host, op.Access, op.Method, op.Path)
	// Output: api.github.com write POST /repos/{owner}/{repo}/issues
}

// Load reads every *.json manifest of a directory tree; a program may
// serve its own services instead of the embedded ones.
func ExampleLoad() {
	r, err := registry.Load(fstest.MapFS{"acme.json": {Data: []byte(acme)}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.IDs(), r.Has("github"))
	// Output: [acme] false
}

// With adds (or replaces) one manifest, leaving the receiver as it was:
// the embedded services plus one of your own.
func ExampleRegistry_With() {
	base := registry.Default()
	r, err := base.With("acme.json", []byte(acme))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Has("acme"), r.Has("github"), base.Has("acme"))
	// Output: true true false
}
