package host

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/host/internal/egress"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/registry"
)

// assertRendered checks that Render's request for args is what the
// provider fake received when the op ran with them (TestOpRequests calls
// it for every op of every manifest): the method, the URL as sent, every
// declared header, the Content-Type, and the body (a JSON body compared
// as JSON values, as the host binds it; a form body byte for byte); and
// for a write, that its confirm sentence is the one eng.Check gives.
func assertRendered(t *testing.T, eng *Engine, m *registry.Manifest, opName, args string, got fakeapi.Request) {
	t.Helper()
	r, herr := render(m, opName, json.RawMessage(args), false)
	if herr != nil {
		t.Fatalf("render: %v", herr)
	}
	op, _ := m.Op(opName)
	hasSecret := false
	for _, a := range op.Args {
		hasSecret = hasSecret || a.Secret
	}
	if red, herr := Render(m, opName, json.RawMessage(args)); herr != nil || (!hasSecret && !reflect.DeepEqual(red, r)) {
		t.Errorf("Render without secret args differs from the unredacted rendering:\n%+v\n%+v (%v)", red, r, herr)
	}
	if op.Confirm != "" {
		chk, err := eng.Check(context.Background(), m.ID, opName, json.RawMessage(args))
		if err != nil {
			t.Errorf("Check: %v", err)
		} else if chk.Confirm != r.Confirm || r.Confirm == "" {
			t.Errorf("rendered confirm %q, Check gives %q", r.Confirm, chk.Confirm)
		}
	} else if r.Confirm != "" {
		t.Errorf("a read op rendered a confirm sentence %q", r.Confirm)
	}
	if r.Method != got.Method {
		t.Errorf("rendered method %q, the fake received %q", r.Method, got.Method)
	}
	wantURL := "https://" + got.Host + got.Path
	if got.RawQuery != "" {
		wantURL += "?" + got.RawQuery
	}
	if r.URL != wantURL {
		t.Errorf("rendered URL\n %s\nthe fake received\n %s", r.URL, wantURL)
	}
	if len(r.Headers) != len(m.Headers) {
		t.Errorf("rendered headers %v, manifest %v", r.Headers, m.Headers)
	}
	for _, h := range r.Headers {
		if vs := got.Header.Values(h.Name); len(vs) != 1 || vs[0] != h.Value {
			t.Errorf("rendered header %s: %s, the fake received %q", h.Name, h.Value, vs)
		}
	}
	if ct := got.Header.Get("Content-Type"); r.ContentType != ct {
		t.Errorf("rendered Content-Type %q, the fake received %q", r.ContentType, ct)
	}
	if r.ContentType == "application/json" {
		if !sameJSON(t, r.Body, got.Body) {
			t.Errorf("rendered body\n %s\nthe fake received\n %s", r.Body, got.Body)
		}
	} else if r.Body != string(got.Body) {
		t.Errorf("rendered body\n %q\nthe fake received\n %q", r.Body, got.Body)
	}
}

// sameJSON compares two JSON texts as values, numbers by their literal.
func sameJSON(t *testing.T, a string, b []byte) bool {
	t.Helper()
	decode := func(s []byte) any {
		dec := json.NewDecoder(bytes.NewReader(s))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Errorf("body %s: %v", s, err)
		}
		return v
	}
	return reflect.DeepEqual(decode([]byte(a)), decode(b))
}

// renderManifest has a secret arg in the path, the query and a form body,
// and a confirm sentence naming it.
const renderManifest = `{
  "manifest": 1,
  "id": "vault",
  "name": "Render test",
  "host": "api.vault.example",
  "auth": { "scheme": "bearer" },
  "headers": { "accept": "application/json" },
  "ops": {
    "put_secret": {
      "access": "write",
      "summary": "Store a secret",
      "confirm": "Store a secret as {name} (ttl {ttl})?",
      "method": "POST",
      "path": "/v1/secrets/{value}",
      "args": {
        "name": { "type": "string", "required": true, "pattern": "^[a-z]+$" },
        "value": { "type": "string", "required": true, "secret": true },
        "ttl": { "type": "integer", "min": 1, "max": 100, "default": 7 }
      },
      "query": { "v": "{value}", "n": "{name}" },
      "body_form": { "secret": "{value}", "ttl": "{ttl}", "note": "a b&c" },
      "pick": { "fields": { "id": "identifier" } }
    },
    "put_json": {
      "access": "write",
      "summary": "Store a secret as JSON",
      "confirm": "Store {name}?",
      "method": "PUT",
      "path": "/v1/json",
      "args": {
        "name": { "type": "string", "required": true },
        "value": { "type": "string", "secret": true },
        "n": { "type": "number" },
        "on": { "type": "boolean", "default": true }
      },
      "body_json": { "name": "{name}", "label": "x-{name}", "value": "{value}", "n": "{n}", "on": "{on}", "k": [1, 2.5, null, false, "{value}"] },
      "pick": { "fields": { "id": "identifier" } }
    }
  }
}`

