package executor

import (
	"strconv"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/internal/abi"
	"github.com/elevenmessenger/pinned/internal/jsonv"
)

// input builds an op input the way the host does (docs/ABI.md).
func opInput(op, args string) []byte {
	return []byte(`{"host":"api.example.com","headers":{"Accept":"application/json"},"op":` + strings.ReplaceAll(op, "\n", " ") + "}\n" + args)
}

const issuesOp = `{"method":"GET","path":"/repos/{owner}/{repo}/issues",
 "args":{"owner":{"type":"string","required":true,"pattern":"^[a-z0-9-]+$"},
         "per_page":{"type":"integer","min":1,"max":100,"default":30},
         "repo":{"type":"string","required":true,"max_length":5},
         "state":{"type":"string","enum":["open","closed"]},
         "q":{"type":"string"}},
 "query":{"per_page":"{per_page}","q":"is:{q}","state":"{state}"}}`

const createOp = `{"method":"POST","path":"/items",
 "args":{"title":{"type":"string","required":true},"n":{"type":"integer"},"f":{"type":"number"},"ok":{"type":"boolean"},"note":{"type":"string"}},
 "body_json":{"title":"{title}","meta":{"n":"{n}","f":"{f}","ok":"{ok}"},"text":"Note: {note}","list":["{n}","x"]}}`

const formOp = `{"method":"POST","path":"/v1/customers",
 "args":{"email":{"type":"string","required":true},"name":{"type":"string"}},
 "body_form":{"email":"{email}","name":"{name}","metadata[src]":"pinned bot"}}`

