package egress

import (
	"encoding/json"
	"testing"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/argrules"
	"github.com/elevenmessenger/pinned/internal/jsonv"
	"github.com/elevenmessenger/pinned/registry"
)

// Red team of request binding (issue 10; docs/SECURITY.md, rule 2b): the
// requests a compromised guest could send that differ in meaning from the
// one the caller's args render, each refused, and the ones the check lets
// through because they are truly the same request.

// rawVerdict runs a raw guest request through the host's checks in the
// order pin_v1.request applies them (decodeRequest, the policy, the
// binding): "" means it would be sent.
func rawVerdict(t *testing.T, service, opName, args, req string) api.DenyReason {
	t.Helper()
	m, _ := registry.Default().Service(service)
	op, ok := m.Op(opName)
	if !ok {
		t.Fatalf("no op %s.%s", service, opName)
	}
	eg, err := Prepare(m, op)
	if err != nil {
		t.Fatal(err)
	}
	b, pol := eg.Binding, eg.Policy
	want, rej := b.Bind([]byte(args))
	if rej != nil {
		t.Fatalf("args rejected: %+v", rej)
	}
	r, deny := DecodeRequest([]byte(req))
	if deny != "" {
		return deny
	}
	if deny := pol.Check(r); deny != "" {
		return deny
	}
	if !b.Check(want, r, pol.Host()) {
		return api.DenyNotBound
	}
	return ""
}