func TestRender(t *testing.T) {
	reg, err := registry.Load(fstest.MapFS{"vault.json": {Data: []byte(renderManifest)}})
	if err != nil {
		t.Fatal(err)
	}
	vault, _ := reg.Service("vault")
	github, _ := registry.Default().Service("github")
	tests := []struct {
		name    string
		m       *registry.Manifest
		op      string
		args    string
		want    *Request
		code    api.Code
		message string
		arg     string
	}{
		{name: "read op with its default applied", m: github, op: "list_repos", args: `{"sort":"pushed"}`,
			want: &Request{Method: "GET", URL: "https://api.github.com/user/repos?per_page=30&sort=pushed",
				Headers: []Header{{"Accept", "application/vnd.github+json"}, {"X-Github-Api-Version", "2022-11-28"}}}},
		{name: "empty args are {}", m: github, op: "list_repos", args: ``,
			want: &Request{Method: "GET", URL: "https://api.github.com/user/repos?per_page=30",
				Headers: []Header{{"Accept", "application/vnd.github+json"}, {"X-Github-Api-Version", "2022-11-28"}}}},
		{name: "write op with its confirm sentence", m: github, op: "create_issue", args: `{"owner":"octo","repo":"hello.go","title":"<b> & \"q\""}`,
			want: &Request{Method: "POST", URL: "https://api.github.com/repos/octo/hello.go/issues",
				Headers:     []Header{{"Accept", "application/vnd.github+json"}, {"X-Github-Api-Version", "2022-11-28"}},
				ContentType: "application/json", Body: `{"title":"<b> & \"q\""}`,
				Confirm: `[GitHub: owner "octo", repo "hello.go"] Open an issue titled "<b> & "q"" in octo/hello.go?`}},
		{name: "secret redacted in path, query and form", m: vault, op: "put_secret", args: `{"name":"db","value":"hunter2 x"}`,
			want: &Request{Method: "POST", URL: "https://api.vault.example/v1/secrets/[redacted]?n=db&v=[redacted]",
				Headers:     []Header{{"Accept", "application/json"}},
				ContentType: "application/x-www-form-urlencoded", Body: "note=a+b%26c&secret=[redacted]&ttl=7",
				Confirm: "[Render test] Store a secret as db (ttl 7)?", Sends: []Shown{{"value", "[redacted]"}}}},
		{name: "secret redacted in a JSON body, typed values", m: vault, op: "put_json", args: `{"name":"db","value":"hunter2","n":1.5}`,
			want: &Request{Method: "PUT", URL: "https://api.vault.example/v1/json",
				Headers:     []Header{{"Accept", "application/json"}},
				ContentType: "application/json", Body: `{"name":"db","label":"x-db","value":"[redacted]","n":1.5,"on":true,"k":[1,2.5,null,false,"[redacted]"]}`,
				Confirm: "[Render test] Store db?", Sends: []Shown{{"n", "1.5"}, {"on", "true"}, {"value", "[redacted]"}}}},
		{name: "absent optional JSON members left out", m: vault, op: "put_json", args: `{"name":"db","on":false}`,
			want: &Request{Method: "PUT", URL: "https://api.vault.example/v1/json",
				Headers:     []Header{{"Accept", "application/json"}},
				ContentType: "application/json", Body: `{"name":"db","label":"x-db","on":false,"k":[1,2.5,null,false]}`,
				Confirm: "[Render test] Store db?", Sends: []Shown{{"on", "false"}}}},
		{name: "bad args: missing", m: github, op: "create_issue", args: `{"owner":"octo"}`, code: api.CodeBadArgs, arg: "repo", message: `arg "repo" is required`},
		{name: "bad args: above max", m: github, op: "list_repos", args: `{"per_page":101}`, code: api.CodeBadArgs, arg: "per_page", message: `arg "per_page" must be at most 100`},
		{name: "bad args: undeclared", m: github, op: "list_repos", args: `{"per_pgae":1}`, code: api.CodeBadArgs, arg: "per_pgae"},
		{name: "bad args: not JSON", m: github, op: "list_repos", args: `{per_page:1}`, code: api.CodeBadArgs, message: "args must be a JSON object with unique keys"},
		{name: "bad args: too large", m: github, op: "list_repos", args: `{"sort":"` + strings.Repeat("a", DefaultMaxArgsBytes) + `"}`, code: api.CodeBadArgs, message: "args are larger than"},
		{name: "unknown op", m: github, op: "list_repo", args: `{}`, code: api.CodeUnknownOp, message: `service github has no op "list_repo"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Render(tt.m, tt.op, json.RawMessage(tt.args))
			herr := asError(t, err)
			if tt.code != "" {
				if herr == nil {
					t.Fatalf("got %+v, want %s", got, tt.code)
				}
				if herr.Code != tt.code || herr.Arg != tt.arg || !strings.Contains(herr.Message, tt.message) {
					t.Errorf("got %s (arg %q), want %s %q (arg %q)", herr, herr.Arg, tt.code, tt.message, tt.arg)
				}
				// The same answer as ValidateArgs (what Run gives before
				// any guest runs).
				if v := asError(t, ValidateArgs(tt.m, tt.op, json.RawMessage(tt.args), 0)); v == nil || v.Code != herr.Code || v.Message != herr.Message || v.Arg != herr.Arg {
					t.Errorf("ValidateArgs says %v, Render %v", v, herr)
				}
				return
			}
			if herr != nil {
				t.Fatal(herr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n %+v\nwant\n %+v", got, tt.want)
			}
			if strings.Contains(got.URL+got.Body+got.Confirm, "hunter2") {
				t.Errorf("a secret value is shown: %+v", got)
			}
		})
	}
}

// TestRenderIsBound: Render's request (unredacted) passes the binding
// check it is built beside, for every op of the test manifest; and a
// request differing from it in one byte of the body does not.
func TestRenderIsBound(t *testing.T) {
	reg, err := registry.Load(fstest.MapFS{"vault.json": {Data: []byte(renderManifest)}})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := reg.Service("vault")
	for _, tc := range []struct{ op, args string }{
		{"put_secret", `{"name":"db","value":"hunter2 x"}`},
		{"put_json", `{"name":"db","value":"hunter2","n":1.5}`},
		{"put_json", `{"name":"db"}`},
	} {
		r, herr := render(m, tc.op, json.RawMessage(tc.args), false)
		if herr != nil {
			t.Fatal(herr)
		}
		p, herr := prepareOp(m, tc.op)
		if herr != nil {
			t.Fatal(herr)
		}
		_, want, herr := p.bindArgs(json.RawMessage(tc.args), DefaultMaxArgsBytes)
		if herr != nil {
			t.Fatal(herr)
		}
		b := p.bind
		if !b.Check(want, checkedRequestFor(t, m, tc.op, r, r.Body), m.Host) {
			t.Errorf("%s %s: the rendered request fails the binding check: %+v", tc.op, tc.args, r)
		}
		broken := checkedRequestFor(t, m, tc.op, r, strings.Replace(r.Body, "a", "b", 1))
		if b.Check(want, broken, m.Host) {
			t.Errorf("%s: a changed body passed the binding check", tc.op)
		}
	}
}

// checkedRequestFor is r (its URL and declared headers) with body, as the
// egress policy hands it to the binding check: encoded as the guest
// submits a request, decoded and checked by the policy of m's op (which
// must accept it).
func checkedRequestFor(t *testing.T, m *registry.Manifest, opName string, r *Request, body string) *egress.Request {
	t.Helper()
	op, _ := m.Op(opName)
	pol, err := egress.NewPolicy(m, op)
	if err != nil {
		t.Fatal(err)
	}
	raw := map[string]any{"method": r.Method, "url": r.URL, "headers": [][2]string{}}
	hs := [][2]string{}
	for _, h := range r.Headers {
		hs = append(hs, [2]string{h.Name, h.Value})
	}
	raw["headers"] = hs
	if body != "" {
		raw["body"] = body
	}
	enc, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	c, deny := egress.DecodeRequest(enc)
	if deny == "" {
		deny = pol.Check(c)
	}
	if deny != "" {
		t.Fatalf("the policy refuses %s (%s)", enc, deny)
	}
	return c
}
