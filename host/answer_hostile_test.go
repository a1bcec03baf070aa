package host

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/host/internal/upstream"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/secret"
)

// TestHostileAnswers: a hostile provider's answers to honest requests
// (the attack of issue 21). Each row asserts the exact refusal or
// withholding, that nothing comes back but the error, that the one honest
// request was the only one sent, and that the op's token is in no result,
// error, log line or metric.
func TestHostileAnswers(t *testing.T) {
	t.Parallel()
	env := newEnv(t, nil)
	gh, lin := fakeapi.Token(fakeapi.GitHub), fakeapi.Token(fakeapi.Linear)
	// every8 escapes every 8th byte of s, as the attack did.
	every8 := func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if i%8 == 7 {
				fmt.Fprintf(&b, `\u%04x`, s[i])
			} else {
				b.WriteByte(s[i])
			}
		}
		return b.String()
	}
	pieces := func(s, sep string) string {
		var parts []string
		for i := 0; i < len(s); i += 7 {
			parts = append(parts, s[i:min(i+7, len(s))])
		}
		return strings.Join(parts, sep)
	}
	const (
		getViewer   = "github.get_viewer"
		listRepos   = "github.list_repos"
		createIssue = "github.create_issue"
		linViewer   = "linear.get_viewer"
		linCreate   = "linear.create_issue"
	)
	args := map[string]string{
		getViewer: `{}`, listRepos: `{}`, createIssue: `{"owner":"octo","repo":"hello","title":"t"}`,
		linViewer: `{}`, linCreate: `{"team_id":"00000000-0000-4000-8000-000000000000","title":"x"}`,
	}
	tests := []struct {
		name, op string
		hook     func(http.ResponseWriter, *http.Request) bool
		want     Error
	}{
		// 1. A credential echoed in a picked field is withheld.
		{name: "token as the login", op: getViewer, hook: answer(200, `{"login":"`+gh+`","id":1}`),
			want: Error{Code: api.CodeCredentialEcho, Status: 200}},
		{name: "token as Linear's viewer name", op: linViewer, hook: answer(200, `{"data":{"viewer":{"id":"u1","name":"`+lin+`"}}}`),
			want: Error{Code: api.CodeCredentialEcho, Status: 200}},
		{name: "token JSON-escaped", op: getViewer, hook: answer(200, `{"login":"ghp\u005f`+gh[4:]+`","id":1}`),
			want: Error{Code: api.CodeCredentialEcho, Status: 200}},
		{name: "token every 8th byte escaped", op: getViewer, hook: answer(200, `{"login":"pinned-tester","id":1,"name":"`+every8(gh)+`"}`),
			want: Error{Code: api.CodeCredentialEcho, Status: 200}},
		{name: "token in pieces joined by spaces", op: getViewer, hook: answer(200, `{"login":"x","name":"`+pieces(gh, " ")+`"}`),
			want: Error{Code: api.CodeCredentialEcho, Status: 200}},
		{name: "token in pieces joined by U+200B", op: getViewer, hook: answer(200, `{"login":"x","name":"`+pieces(gh, `\u200b`)+`"}`),
			want: Error{Code: api.CodeCredentialEcho, Status: 200}},
		{name: "token split across two picked fields", op: getViewer, hook: answer(200, `{"login":"`+gh[:20]+`","id":7,"name":"`+gh[20:]+`"}`),
			want: Error{Code: api.CodeCredentialEcho, Status: 200}},
		{name: "token echoed by a write", op: createIssue, hook: answer(201, `{"number":1,"title":"`+gh+`"}`),
			want: Error{Code: api.CodeCredentialEcho, Status: 201, Applied: api.AppliedYes}},
		// 2. A huge number before the token: refused, whatever reads it.
		{name: "1e400 before an escaped token", op: getViewer, hook: answer(200, `{"login":"pinned-tester","id":1e400,"name":"`+every8(gh)+`"}`),
			want: Error{Code: api.CodeUpstreamInvalid, Status: 200, Message: "the provider's answer holds what JSON readers disagree on: number out of range in a kept value"}},
		{name: "a 400-digit integer before the token", op: getViewer, hook: answer(200, `{"login":"pinned-tester","id":`+strings.Repeat("9", 400)+`,"name":"`+gh+`"}`),
			want: Error{Code: api.CodeUpstreamInvalid, Status: 200, Message: "the provider's answer holds what JSON readers disagree on: number of more than 64 characters in a kept value"}},
		// 3. An error message with the token in short pieces.
		{name: "401 with the token in pieces", op: getViewer, hook: answer(401, `{"message":"token `+pieces(gh, " ")+`"}`),
			want: Error{Code: api.CodeUpstreamError, Status: 401, Message: "token [redacted] [redacted] [redacted] [redacted] [redacted] [redacted]"}},
		{name: "401 with the token in pieces joined by U+200B", op: getViewer, hook: answer(401, `{"message":"token `+pieces(gh, `\u200b`)+`"}`),
			want: Error{Code: api.CodeUpstreamError, Status: 401, Message: "token [redacted] [redacted] [redacted] [redacted] [redacted] [redacted]"}},
		// 4. What readers disagree on, inside a picked field.
		{name: "duplicate keys inside a picked value", op: createIssue, hook: answer(201, `{"number":1,"title":{"a":1,"a":2}}`),
			want: Error{Code: api.CodeUpstreamInvalid, Status: 201, Applied: api.AppliedYes, Message: "the provider's answer holds what JSON readers disagree on: a key twice in one object of a kept value"}},
		{name: "an escaped lone surrogate", op: getViewer, hook: answer(200, `{"login":"\ud800"}`),
			want: Error{Code: api.CodeUpstreamInvalid, Status: 200, Message: "the provider's answer holds what JSON readers disagree on: escaped lone surrogate in a kept value"}},
		{name: "1e400", op: getViewer, hook: answer(200, `{"login":"a","id":1e400}`),
			want: Error{Code: api.CodeUpstreamInvalid, Status: 200, Message: "the provider's answer holds what JSON readers disagree on: number out of range in a kept value"}},
		{name: "a 5000-digit integer", op: getViewer, hook: answer(200, `{"login":"a","id":`+strings.Repeat("1", 5000)+`}`),
			want: Error{Code: api.CodeUpstreamInvalid, Status: 200, Message: "the provider's answer holds what JSON readers disagree on: number of more than 64 characters in a kept value"}},
		// 5. GraphQL errors twice: first-wins read it as a success.
		{name: "GraphQL errors twice", op: linCreate, hook: answer(200, `{"errors":[],"errors":[{"message":"mutation failed"}],"data":{"issueCreate":{"success":true}}}`),
			want: Error{Code: api.CodeUpstreamInvalid, Status: 200, Applied: api.AppliedMaybe, Message: `the provider's answer has "errors" twice, so whether it failed cannot be told`}},
		// 6. Misclassified outcomes.
		{name: "a list answered 200 with the error envelope", op: listRepos, hook: answer(200, `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`),
			want: Error{Code: api.CodeUpstreamError, Status: 200, Message: "Bad credentials"}},
		{name: "a write answered 201 with the error envelope", op: createIssue, hook: answer(201, `{"message":"Validation Failed"}`),
			want: Error{Code: api.CodeUpstreamError, Status: 201, Applied: api.AppliedMaybe, Message: "Validation Failed"}},
		{name: "headers over 64 KiB", op: getViewer, hook: answer(200, `{"login":"a"}`, "X-Big", strings.Repeat("a", 70<<10)),
			want: Error{Code: api.CodeUpstreamTooLarge, Message: "the provider's response headers are over the host's 64 KiB limit or cannot be decoded"}},
		{name: "headers over 64 KiB in many small ones", op: getViewer, hook: func(w http.ResponseWriter, r *http.Request) bool {
			for i := range 200 {
				w.Header().Set(fmt.Sprintf("X-H%d", i), strings.Repeat("b", 400))
			}
			return answer(200, `{"login":"a"}`)(w, r)
			// Past the list size the host advertised: a protocol error.
		}, want: Error{Code: api.CodeUpstreamInvalid, Message: "the provider broke the HTTP/2 protocol in its answer"}},
		{name: "an aborted HTTP/2 stream", op: getViewer, hook: func(w http.ResponseWriter, r *http.Request) bool {
			panic(http.ErrAbortHandler)
		}, want: Error{Code: api.CodeUpstreamInvalid, Message: "the provider aborted its answer (it reset the HTTP/2 stream)"}},
		{name: "a write's HTTP/2 stream aborted after its headers", op: createIssue, hook: func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			_, _ = w.Write([]byte(`{"number":`))
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}, want: Error{Code: api.CodeUpstreamInvalid, Status: 201, Applied: api.AppliedYes, Message: "the provider aborted its answer (it reset the HTTP/2 stream)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var requests atomic.Int32
			env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
				requests.Add(1)
				return tt.hook(w, r)
			})
			defer env.fake.SetHandler(nil)
			service, op, _ := strings.Cut(tt.op, ".")
			res, herr := env.run(service, op, args[tt.op])
			if res != nil {
				t.Fatalf("got a result %s, want %s", res.Data, tt.want.Code)
			}
			if herr == nil || herr.Code != tt.want.Code || herr.Status != tt.want.Status || herr.Applied != tt.want.Applied {
				t.Fatalf("got %v, want %s (HTTP %d, applied %q)", herr, tt.want.Code, tt.want.Status, tt.want.Applied)
			}
			if tt.want.Message != "" && herr.Message != tt.want.Message {
				t.Errorf("message %q, want %q", herr.Message, tt.want.Message)
			}
			if n := requests.Load(); n != 1 {
				t.Errorf("%d requests reached the provider, want the 1 honest one", n)
			}
			env.assertNoLeak(t, res, herr, gh, lin)
			for _, s := range []string{gh, lin} {
				if upstream.EchoesText(herr.Message, s) {
					t.Errorf("the message %q holds a piece of the token", herr.Message)
				}
			}
		})
	}
}