// TestBindRefusesRawRequests: raw requests, each against the args it must be
// bound to. want "" rows are the same request in another spelling the
// HTTP and JSON specs make equivalent (query and form pair order, JSON
// member order and white space, an escape of an ASCII letter, header name
// case); every other spelling is refused.
func TestBindRefusesRawRequests(t *testing.T) {
	gh := `["Accept","application/vnd.github+json"],["X-GitHub-Api-Version","2022-11-28"]`
	get := func(target, hs string) string {
		return `{"method":"GET","url":"https://api.github.com` + target + `","headers":[` + hs + `]}`
	}
	ci := func(body string) string {
		j, _ := json.Marshal(body)
		return `{"method":"POST","url":"https://api.github.com/repos/pinned-tester/notes/issues","headers":[` + gh + `],"body":` + string(j) + `}`
	}
	sc := func(body string) string {
		return `{"method":"POST","url":"https://api.stripe.com/v1/customers","headers":[],"body":"` + body + `"}`
	}
	dn := func(body string) string {
		j, _ := json.Marshal(body)
		return `{"method":"POST","url":"https://api.dnsimple.com/v2/1385/registrar/domains/member-wanted-two.com/registrations","headers":[["Accept","application/json"]],"body":` + string(j) + `}`
	}
	const (
		li      = `{"owner":"pinned-tester","repo":"notes","page":1,"per_page":5,"state":"open"}`
		liQuery = "/repos/pinned-tester/notes/issues?page=1&per_page=5&state=open"
		ciArgs  = `{"owner":"pinned-tester","repo":"notes","title":"Q3 ` + "\ufffd" + ` plan","body":"some text"}`
		ciBody  = `{"title":"Q3 ` + "\ufffd" + ` plan","body":"some text"}`
		scArgs  = `{"email":"a+b@example.org","name":"A B","description":"d"}`
		dnArgs  = `{"account":1385,"domain":"member-wanted-two.com","registrant_id":2715}`
	)
	for _, tt := range []struct {
		name, service, op, args, req string
		want                         api.DenyReason
	}{
		// Path: one canonical percent-encoding.
		{"path: an unreserved character encoded (%2D)", "github", "list_issues", li, get("/repos/pinned%2Dtester/notes/issues?page=1&per_page=5&state=open", gh), api.DenyNotBound},
		{"path: a letter encoded (%6F)", "github", "list_issues", li, get("/repos/pinned-tester/n%6Ftes/issues?page=1&per_page=5&state=open", gh), api.DenyNotBound},
		{"path: a trailing slash", "github", "list_issues", li, get("/repos/pinned-tester/notes/issues/?page=1&per_page=5&state=open", gh), api.DenyPath},
		{"path: a sub-delim (!) unencoded", "github", "list_issues", li, get("/repos/pinned-tester/notes!/issues?page=1&per_page=5&state=open", gh), api.DenyPath},
		{"path: % not followed by hex", "github", "list_issues", li, get("/repos/pinned-tester/notes%zz/issues?page=1&per_page=5&state=open", gh), api.DenyPathEncoding},
		// Query: declared keys, canonical values, each once, order free.
		{"query: the honest target", "github", "list_issues", li, get(liQuery, gh), ""},
		{"query: pairs in another order (the same request)", "github", "list_issues", li, get("/repos/pinned-tester/notes/issues?state=open&page=1&per_page=5", gh), ""},
		{"query: a value's letter encoded (%6Fpen)", "github", "list_issues", li, get("/repos/pinned-tester/notes/issues?page=1&per_page=5&state=%6Fpen", gh), api.DenyNotBound},
		{"query: an integer with a leading zero", "github", "list_issues", li, get("/repos/pinned-tester/notes/issues?page=01&per_page=5&state=open", gh), api.DenyNotBound},
		{"query: a trailing &", "github", "list_issues", li, get(liQuery+"&", gh), api.DenyQuerySyntax},
		{"query: a pair twice, same value", "github", "list_issues", li, get(liQuery+"&state=open", gh), api.DenyQueryDuplicate},
		{"query: a raw + (read as a space)", "stripe", "list_customers", `{"email":"a+b@example.org"}`, `{"method":"GET","url":"https://api.stripe.com/v1/customers?email=a+b%40example.org","headers":[]}`, api.DenyQuerySyntax},
		{"query: a default left out", "github", "list_issues", `{"owner":"pinned-tester","repo":"notes"}`, get("/repos/pinned-tester/notes/issues?state=open", gh), api.DenyNotBound},
		{"query: no query where defaults render one", "github", "list_issues", `{"owner":"pinned-tester","repo":"notes"}`, get("/repos/pinned-tester/notes/issues", gh), api.DenyNotBound},
		{"query: the defaults (the same request)", "github", "list_issues", `{"owner":"pinned-tester","repo":"notes"}`, get("/repos/pinned-tester/notes/issues?per_page=30&state=open", gh), ""},
		// Headers: each declared one once, exact value; name case free.
		{"headers: names in lower case (the same request)", "github", "list_issues", li, get(liQuery, `["accept","application/vnd.github+json"],["x-github-api-version","2022-11-28"]`), ""},
		{"headers: a value with a trailing space", "github", "list_issues", li, get(liQuery, `["Accept","application/vnd.github+json "],["X-GitHub-Api-Version","2022-11-28"]`), api.DenyNotBound},
		{"headers: a value with a trailing tab", "github", "list_issues", li, get(liQuery, `["Accept","application/vnd.github+json\t"],["X-GitHub-Api-Version","2022-11-28"]`), api.DenyNotBound},
		{"headers: obs-fold", "github", "list_issues", li, get(liQuery, `["Accept","application/vnd.github+json\r\n x"],["X-GitHub-Api-Version","2022-11-28"]`), api.DenyHeaderInvalid},
		{"headers: one twice in two cases", "github", "list_issues", li, get(liQuery, gh+`,["accept","application/vnd.github+json"]`), api.DenyHeaderDuplicate},
		{"headers: an undeclared User-Agent", "github", "list_issues", li, get(liQuery, gh+`,["User-Agent","x"]`), api.DenyNotBound},
		{"headers: an undeclared If-None-Match", "github", "list_issues", li, get(liQuery, gh+`,["If-None-Match","x"]`), api.DenyNotBound},
		// Form: exact pairs, order free, a space as "+".
		{"form: the honest body", "stripe", "create_customer", scArgs, sc("description=d&email=a%2Bb%40example.org&name=A+B"), ""},
		{"form: pairs in another order (the same request)", "stripe", "create_customer", scArgs, sc("email=a%2Bb%40example.org&name=A+B&description=d"), ""},
		{"form: lower-case hex", "stripe", "create_customer", scArgs, sc("description=d&email=a%2bb%40example.org&name=A+B"), api.DenyNotBound},
		{"form: %20 for a space", "stripe", "create_customer", scArgs, sc("description=d&email=a%2Bb%40example.org&name=A%20B"), api.DenyNotBound},
		{"form: + for the caller's +", "stripe", "create_customer", scArgs, sc("description=d&email=a+b%40example.org&name=A+B"), api.DenyNotBound},
		{"form: a pair twice", "stripe", "create_customer", scArgs, sc("description=d&email=a%2Bb%40example.org&name=A+B&name=A+B"), api.DenyBodyInvalid},
		{"form: a trailing &", "stripe", "create_customer", scArgs, sc("description=d&email=a%2Bb%40example.org&name=A+B&"), api.DenyBodyInvalid},
		// JSON body: structural, typed, and no escaped lone surrogate.
		{"json: the honest body", "github", "create_issue", ciArgs, ci(ciBody), ""},
		{"json: members reordered, white space, \\u0074 (the same request)", "github", "create_issue", ciArgs, ci(` { "body" : "some \u0074ext", "title":"Q3 ` + "\ufffd" + ` plan" } `), ""},
		{"json: U+FFFD written \\ufffd (the same request)", "github", "create_issue", ciArgs, ci(`{"title":"Q3 \ufffd plan","body":"some text"}`), ""},
		{"json: the caller's U+FFFD as a lone high surrogate", "github", "create_issue", ciArgs, ci(`{"title":"Q3 \ud800 plan","body":"some text"}`), api.DenyNotBound},
		{"json: the caller's U+FFFD as a lone low surrogate", "github", "create_issue", ciArgs, ci(`{"title":"Q3 \udfff plan","body":"some text"}`), api.DenyNotBound},
		{"json: a high surrogate before another high one", "github", "create_issue", ciArgs, ci(`{"title":"Q3 \ud800\ud800 plan","body":"some text"}`), api.DenyNotBound},
		{"json: a byte order mark", "github", "create_issue", ciArgs, ci("\ufeff" + ciBody), api.DenyBodyInvalid},
		{"json: data after the object", "github", "create_issue", ciArgs, ci(ciBody + "{}"), api.DenyBodyInvalid},
		{"json: a duplicate key spelt with an escape", "github", "create_issue", ciArgs, ci(`{"title":"Q3 ` + "\ufffd" + ` plan","body":"some text","titl\u0065":"x"}`), api.DenyBodyInvalid},
		{"json: a key differing in case", "github", "create_issue", ciArgs, ci(`{"title":"Q3 ` + "\ufffd" + ` plan","body":"some text","Title":"x"}`), api.DenyNotBound},
		{"json: an integer as 2715.0", "dnsimple", "register_domain", dnArgs, dn(`{"registrant_id":2715.0,"whois_privacy":false,"auto_renew":false}`), api.DenyNotBound},
		{"json: an integer as 2.715e3", "dnsimple", "register_domain", dnArgs, dn(`{"registrant_id":2.715e3,"whois_privacy":false,"auto_renew":false}`), api.DenyNotBound},
		{"json: an integer as 2715e0", "dnsimple", "register_domain", dnArgs, dn(`{"registrant_id":2715e0,"whois_privacy":false,"auto_renew":false}`), api.DenyNotBound},
		{"json: an integer as a string", "dnsimple", "register_domain", dnArgs, dn(`{"registrant_id":"2715","whois_privacy":false,"auto_renew":false}`), api.DenyNotBound},
		{"json: a default left out", "dnsimple", "register_domain", dnArgs, dn(`{"registrant_id":2715}`), api.DenyNotBound},
		{"json: a default as null", "dnsimple", "register_domain", dnArgs, dn(`{"registrant_id":2715,"whois_privacy":null,"auto_renew":false}`), api.DenyNotBound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := rawVerdict(t, tt.service, tt.op, tt.args, tt.req); got != tt.want {
				t.Fatalf("verdict %q, want %q", got, tt.want)
			}
		})
	}
}