func TestRender(t *testing.T) {
	tests := []struct {
		name, op, args, want string
	}{
		{"defaults and absent optional", issuesOp, `{"owner":"octo","repo":"hello"}`,
			`{"method":"GET","url":"https://api.example.com/repos/octo/hello/issues?per_page=30","headers":[["Accept","application/json"]]}`},
		{"query interpolation escaped", issuesOp, `{"owner":"octo","repo":"a b/c","per_page":5,"q":"x&y=1","state":"open"}`,
			`{"method":"GET","url":"https://api.example.com/repos/octo/a%20b%2Fc/issues?per_page=5&q=is%3Ax%26y%3D1&state=open","headers":[["Accept","application/json"]]}`},
		{"integer written canonically", issuesOp, `{"owner":"o","repo":"r","per_page":1e1}`,
			`{"method":"GET","url":"https://api.example.com/repos/o/r/issues?per_page=10","headers":[["Accept","application/json"]]}`},
		{"typed json body", createOp, `{"title":"Hi \"there\"","n":3,"f":0.5,"ok":true,"note":"a"}`,
			`{"method":"POST","url":"https://api.example.com/items","headers":[["Accept","application/json"]],"body":"{\"title\":\"Hi \\\"there\\\"\",\"meta\":{\"n\":3,\"f\":0.5,\"ok\":true},\"text\":\"Note: a\",\"list\":[3,\"x\"]}"}`},
		{"json members of absent args left out", createOp, `{"title":"t"}`,
			`{"method":"POST","url":"https://api.example.com/items","headers":[["Accept","application/json"]],"body":"{\"title\":\"t\",\"meta\":{},\"list\":[\"x\"]}"}`},
		{"literal query of an op without args", `{"method":"GET","path":"/me","query":{"fields":"name,email"}}`, `{}`,
			`{"method":"GET","url":"https://api.example.com/me?fields=name%2Cemail","headers":[["Accept","application/json"]]}`},
		{"form body", formOp, `{"email":"a+b@example.com","name":"Ada L"}`,
			`{"method":"POST","url":"https://api.example.com/v1/customers","headers":[["Accept","application/json"]],"body":"email=a%2Bb%40example.com&name=Ada+L&metadata%5Bsrc%5D=pinned+bot"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, rej, err := Render(opInput(tt.op, tt.args))
			if err != nil || rej != nil {
				t.Fatalf("Render: rej=%+v err=%v", rej, err)
			}
			if string(req) != tt.want {
				t.Fatalf("got  %s\nwant %s", req, tt.want)
			}
		})
	}
}

func TestReject(t *testing.T) {
	long := strings.Repeat("k", 100)
	tests := []struct {
		name, op, args string
		reason         int32
		arg            string
	}{
		{"not json", issuesOp, `{"owner":`, abi.RejectSyntax, ""},
		{"not an object", issuesOp, `[1]`, abi.RejectSyntax, ""},
		{"duplicate key", issuesOp, `{"owner":"a","owner":"b","repo":"r"}`, abi.RejectSyntax, ""},
		{"undeclared", issuesOp, `{"owner":"a","repo":"r","token":"x"}`, abi.RejectUndeclared, "token"},
		{"undeclared long name truncated", issuesOp, `{"` + long + `":1}`, abi.RejectUndeclared, long[:abi.MaxNameBytes]},
		{"missing", issuesOp, `{"repo":"r"}`, abi.RejectMissing, "owner"},
		{"type string", issuesOp, `{"owner":5,"repo":"r"}`, abi.RejectType, "owner"},
		{"type null", issuesOp, `{"owner":null,"repo":"r"}`, abi.RejectType, "owner"},
		{"type integer fraction", issuesOp, `{"owner":"a","repo":"r","per_page":1.5}`, abi.RejectType, "per_page"},
		{"type integer too big", issuesOp, `{"owner":"a","repo":"r","per_page":1e300}`, abi.RejectType, "per_page"},
		{"enum", issuesOp, `{"owner":"a","repo":"r","state":"all"}`, abi.RejectEnum, "state"},
		{"min", issuesOp, `{"owner":"a","repo":"r","per_page":0}`, abi.RejectMin, "per_page"},
		{"max", issuesOp, `{"owner":"a","repo":"r","per_page":101}`, abi.RejectMax, "per_page"},
		{"max length in code points", issuesOp, `{"owner":"a","repo":"éééééé"}`, abi.RejectLength, "repo"},
		{"dot dot segment", issuesOp, `{"owner":"a","repo":".."}`, abi.RejectValue, "repo"},
		{"empty segment", issuesOp, `{"owner":"a","repo":""}`, abi.RejectValue, "repo"},
		{"control char", issuesOp, `{"owner":"a","repo":"a\u0000"}`, abi.RejectValue, "repo"},
		{"bool type", createOp, `{"title":"t","ok":"yes"}`, abi.RejectType, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, rej, err := Render(opInput(tt.op, tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if rej == nil {
				t.Fatalf("accepted: %s", req)
			}
			if rej.Reason != tt.reason || rej.Arg != tt.arg {
				t.Fatalf("got reason %d arg %q, want %d %q", rej.Reason, rej.Arg, tt.reason, tt.arg)
			}
		})
	}
}

// TestPatternsAreTheHosts: the executor does not match patterns
// (argrules.GuestPatterns). The host refused an arg off its pattern
// before any guest ran (host: TestOpBadArgs), and refuses a request
// that carries one (host: TestHostileEgress, owner_breaks_pattern).
func TestPatternsAreTheHosts(t *testing.T) {
	req, rej, err := Render(opInput(issuesOp, `{"owner":"A_B","repo":"r"}`))
	if err != nil || rej != nil {
		t.Fatalf("rej=%+v err=%v", rej, err)
	}
	if !strings.Contains(string(req), "/repos/A_B/r/") {
		t.Fatalf("request %s", req)
	}
}

func TestValidate(t *testing.T) {
	vals, rej, err := Validate(opInput(createOp, `{"title":"T","n":2,"ok":false}`))
	if err != nil || rej != nil {
		t.Fatalf("rej=%v err=%v", rej, err)
	}
	want := map[string]string{"title": "T", "n": "2", "ok": "false"}
	if len(vals) != len(want) {
		t.Fatalf("got %v", vals)
	}
	for k, v := range want {
		if vals[k] != v {
			t.Fatalf("%s = %q, want %q", k, vals[k], v)
		}
	}
}

func TestBadInput(t *testing.T) {
	for i, in := range []string{``, "{}", "[]\n{}", "{\"host\":1}\n{}", "{\"host\":\"h\",\"op\":{\"method\":\"GET\",\"path\":\"/\",\"args\":{\"a\":{\"type\":\"date\"}}}}\n{}"} {
		if _, _, err := Render([]byte(in)); err == nil {
			t.Fatalf("input %d accepted", i)
		}
	}
}

// FuzzRender: arbitrary args never panic the executor, and every request it
// renders for the issues op keeps its shape (scheme, host, path prefix).
func FuzzRender(f *testing.F) {
	for _, s := range []string{`{"owner":"a","repo":"b"}`, `{"owner":"a","repo":"%2e%2e","q":"x"}`, `{}`, `[`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		req, rej, err := Render(opInput(issuesOp, args))
		if err != nil {
			t.Fatalf("host-side input error: %v", err)
		}
		if rej != nil {
			if rej.Reason < abi.RejectSyntax || rej.Reason > abi.RejectValue || len(rej.Arg) > abi.MaxNameBytes {
				t.Fatalf("bad reject %+v", rej)
			}
			return
		}
		v, err := jsonv.Parse(req)
		if err != nil {
			t.Fatalf("request not JSON: %v", err)
		}
		u := v.Get("url").S
		if !strings.HasPrefix(u, "https://api.example.com/repos/") || strings.Count(u, "/") != 6 {
			t.Fatalf("url %s", u)
		}
		for _, c := range []byte(u) {
			if c <= ' ' || c >= 0x7f || c == '#' {
				t.Fatalf("url byte %s in %s", strconv.QuoteRune(rune(c)), u)
			}
		}
	})
}

// TestRendererReused: one Renderer, as the guest keeps, renders every op
// and args as Render does whatever ran before it: a body op then a
// bodyless one, a long request then a short one, a Reject in between.
// Nothing of one call's values or request shows in the next's.
func TestRendererReused(t *testing.T) {
	cases := []struct{ op, args string }{
		{createOp, `{"title":"` + strings.Repeat("LONGSECRET", 40) + `","n":3,"note":"secret-note"}`},
		{issuesOp, `{"owner":"octo","repo":"hello"}`},
		{formOp, `{"email":"a+b@example.com","name":"Ada L"}`},
		{issuesOp, `{"owner":"octo","repo":"toolong"}`},
		{formOp, `{"email":"x@y"}`},
		{createOp, `{"title":"t"}`},
		{`{"method":"GET","path":"/me"}`, `{}`},
		{createOp, `{"title":"t","ok":"yes"}`},
		{issuesOp, `{"owner":"o","repo":"r","q":"` + strings.Repeat("q", 300) + `"}`},
		{createOp, `{"title":"u"}`},
	}
	var r Renderer
	for round, order := range [][]int{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, {0, 6, 8, 1, 2, 5, 0, 4}} {
		for _, i := range order {
			in := opInput(cases[i].op, cases[i].args)
			wantReq, wantRej, wantErr := Render(in)
			req, rej, err := r.Render(in)
			if string(req) != string(wantReq) || (rej == nil) != (wantRej == nil) || (err == nil) != (wantErr == nil) {
				t.Fatalf("round %d case %d: reused Renderer gave %s (rej %+v, err %v), Render %s (rej %+v, err %v)", round, i, req, rej, err, wantReq, wantRej, wantErr)
			}
			if rej != nil && *rej != *wantRej {
				t.Fatalf("round %d case %d: reject %+v, want %+v", round, i, rej, wantRej)
			}
		}
	}
}