// TestEchoPropertyNeverReturned is the property of docs/SECURITY.md rule
// 3 through the real engine: a provider answers get_viewer with the op's
// token in its picked string fields, in pieces in document order, every
// byte escaped or not at random, with numbers (huge ones too) and
// unpicked members before and between the pieces. Whatever the spelling,
// the op fails (credential_echo, or upstream_invalid for what readers
// disagree on), and no result, error, log line or metric carries the
// token in any spelling it was sent in.
func TestEchoPropertyNeverReturned(t *testing.T) {
	t.Parallel()
	env := newEnv(t, nil)
	tok := fakeapi.Token(fakeapi.GitHub)
	rng := rand.New(rand.NewPCG(21, 2026))
	stringFields := []string{"login", "name", "email", "html_url", "type", "company", "created_at"}
	numbers := []string{"1", "-0.0", "1e400", strings.Repeat("9", 400), "1.5e300", "12345678901234567890"}
	const cases = 300
	for i := range cases {
		var body strings.Builder
		var spellings []string
		body.WriteString(`{`)
		pieces := 1 + rng.IntN(len(stringFields))
		cuts := rng.Perm(len(tok) - 1)[:pieces-1]
		slices.Sort(cuts)
		fields := rng.Perm(len(stringFields))[:pieces]
		slices.Sort(fields) // any fields, in document order
		prev := 0
		for p := range pieces {
			end := len(tok)
			if p < len(cuts) {
				end = cuts[p] + 1
			}
			if rng.IntN(2) == 0 {
				fmt.Fprintf(&body, `"unpicked%d":%s,`, p, numbers[rng.IntN(len(numbers))])
			}
			if p == 0 || rng.IntN(2) == 0 {
				fmt.Fprintf(&body, `"id":%s,`, numbers[rng.IntN(len(numbers))])
			}
			var spelt strings.Builder
			for _, c := range []byte(tok[prev:end]) {
				if rng.IntN(3) == 0 {
					fmt.Fprintf(&spelt, `\u%04x`, c)
				} else {
					spelt.WriteByte(c)
				}
			}
			if end-prev >= 8 { // shorter pieces occur in any text
				spellings = append(spellings, spelt.String())
			}
			fmt.Fprintf(&body, `"%s":"%s",`, stringFields[fields[p]], spelt.String())
			prev = end
		}
		body.WriteString(`"z":null}`)
		env.fake.SetHandler(answer(200, body.String()))
		res, herr := env.run("github", "get_viewer", `{}`)
		env.fake.SetHandler(nil)
		if res != nil {
			t.Fatalf("case %d: %s came back as %s", i, body.String(), res.Data)
		}
		if herr.Code != api.CodeCredentialEcho && herr.Code != api.CodeUpstreamInvalid {
			t.Fatalf("case %d: %s: %v", i, body.String(), herr)
		}
		env.assertNoLeak(t, res, herr, append(spellings, tok)...)
	}
}