// TestBindComparesNumberText: a number in a JSON body must be the exact text
// the host renders. Before the fix the check compared float64 values, so
// "-0" passed for an integer 0, 17 significant digits passed for 0.1 (a
// provider reading decimals sees another amount), and "1e2" or "100.0"
// passed for a manifest literal 100.
func TestBindComparesNumberText(t *testing.T) {
	intArg := []argrules.Value{{Set: true, Kind: jsonv.Number, I: 0, F: 0, IsInt: true}}
	numArg := []argrules.Value{{Set: true, Kind: jsonv.Number, F: 0.1}}
	exact := &bindNode{kind: jsonv.String, exact: 0}
	literal := &bindNode{kind: jsonv.Number, exact: -1, num: "100"}
	for _, tt := range []struct {
		name string
		n    *bindNode
		vals []argrules.Value
		body string
		want bool
	}{
		{"integer arg 0 as 0", exact, intArg, `0`, true},
		{"integer arg 0 as -0", exact, intArg, `-0`, false},
		{"integer arg 0 as 0.0", exact, intArg, `0.0`, false},
		{"integer arg 0 as 0e0", exact, intArg, `0e0`, false},
		{"number arg 0.1 as 0.1", exact, numArg, `0.1`, true},
		{"number arg 0.1 with 17 more digits", exact, numArg, `0.1000000000000000055511151231257827`, false},
		{"number arg 0.1 as 1e-1", exact, numArg, `1e-1`, false},
		{"number arg 0.1 as 0.10", exact, numArg, `0.10`, false},
		{"literal 100 as 100", literal, nil, `100`, true},
		{"literal 100 as 1e2", literal, nil, `1e2`, false},
		{"literal 100 as 100.0", literal, nil, `100.0`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, err := jsonv.Parse([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.n.equal(&v, tt.vals); got != tt.want {
				t.Fatalf("equal %v, want %v", got, tt.want)
			}
		})
	}
}

// TestBindLoneSurrogate: the scanner behind the lone-surrogate
// refusal, on the spellings a guest could try.
func TestBindLoneSurrogate(t *testing.T) {
	for _, tt := range []struct {
		body string
		want bool
	}{
		{`{"a":"x"}`, false},
		{`{"a":"\ufffd"}`, false},
		{`{"a":"\ud83d\ude00"}`, false}, // a pair: U+1F600
		{`{"a":"\uD83D\uDE00"}`, false},
		{`{"a":"\\ud800"}`, false}, // an escaped backslash, then text
		{`{"a":"\ud800"}`, true},
		{`{"a":"\udc00"}`, true},
		{`{"a":"\ude00\ud83d"}`, true}, // a pair in the wrong order
		{`{"a":"\ud83d"}`, true},
		{`{"a":"\ud83dx\ude00"}`, true},
		{`{"a":"\ud83d\u0041"}`, true},
		{`{"a":"\\\ud800"}`, true},
	} {
		if got := loneSurrogate([]byte(tt.body)); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.body, got, tt.want)
		}
	}
}

