package flow

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/elevenmessenger/pinned/registry"
)

// pickOf returns the pick of service.op of the embedded registry.
func pickOf(t testing.TB, service, op string) *registry.Pick {
	t.Helper()
	m, ok := registry.Default().Service(service)
	if !ok {
		t.Fatalf("no service %s", service)
	}
	o, ok := m.Op(op)
	if !ok {
		t.Fatalf("no op %s.%s", service, op)
	}
	return o.Pick
}

func TestCanonical(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"case and punctuation", "Hello-Fake.IO", "hellofakeio"},
		{"spaces", "Typo in README", "typoinreadme"},
		{"full width (NFKC)", "ＨＥＬＬＯ－ＦＡＫＥ", "hellofake"},
		{"ligature (NFKC)", "ﬁle", "file"},
		{"case folding beyond ASCII", "STRASSE Straße", "strassestrasse"},
		{"invisible and blank code points", "hel\u200blo\u2800fa\ufe0fke", "hellofake"},
		{"digits kept", "cus_00012345", "cus00012345"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Canonical(tt.in); got != tt.want {
				t.Errorf("Canonical(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// session records what the research data's services return.
func session(t testing.TB, allow ...api.Flow) *Session {
	t.Helper()
	s := New(allow, 0)
	rec := func(service, op, data string) {
		if err := s.Record(service, op, pickOf(t, service, op), json.RawMessage(data)); err != nil {
			t.Fatal(err)
		}
	}
	rec("dnsimple", "get_viewer", `{"account":{"id":1385,"email":"pinned-tester@example.com","plan_identifier":"dnsimple-personal"},"user":{"id":4242,"email":"pinned-tester@example.com"}}`)
	rec("dnsimple", "list_domains", `[{"id":9001001,"name":"shop-fake.co","state":"registered","auto_renew":true,"expires_at":"2027-01-01T00:00:00Z"},
		{"id":9001002,"name":"secret-project.net","state":"registered","auto_renew":false},{"id":9001003,"name":"a.io","state":"hosted"}]`)
	rec("github", "get_viewer", `{"login":"pinned-tester","id":90210001,"name":"Pinned Tester","type":"User"}`)
	rec("github", "list_issues", `[{"number":7,"title":"Typo in README","state":"open","html_url":"https://github.com/pinned-tester/notes/issues/7","user":{"login":"octocat"},"labels":[{"name":"documentation"}],"comments":2}]`)
	rec("github", "get_pages", `{"cname":"docs.hello-fake.io","html_url":"https://docs.hello-fake.io/","status":"built","source":{"branch":"gh-pages","path":"/"}}`)
	rec("hubspot", "list_companies", `[{"id":"8100","properties":{"name":"Acme","numberofemployees":"2750000","industry":"COMPUTER_SOFTWARE"}}]`)
	rec("stripe", "list_charges", `[{"id":"ch_1","amount":7.654321e6,"currency":"usd"}]`)
	rec("stripe", "list_customers", `[{"id":"cus_NffrFeUfNV2Hib","email":"ann@example.org","name":"Ann Lovelace","created":1680000000,"balance":1234567,"currency":"usd","delinquent":false}]`)
	return s
}

// TestCheckFlows: each cross-service move of the issue is refused,
// naming the op that returned the value; same-service and allowed flows,
// and values the target already holds, pass; closed classes and short
// values are not recorded.
func TestCheckFlows(t *testing.T) {
	tests := []struct {
		name, service, args string
		allow               []api.Flow
		refused             string // the source op, "" for none
		arg, value          string
	}{
		{name: "dnsimple domain into github get_repo", service: "github", args: `{"owner":"attacker-org","repo":"shop-fake.co"}`,
			refused: "dnsimple.list_domains", arg: "repo", value: "shop-fake.co"},
		{name: "dnsimple domain into github owner, another case", service: "github", args: `{"owner":"Secret-Project-NET","repo":"x"}`,
			refused: "dnsimple.list_domains", arg: "owner", value: "secret-project.net"},
		{name: "github title into dnsimple check_domain", service: "dnsimple", args: `{"account":1385,"domain":"typo-in-readme.com"}`,
			refused: "github.list_issues", arg: "domain", value: "Typo in README"},
		{name: "github title into dnsimple name_like", service: "dnsimple", args: `{"account":1385,"name_like":"TypoInREADME"}`,
			refused: "github.list_issues", arg: "name_like", value: "Typo in README"},
		{name: "stripe email into hubspot", service: "hubspot", args: `{"after":"annexampleorg"}`,
			refused: "stripe.list_customers", arg: "after", value: "ann@example.org"},
		{name: "domain into stripe email", service: "stripe", args: `{"email":"x@shop-fake.co"}`,
			refused: "dnsimple.list_domains", arg: "email", value: "shop-fake.co"},
		{name: "a github login into dnsimple", service: "dnsimple", args: `{"account":1385,"name_like":"octocat"}`,
			refused: "github.list_issues", arg: "name_like", value: "octocat"},
		{name: "a long number inside text", service: "github", args: `{"body":"balance 1234567 today"}`,
			refused: "stripe.list_customers", arg: "body", value: "1234567"},
		{name: "a long number as an integer arg", service: "github", args: `{"page":9001002}`,
			refused: "dnsimple.list_domains", arg: "page", value: "9001002"},
		{name: "a long number as an integer arg written 9001002.0", service: "github", args: `{"page":9001002.0}`,
			refused: "dnsimple.list_domains", arg: "page", value: "9001002"},
		{name: "a long number as an integer arg written 9.001002e6", service: "github", args: `{"page":9.001002e6}`,
			refused: "dnsimple.list_domains", arg: "page", value: "9001002"},
		{name: "a long number as an integer arg written 900100200E-2", service: "github", args: `{"page":900100200E-2}`,
			refused: "dnsimple.list_domains", arg: "page", value: "9001002"},
		{name: "a github id into dnsimple's account, written 90210001.00", service: "dnsimple", args: `{"account":90210001.00}`,
			refused: "github.get_viewer", arg: "account", value: "90210001"},
		{name: "a number returned in an exponent form, sent plainly", service: "github", args: `{"page":7654321}`,
			refused: "stripe.list_charges", arg: "page", value: "7.654321e6"},
		{name: "a number class value that came as a string (HubSpot's properties)", service: "github", args: `{"page":2750000}`,
			refused: "hubspot.list_companies", arg: "page", value: "2750000"},
		{name: "nested and repeated members count", service: "github", args: `{"owner":"x","extra":{"a":["shop-fake.co"]}}`,
			refused: "dnsimple.list_domains", arg: "extra", value: "shop-fake.co"},
		{name: "same service: a repo then its issues", service: "github", args: `{"owner":"pinned-tester","repo":"notes"}`},
		{name: "same service: dnsimple domain back to dnsimple", service: "dnsimple", args: `{"account":1385,"zone":"shop-fake.co"}`},
		{name: "the honest Pages flow: a zone github returned a name within", service: "dnsimple", args: `{"account":1385,"zone":"hello-fake.io","name":"docs","type":"CNAME"}`},
		{name: "the target holds it: github returned docs.hello-fake.io", service: "github", args: `{"owner":"x","repo":"hello-fake.io"}`},
		{name: "allowed flow", service: "github", args: `{"owner":"attacker-org","repo":"shop-fake.co"}`,
			allow: []api.Flow{{From: "dnsimple", To: "github"}}},
		{name: "an allowed flow is one way", service: "dnsimple", args: `{"account":1385,"name_like":"TypoInREADME"}`,
			allow: []api.Flow{{From: "dnsimple", To: "github"}}, refused: "github.list_issues", arg: "name_like", value: "Typo in README"},
		{name: "short values are not recorded", service: "github", args: `{"owner":"a.io","repo":"main"}`},
		{name: "enum, boolean and time values are not recorded", service: "github", args: `{"title":"registered dnsimple-personal 2027-01-01T00:00:00Z usd"}`},
		{name: "a short integer is not recorded", service: "github", args: `{"page":1385}`},
		{name: "a long number next to other digits is another number", service: "github", args: `{"body":"id 91234567"}`},
		{name: "not JSON", service: "github", args: `{"owner":"shop-fake.co"`, refused: "dnsimple.list_domains", arg: "owner", value: "shop-fake.co"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := session(t, tt.allow...)
			refused, carried := s.Check(tt.service, json.RawMessage(tt.args))
			if tt.refused == "" {
				if refused != nil {
					t.Fatalf("refused: %+v", refused)
				}
				return
			}
			if refused == nil {
				t.Fatalf("not refused; carried %+v", carried)
			}
			if refused.Source.String() != tt.refused || refused.Arg != tt.arg || refused.Value != tt.value {
				t.Errorf("refused %+v (source %s), want source %s, arg %s, value %q", refused, refused.Source, tt.refused, tt.arg, tt.value)
			}
		})
	}
}

// TestProvenance: Check's carried list names every recorded value an
// arg holds and its source, same-service ones included (a write's
// confirmation shows them).
func TestProvenance(t *testing.T) {
	s := session(t)
	body := "Private DNSimple domains: shop-fake.co, SECRET-PROJECT.net; see https://github.com/pinned-tester/notes/issues/7"
	args, _ := json.Marshal(map[string]string{"owner": "pinned-tester", "repo": "notes", "title": "Typo in README", "body": body})
	refused, carried := s.Check("github", args)
	if refused == nil || refused.Source.String() != "dnsimple.list_domains" {
		t.Fatalf("refused %+v", refused)
	}
	var got []string
	for _, m := range carried {
		got = append(got, m.Arg+"="+m.Value+"<"+m.Source.String())
	}
	want := []string{"body=shop-fake.co<dnsimple.list_domains", "body=secret-project.net<dnsimple.list_domains",
		"body=https://github.com/pinned-tester/notes/issues/7<github.list_issues", "body=pinned-tester<github.get_viewer",
		"owner=pinned-tester<github.get_viewer", "title=Typo in README<github.list_issues"}
	for _, w := range want {
		if !strings.Contains(strings.Join(got, "\n"), w) {
			t.Errorf("carried lacks %s: %v", w, got)
		}
	}
}

// TestRecordBound: a session's record is bounded; a result that would
// pass the bound is refused whole (ErrFull) and records nothing.
func TestRecordBound(t *testing.T) {
	s := New(nil, 400)
	p := pickOf(t, "dnsimple", "list_domains")
	if err := s.Record("dnsimple", "list_domains", p, json.RawMessage(`[{"name":"first-domain.com"}]`)); err != nil {
		t.Fatal(err)
	}
	var big []map[string]string
	for i := range 20 {
		big = append(big, map[string]string{"name": strings.Repeat("x", 10) + string(rune('a'+i)) + ".com"})
	}
	data, _ := json.Marshal(big)
	if err := s.Record("dnsimple", "list_domains", p, data); !errors.Is(err, ErrFull) {
		t.Fatalf("Record = %v, want ErrFull", err)
	}
	if r, _ := s.Check("github", json.RawMessage(`{"repo":"xxxxxxxxxxa.com"}`)); r != nil {
		t.Errorf("a refused result was recorded in part: %+v", r)
	}
	if r, _ := s.Check("github", json.RawMessage(`{"repo":"first-domain.com"}`)); r == nil {
		t.Error("the first result was forgotten")
	}
}

// FuzzCheck: any result data and args are read without a panic, and a
// string returned in a recorded class, of MinLength letters or digits,
// is found again inside any arg that holds it, whatever surrounds it.
func FuzzCheck(f *testing.F) {
	f.Add(`[{"name":"shop-fake.co"}]`, "shop-fake.co", "x ", " y")
	f.Add(`{"name":"ＨＥＬＬＯ－ＦＡＫＥ"}`, "hello-fake", "", "")
	f.Add(`[`, "abcdefgh", "", "")
	pk := &registry.Pick{Fields: []string{"name"}, Classes: map[string]string{"name": registry.ClassText}}
	f.Fuzz(func(t *testing.T, data, value, before, after string) {
		s := New(nil, 0)
		_ = s.Record("a", "op", pk, json.RawMessage(data))
		args, _ := json.Marshal(map[string]string{"q": value})
		_, _ = s.Check("b", args)
		s2 := New(nil, 0)
		rec, _ := json.Marshal(map[string]string{"name": value})
		if err := s2.Record("a", "op", pk, rec); err != nil {
			t.Fatal(err)
		}
		args, _ = json.Marshal(map[string]string{"q": before + value + after})
		refused, _ := s2.Check("b", args)
		c := Canonical(value)
		// (NFKC may compose a value's first mark with the text before it.)
		held := strings.Contains(Canonical(before+value+after), c)
		if long := len([]rune(c)) >= MinLength; long && held && !allDigits(c) && refused == nil {
			t.Errorf("value %q (canonical %q) inside %q was not found", value, c, before+value+after)
		}
	})
}

// TestIntegerDigits: an integer's digits are the same however its JSON
// number is written, so a value cannot pass the check as 9001002.0 or
// 9.001002e6 (the host sends an integer arg as its value); a fraction
// and a number too long to write out have none.
func TestIntegerDigits(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "9001002", "9001002"},
		{"negative", "-9001002", "9001002"},
		{"a zero fraction", "9001002.000", "9001002"},
		{"an exponent", "9.001002e6", "9001002"},
		{"an upper-case exponent with a sign", "9.001002E+6", "9001002"},
		{"a negative exponent", "900100200e-2", "9001002"},
		{"zeros past the point", "9001e3", "9001000"},
		{"zero", "0", "0"},
		{"negative zero", "-0.0e5", "0"},
		{"a fraction", "9001002.5", ""},
		{"a small fraction", "5e-1", ""},
		{"too many digits", "1e65", ""},
		{"an exponent past int", "1e99999999999999999999", ""},
		{"an exponent past the bound", "0e-99999", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := integerDigits(tt.in); got != tt.want {
				t.Errorf("integerDigits(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