// TestEchoSplitAcrossPagesWithheld: a provider that cuts the token across
// two pages of a paged call (each page holding under 16 characters of
// it) gets the merged result withheld; the same call with one page
// returns that page.
func TestEchoSplitAcrossPagesWithheld(t *testing.T) {
	env := newEnv(t, nil)
	tok := fakeapi.Token(fakeapi.GitHub)
	env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Query().Get("page") == "" {
			githubPage(w, []string{"a/one", tok[:14]}, `<https://api.github.com/user/repos?per_page=5&page=2>; rel="next"`)
		} else {
			githubPage(w, []string{tok[14:28], "a/two"}, "")
		}
		return true
	})
	call := Call{Service: fakeapi.GitHub, Op: "list_repos", Args: json.RawMessage(`{"per_page":5}`),
		Credential: Credential{Secret: secret.Secret(tok)}}
	if res, err := env.eng.Run(context.Background(), call); err != nil || !strings.Contains(string(res.Data), tok[:14]) {
		t.Fatalf("one page: %v %v", res, err)
	}
	call.Pages = 2
	res, err := env.eng.Run(context.Background(), call)
	if res != nil || err == nil || err.(*Error).Code != api.CodeCredentialEcho {
		t.Fatalf("two pages: %v, %v; want credential_echo", res, err)
	}
	if n := len(env.fake.Requests()); n != 3 {
		t.Errorf("%d requests, want 3 (one page, then two)", n)
	}
}