// TestBindArrays: a guest that adds, drops, moves or respells a value of
// an array arg is refused: in a query with the key repeated per value
// (Google Calendar's eventTypes), in one joined value (GitHub's labels),
// and in a JSON body (GitHub's create_issue labels and assignees). Pairs
// of other keys stay free in order.
func TestBindArrays(t *testing.T) {
	gh := `["Accept","application/vnd.github+json"],["X-GitHub-Api-Version","2022-11-28"]`
	cal := func(q string) string {
		return `{"method":"GET","url":"https://www.googleapis.com/calendar/v3/calendars/primary/events?` + q + `","headers":[]}`
	}
	iss := func(q string) string {
		return `{"method":"GET","url":"https://api.github.com/repos/octo/notes/issues?` + q + `","headers":[` + gh + `]}`
	}
	ci := func(body string) string {
		j, _ := json.Marshal(body)
		return `{"method":"POST","url":"https://api.github.com/repos/octo/notes/issues","headers":[` + gh + `],"body":` + string(j) + `}`
	}
	const (
		calArgs = `{"calendar_id":"primary","event_types":["focusTime","default"]}`
		calRest = "maxResults=50&orderBy=startTime&singleEvents=true"
		issArgs = `{"owner":"octo","repo":"notes","labels":["bug","good first issue"]}`
		issRest = "per_page=30&state=open"
		ciArgs  = `{"owner":"octo","repo":"notes","title":"T","labels":["bug","ui"],"assignees":["carol"]}`
	)
	for _, tt := range []struct {
		name, service, op, args, req string
		want                         api.DenyReason
	}{
		{"repeated key: the honest request", "googlecalendar", "list_events", calArgs, cal("eventTypes=focusTime&eventTypes=default&" + calRest), ""},
		{"repeated key: other keys moved (the same request)", "googlecalendar", "list_events", calArgs, cal("maxResults=50&eventTypes=focusTime&orderBy=startTime&eventTypes=default&singleEvents=true"), ""},
		{"repeated key: values swapped", "googlecalendar", "list_events", calArgs, cal("eventTypes=default&eventTypes=focusTime&" + calRest), api.DenyNotBound},
		{"repeated key: a value added", "googlecalendar", "list_events", calArgs, cal("eventTypes=focusTime&eventTypes=default&eventTypes=outOfOffice&" + calRest), api.DenyNotBound},
		{"repeated key: a value twice", "googlecalendar", "list_events", calArgs, cal("eventTypes=focusTime&eventTypes=default&eventTypes=default&" + calRest), api.DenyNotBound},
		{"repeated key: a value dropped", "googlecalendar", "list_events", calArgs, cal("eventTypes=focusTime&" + calRest), api.DenyNotBound},
		{"repeated key: joined instead", "googlecalendar", "list_events", calArgs, cal("eventTypes=focusTime%2Cdefault&" + calRest), api.DenyNotBound},
		{"repeated key: another key twice", "googlecalendar", "list_events", calArgs, cal("eventTypes=focusTime&eventTypes=default&" + calRest + "&orderBy=startTime"), api.DenyQueryDuplicate},
		{"repeated key: sent for an empty array", "googlecalendar", "list_events", `{"calendar_id":"primary","event_types":[]}`, cal("eventTypes=&" + calRest), api.DenyNotBound},
		{"repeated key: none for an empty array", "googlecalendar", "list_events", `{"calendar_id":"primary","event_types":[]}`, cal(calRest), ""},
		{"joined: the honest request", "github", "list_issues", issArgs, iss("labels=bug%2Cgood%20first%20issue&" + issRest), ""},
		{"joined: values swapped", "github", "list_issues", issArgs, iss("labels=good%20first%20issue%2Cbug&" + issRest), api.DenyNotBound},
		{"joined: a value added", "github", "list_issues", issArgs, iss("labels=bug%2Cgood%20first%20issue%2Cwontfix&" + issRest), api.DenyNotBound},
		{"joined: a value dropped", "github", "list_issues", issArgs, iss("labels=bug&" + issRest), api.DenyNotBound},
		{"joined: the key repeated instead", "github", "list_issues", issArgs, iss("labels=bug&labels=good%20first%20issue&" + issRest), api.DenyQueryDuplicate},
		{"joined: a raw comma", "github", "list_issues", issArgs, iss("labels=bug,good%20first%20issue&" + issRest), api.DenyQuerySyntax},
		{"joined: lower-case hex", "github", "list_issues", issArgs, iss("labels=bug%2cgood%20first%20issue&" + issRest), api.DenyNotBound},
		{"json: the honest body", "github", "create_issue", ciArgs, ci(`{"title":"T","labels":["bug","ui"],"assignees":["carol"]}`), ""},
		{"json: members moved (the same request)", "github", "create_issue", ciArgs, ci(`{"assignees":["carol"],"labels":["bug","ui"],"title":"T"}`), ""},
		{"json: values swapped", "github", "create_issue", ciArgs, ci(`{"title":"T","labels":["ui","bug"],"assignees":["carol"]}`), api.DenyNotBound},
		{"json: a value added", "github", "create_issue", ciArgs, ci(`{"title":"T","labels":["bug","ui","admin"],"assignees":["carol"]}`), api.DenyNotBound},
		{"json: a value dropped", "github", "create_issue", ciArgs, ci(`{"title":"T","labels":["bug"],"assignees":["carol"]}`), api.DenyNotBound},
		{"json: an assignee added", "github", "create_issue", ciArgs, ci(`{"title":"T","labels":["bug","ui"],"assignees":["carol","mallory"]}`), api.DenyNotBound},
		{"json: the array as a string", "github", "create_issue", ciArgs, ci(`{"title":"T","labels":"bug,ui","assignees":["carol"]}`), api.DenyNotBound},
		{"json: a value nested", "github", "create_issue", ciArgs, ci(`{"title":"T","labels":[["bug"],"ui"],"assignees":["carol"]}`), api.DenyNotBound},
		{"json: a value as an object", "github", "create_issue", ciArgs, ci(`{"title":"T","labels":[{"name":"bug"},"ui"],"assignees":["carol"]}`), api.DenyNotBound},
		{"json: an absent array sent empty", "github", "create_issue", `{"owner":"octo","repo":"notes","title":"T"}`, ci(`{"title":"T","labels":[],"assignees":[]}`), api.DenyNotBound},
		{"json: an empty array left out", "github", "create_issue", `{"owner":"octo","repo":"notes","title":"T","labels":[]}`, ci(`{"title":"T"}`), api.DenyNotBound},
		{"json: an empty array", "github", "create_issue", `{"owner":"octo","repo":"notes","title":"T","labels":[]}`, ci(`{"title":"T","labels":[]}`), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := rawVerdict(t, tt.service, tt.op, tt.args, tt.req); got != tt.want {
				t.Fatalf("verdict %q, want %q", got, tt.want)
			}
		})
	}
}
