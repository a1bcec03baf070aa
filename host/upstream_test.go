package host

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/host/internal/upstream"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/secret"
)

// Upstream answers the host maps to errors: each provider's error
// envelope, 401s through the fake's own credential checks, rate limits,
// GraphQL errors in a 200, and bodies that are empty or not JSON. Every
// case asserts the exact *Error and that the raw body does not come back.

// leakMarker sits in synthetic error bodies outside the message field; it
// must never show up in an Error.
const leakMarker = "RAW-BODY-MARKER-7f3a"

// answer returns a SetHandler hook answering every request with status,
// headers and body.
func answer(status int, body string, headers ...string) func(http.ResponseWriter, *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		if body != "" && w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
		return true
	}
}

// assertError checks an *Error exactly and that no raw body text leaked.
func assertError(t *testing.T, herr *Error, want Error) {
	t.Helper()
	if herr == nil {
		t.Fatalf("got success, want %s %d %q", want.Code, want.Status, want.Message)
	}
	if herr.Code != want.Code || herr.Status != want.Status || herr.RetryAfter != want.RetryAfter || herr.Message != want.Message {
		t.Errorf("got  code %s status %d retry %d message %q\nwant code %s status %d retry %d message %q",
			herr.Code, herr.Status, herr.RetryAfter, herr.Message, want.Code, want.Status, want.RetryAfter, want.Message)
	}
	assertCleanMessage(t, herr)
}

func assertCleanMessage(t *testing.T, herr *Error) {
	t.Helper()
	for _, s := range []string{herr.Message, herr.Error()} {
		if strings.Contains(s, leakMarker) {
			t.Errorf("raw body leaked into the error: %q", s)
		}
		for _, frag := range []string{`"message"`, `"errors"`, `"error"`, "{", "documentation_url", "correlationId", "<html"} {
			if strings.Contains(s, frag) {
				t.Errorf("error text holds body fragment %q: %q", frag, s)
			}
		}
	}
	if len(herr.Message) > api.MaxMessageBytes {
		t.Errorf("message is %d bytes, over %d", len(herr.Message), api.MaxMessageBytes)
	}
	if !utf8.ValidString(herr.Message) {
		t.Errorf("message is not valid UTF-8: %q", herr.Message)
	}
	for _, r := range herr.Message {
		if unicode.IsControl(r) {
			t.Errorf("message holds control character %U: %q", r, herr.Message)
		}
	}
}

func TestUpstreamErrors(t *testing.T) {
	t.Parallel()
	env := newEnv(t, nil)
	longMsg := strings.Repeat("x", 3000)
	longUTF8 := strings.Repeat("é", 2000)
	tests := []struct {
		name, service, op, args string
		hook                    func(http.ResponseWriter, *http.Request) bool // nil: the fake's own answer
		want                    Error
	}{
		// Each provider's own envelope, from the fake's native behavior.
		{name: "github 404 native", service: "github", op: "get_repo", args: `{"owner":"pinned-tester","repo":"no-such-repo"}`,
			want: Error{Code: api.CodeUpstreamError, Status: 404, Message: "Not Found"}},
		{name: "github 404 synthetic", service: "github", op: "get_viewer", args: `{}`,
			hook: answer(404, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest/`+leakMarker+`","status":"404"}`),
			want: Error{Code: api.CodeUpstreamError, Status: 404, Message: "Not Found"}},
		{name: "github 422 validation", service: "github", op: "create_issue", args: `{"owner":"pinned-tester","repo":"notes","title":" "}`,
			want: Error{Code: api.CodeUpstreamError, Status: 422, Message: "Validation Failed (code: missing_field; field: title; resource: Issue)"}},
		{name: "stripe 400 native uses error.message", service: "stripe", op: "list_charges", args: `{"starting_after":"ch_doesnotexist"}`,
			want: Error{Code: api.CodeUpstreamError, Status: 400, Message: "No such charge: 'ch_doesnotexist'"}},
		{name: "stripe 402 card error", service: "stripe", op: "create_customer", args: `{"email":"a@example.com"}`,
			hook: answer(402, `{"error":{"code":"card_declined","decline_code":"`+leakMarker+`","message":"Your card was declined.","type":"card_error"}}`),
			want: Error{Code: api.CodeUpstreamError, Status: 402, Message: "Your card was declined."}},
		{name: "stripe top-level message is not its error path", service: "stripe", op: "get_balance", args: `{}`,
			hook: answer(400, `{"message":"`+leakMarker+`"}`),
			want: Error{Code: api.CodeUpstreamError, Status: 400, Message: "Bad Request"}},
		{name: "hubspot 404 native", service: "hubspot", op: "get_contact", args: `{"contact_id":"99999999"}`,
			want: Error{Code: api.CodeUpstreamError, Status: 404, Message: "Object not found.  objectId are usually numeric."}},
		{name: "hubspot 404 synthetic envelope", service: "hubspot", op: "get_viewer", args: `{}`,
			hook: answer(404, `{"status":"error","message":"Resource not found","correlationId":"`+leakMarker+`","category":"OBJECT_NOT_FOUND"}`),
			want: Error{Code: api.CodeUpstreamError, Status: 404, Message: "Resource not found"}},
		{name: "hubspot 409 native conflict", service: "hubspot", op: "create_contact", args: `{"email":"$EMAIL"}`,
			want: Error{Code: api.CodeUpstreamError, Status: 409, Message: "Contact already exists. Existing ID: $ID"}},
		{name: "dnsimple 422 synthetic", service: "dnsimple", op: "register_domain", args: `{"account":1385,"domain":"pinned-four.com","registrant_id":1}`,
			hook: answer(422, `{"message":"Validation failed","errors":{"registrant_id":["is invalid"],"name":["can't be blank","is too short"]},"debug":"`+leakMarker+`"}`),
			want: Error{Code: api.CodeUpstreamError, Status: 422, Message: "Validation failed (name: can't be blank; name: is too short; registrant_id: is invalid)"}},
		{name: "dnsimple 400 native validation details", service: "dnsimple", op: "register_domain", args: `{"account":1385,"domain":"pinned-four.com","registrant_id":1}`,
			want: Error{Code: api.CodeUpstreamError, Status: 400, Message: "Validation failed (registrant_id: is invalid)"}},
		{name: "details capped with the message", service: "dnsimple", op: "get_viewer", args: `{}`,
			hook: answer(400, `{"message":"Validation failed","errors":{"name":["`+longMsg+`"]}}`),
			want: Error{Code: api.CodeUpstreamError, Status: 400, Message: "Validation failed (name: " + strings.Repeat("x", api.MaxMessageBytes-len("Validation failed (name: ")-len("…")) + "…"}},
		{name: "details that are not JSON text are left out", service: "dnsimple", op: "get_viewer", args: `{}`,
			hook: answer(400, `{"message":"Bad","errors":{"x":[1,{"y":null}]`),
			want: Error{Code: api.CodeUpstreamError, Status: 400, Message: "Bad"}},
		{name: "dnsimple 404 native", service: "dnsimple", op: "list_zone_records", args: `{"account":1385,"zone":"no-such-zone.com"}`,
			want: Error{Code: api.CodeUpstreamError, Status: 404, Message: "Zone `no-such-zone.com` not found"}},
		{name: "dnsimple 400 native", service: "dnsimple", op: "register_domain", args: `{"account":1385,"domain":"abc.com","registrant_id":2715}`,
			want: Error{Code: api.CodeUpstreamError, Status: 400, Message: "The domain `abc.com` is not available for registration"}},
		{name: "linear 400 errors array", service: "linear", op: "get_viewer", args: `{}`,
			hook: answer(400, `{"errors":[{"message":"Cannot query field","extensions":{"code":"GRAPHQL_VALIDATION_FAILED","x":"`+leakMarker+`"}},{"message":"second"}]}`),
			want: Error{Code: api.CodeUpstreamError, Status: 400, Message: "Cannot query field"}},

		// Bodies without a usable message fall back to the status text.
		{name: "non-JSON 500", service: "github", op: "get_viewer", args: `{}`,
			hook: answer(500, "<html><body>"+leakMarker+" stack trace</body></html>", "Content-Type", "text/html"),
			want: Error{Code: api.CodeUpstreamError, Status: 500, Message: "Internal Server Error"}},
		{name: "plain-text 503", service: "stripe", op: "get_balance", args: `{}`,
			hook: answer(503, leakMarker+" upstream connect error", "Content-Type", "text/plain"),
			want: Error{Code: api.CodeUpstreamError, Status: 503, Message: "Service Unavailable"}},
		{name: "empty 502", service: "hubspot", op: "get_viewer", args: `{}`,
			hook: answer(502, ""),
			want: Error{Code: api.CodeUpstreamError, Status: 502, Message: "Bad Gateway"}},
		{name: "status without a text", service: "dnsimple", op: "get_viewer", args: `{}`,
			hook: answer(599, `{"error":"`+leakMarker+`"}`),
			want: Error{Code: api.CodeUpstreamError, Status: 599, Message: "HTTP 599"}},
		{name: "message that is not a string", service: "github", op: "get_viewer", args: `{}`,
			hook: answer(400, `{"message":{"text":"`+leakMarker+`"}}`),
			want: Error{Code: api.CodeUpstreamError, Status: 400, Message: "Bad Request"}},
		{name: "blank message", service: "github", op: "get_viewer", args: `{}`,
			hook: answer(400, `{"message":"  \n\t "}`),
			want: Error{Code: api.CodeUpstreamError, Status: 400, Message: "Bad Request"}},

		// Capping and cleaning.
		{name: "message over 1 KiB is capped with an ellipsis", service: "github", op: "get_viewer", args: `{}`,
			hook: answer(400, `{"message":"`+longMsg+`","documentation_url":"`+leakMarker+`"}`),
			want: Error{Code: api.CodeUpstreamError, Status: 400, Message: strings.Repeat("x", api.MaxMessageBytes-len("…")) + "…"}},
		{name: "multi-byte message is cut on a rune boundary", service: "github", op: "get_viewer", args: `{}`,
			hook: answer(400, `{"message":"`+longUTF8+`"}`),
			want: Error{Code: api.CodeUpstreamError, Status: 400, Message: strings.Repeat("é", (api.MaxMessageBytes-len("…"))/2) + "…"}},
		{name: "message that fits is kept whole", service: "github", op: "get_viewer", args: `{}`,
			hook: answer(400, `{"message":"`+strings.Repeat("y", api.MaxMessageBytes-len("…"))+`"}`),
			want: Error{Code: api.CodeUpstreamError, Status: 400, Message: strings.Repeat("y", api.MaxMessageBytes-len("…"))}},
		{name: "control characters are stripped", service: "github", op: "get_viewer", args: `{}`,
			hook: answer(400, `{"message":"line1\nline2\r\n\ttab\u0000nul\u001b[31mred\u007fdel"}`),
			want: Error{Code: api.CodeUpstreamError, Status: 400, Message: "line1 line2   tab nul [31mred del"}},
		{name: "C1 control characters are stripped too", service: "github", op: "get_viewer", args: `{}`,
			hook: answer(400, `{"message":"a\u009b31mb\u0085c"}`),
			want: Error{Code: api.CodeUpstreamError, Status: 400, Message: "a 31mb c"}},
		{name: "bidi overrides and marks are stripped", service: "github", op: "get_viewer", args: `{}`,
			hook: answer(400, `{"message":"pay \u202egnp.exe\u202c to \u2066x\u2069\u200f."}`),
			want: Error{Code: api.CodeUpstreamError, Status: 400, Message: "pay  gnp.exe  to  x  ."}},
		// The error details are upstream text too, keys included: the
		// same display rule and the same credential redaction apply.
		{name: "details keys and values get the display rule", service: "dnsimple", op: "get_viewer", args: `{}`,
			hook: answer(400, `{"message":"Validation failed","errors":{"na\u202eme":["line1\nline2 \u200bx\u001b[2J"]}}`),
			want: Error{Code: api.CodeUpstreamError, Status: 400, Message: "Validation failed (na me: line1 line2  x [2J)"}},
		{name: "a details value echoing the credential is redacted", service: "dnsimple", op: "get_viewer", args: `{}`,
			hook: answer(400, `{"message":"Bad","errors":{"token":["`+fakeapi.Token(fakeapi.DNSimple)+`"]}}`),
			want: Error{Code: api.CodeUpstreamError, Status: 400, Message: "Bad (token: [redacted]"}},
		{name: "a details key echoing the credential is redacted", service: "dnsimple", op: "get_viewer", args: `{}`,
			hook: answer(400, `{"message":"Bad","errors":{"`+fakeapi.Token(fakeapi.DNSimple)+`":["is not valid"]}}`),
			want: Error{Code: api.CodeUpstreamError, Status: 400, Message: "Bad [redacted] is not valid)"}},
	}

	// A contact that exists, for the native 409.
	res, herr := env.run("hubspot", "list_contacts", `{"limit":1}`)
	if herr != nil {
		t.Fatal(herr)
	}
	var contacts []struct {
		ID         string `json:"id"`
		Properties struct {
			Email string `json:"email"`
		} `json:"properties"`
	}
	mustUnmarshal(t, res.Data, &contacts)
	fill := strings.NewReplacer("$EMAIL", contacts[0].Properties.Email, "$ID", contacts[0].ID).Replace

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.SetHandler(tt.hook)
			defer env.fake.SetHandler(nil)
			env.fake.Reset()
			res, herr := env.run(tt.service, tt.op, fill(tt.args))
			if herr == nil {
				t.Fatalf("got success %s", res.Data)
			}
			want := tt.want
			want.Message = fill(want.Message)
			assertError(t, herr, want)
			if n := len(env.fake.Requests()); n != 1 {
				t.Errorf("the fake received %d requests, want 1", n)
			}
			env.assertNoLeak(t, nil, herr, fakeapi.Token(tt.service))
		})
	}
}

// TestUpstreamUnauthorized: a wrong or revoked credential gets each
// provider's own 401 (the fake's native checks), mapped to
// upstream_error with the provider's message and no credential.
func TestUpstreamUnauthorized(t *testing.T) {
	t.Parallel()
	env := newEnv(t, nil)
	tests := []struct {
		name, service, op string
		kind              string
		secret            string
		revoke            bool // register secret, succeed once, revoke it, then run
		status            int
		msg               string
	}{
		{name: "github bad token", service: "github", op: "get_viewer", secret: "ghp_wrong_token_0000000000000000000000",
			status: 401, msg: "Bad credentials"},
		{name: "github revoked token", service: "github", op: "get_viewer", secret: "ghp_revoked_token_111111111111111111111", revoke: true,
			status: 401, msg: "Bad credentials"},
		{name: "github revoked oauth token", service: "github", op: "get_viewer", kind: "oauth", secret: "ghu_revoked_oauth_22222222222222222222", revoke: true,
			status: 401, msg: "Bad credentials"},
		{name: "dnsimple bad token", service: "dnsimple", op: "get_viewer", secret: "dnsimple_wrong_token_000000000000000",
			status: 401, msg: "Authentication failed"},
		{name: "dnsimple revoked token", service: "dnsimple", op: "list_domains", secret: "dnsimple_revoked_token_00000000000000", revoke: true,
			status: 401, msg: "Authentication failed"},
		{name: "stripe bad key (Stripe echoes a masked key: redacted)", service: "stripe", op: "get_viewer", secret: "sk_test_wrong_key_abcdefgh12345678",
			status: 401, msg: "Invalid API Key provided: [redacted]"},
		{name: "stripe revoked key", service: "stripe", op: "get_balance", secret: "sk_test_revoked_key_zyxwvuts98765432", revoke: true,
			status: 401, msg: "Invalid API Key provided: [redacted]"},
		{name: "stripe given a github token", service: "stripe", op: "get_viewer", secret: fakeapi.Token("github"),
			status: 401, msg: "Invalid API Key provided: [redacted]"},
		{name: "hubspot bad token", service: "hubspot", op: "get_viewer", secret: "pat-na1-wrong-token-0000000000000",
			status: 401, msg: "Authentication credentials not found. This API supports OAuth 2.0 authentication and you can find more details at https://developers.hubspot.com/docs/methods/auth/oauth-overview"},
		{name: "hubspot revoked oauth token", service: "hubspot", op: "list_contacts", kind: "oauth", secret: "hubspot-revoked-oauth-000000000000", revoke: true,
			status: 401, msg: "Authentication credentials not found. This API supports OAuth 2.0 authentication and you can find more details at https://developers.hubspot.com/docs/methods/auth/oauth-overview"},
		{name: "linear bad personal key", service: "linear", op: "get_viewer", secret: "lin_api_wrong_key_00000000000000000",
			status: 401, msg: "Authentication failed: invalid API key"},
		{name: "linear revoked personal key", service: "linear", op: "list_teams", secret: "lin_api_revoked_key_0000000000000000", revoke: true,
			status: 401, msg: "Authentication failed: invalid API key"},
		{name: "linear revoked oauth token", service: "linear", op: "get_viewer", kind: "oauth", secret: "lin_oauth_revoked_token_000000000000", revoke: true,
			status: 401, msg: "Authentication failed: invalid or expired OAuth access token"},
		{name: "linear personal key sent as oauth is Bearer and refused", service: "linear", op: "get_viewer", kind: "oauth", secret: fakeapi.Token("linear"),
			status: 400, msg: "It looks like you're trying to use an API key as a Bearer token. Remove the Bearer prefix from the Authorization header."},
		{name: "github token of another service", service: "github", op: "get_viewer", secret: fakeapi.Token("stripe"),
			status: 401, msg: "Bad credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cred := Credential{Kind: tt.kind, Secret: secret.Secret(tt.secret)}
			args := `{}`
			if tt.op == "list_domains" {
				args = `{"account":1385}`
			}
			if tt.revoke {
				if tt.kind == "oauth" {
					env.fake.AddOAuthToken(tt.service, tt.secret)
				} else {
					env.fake.AddToken(tt.service, tt.secret)
				}
				if _, herr := env.runWith(context.Background(), tt.service, tt.op, args, cred); herr != nil {
					t.Fatalf("before revoking: %v", herr)
				}
				env.fake.RevokeToken(tt.service, tt.secret)
			}
			env.fake.Reset()
			res, herr := env.runWith(context.Background(), tt.service, tt.op, args, cred)
			if herr == nil {
				t.Fatalf("got success %s", res.Data)
			}
			assertError(t, herr, Error{Code: api.CodeUpstreamError, Status: tt.status, Message: tt.msg})
			reqs := env.fake.Requests()
			if len(reqs) != 1 {
				t.Fatalf("the fake received %d requests, want 1", len(reqs))
			}
			wantAuth := "Bearer " + tt.secret
			if tt.service == "linear" && tt.kind != "oauth" {
				wantAuth = tt.secret
			}
			if got := reqs[0].Header.Get("Authorization"); got != wantAuth {
				t.Errorf("Authorization %q, want %q", got, wantAuth)
			}
			env.assertNoLeak(t, nil, herr, tt.secret)
			for i := 0; i+4 <= len(tt.secret); i++ {
				if w := tt.secret[i : i+4]; strings.Contains(herr.Message, w) && !strings.Contains(tt.msg, w) {
					t.Errorf("the message %q holds %q of the credential", herr.Message, w)
				}
			}
		})
	}
}

// TestUpstreamRateLimits: 429 with Retry-After (seconds or HTTP-date),
// GitHub's 403 secondary limit and exhausted quota, Linear's RATELIMITED
// GraphQL error; a plain 403 is not a rate limit.
func TestUpstreamRateLimits(t *testing.T) {
	t.Parallel()
	env := newEnv(t, nil)
	waitMsg := func(n int) string { return fmt.Sprintf("the provider asked to wait %d seconds", n) }
	tests := []struct {
		name, service, op, args string
		hook                    func() func(http.ResponseWriter, *http.Request) bool // built when the case runs
		code                    api.Code
		status                  int
		retryMin, retryMax      int
		msg                     string // for non-rate-limit answers
	}{
		{name: "429 Retry-After seconds", service: "github", op: "list_repos", args: `{}`,
			hook: func() func(http.ResponseWriter, *http.Request) bool {
				return answer(429, `{"message":"`+leakMarker+`"}`, "Retry-After", "7")
			},
			code: api.CodeRateLimited, status: 429, retryMin: 7, retryMax: 7},
		{name: "429 Retry-After HTTP-date", service: "stripe", op: "list_customers", args: `{}`,
			hook: func() func(http.ResponseWriter, *http.Request) bool {
				return answer(429, `{"error":{"message":"Too many requests"}}`, "Retry-After", time.Now().Add(30*time.Second).UTC().Format(http.TimeFormat))
			},
			code: api.CodeRateLimited, status: 429, retryMin: 28, retryMax: 31},
		{name: "429 Retry-After zero waits at least a second", service: "hubspot", op: "list_contacts", args: `{}`,
			hook: func() func(http.ResponseWriter, *http.Request) bool {
				return answer(429, `{"status":"error","message":"You have reached your ten_secondly_rolling limit.","category":"RATE_LIMITS"}`, "Retry-After", "0")
			},
			code: api.CodeRateLimited, status: 429, retryMin: 1, retryMax: 1},
		{name: "429 Retry-After is capped at a day", service: "dnsimple", op: "get_viewer", args: `{}`,
			hook: func() func(http.ResponseWriter, *http.Request) bool {
				return answer(429, `{"message":"slow down"}`, "Retry-After", "999999999")
			},
			code: api.CodeRateLimited, status: 429, retryMin: 86400, retryMax: 86400},
		{name: "429 without Retry-After defaults to 60", service: "hubspot", op: "get_viewer", args: `{}`,
			hook: func() func(http.ResponseWriter, *http.Request) bool {
				return answer(429, `{"status":"error","message":"rate"}`)
			},
			code: api.CodeRateLimited, status: 429, retryMin: 60, retryMax: 60},
		{name: "github 403 secondary limit with Retry-After", service: "github", op: "create_issue",
			args: `{"owner":"pinned-tester","repo":"notes","title":"t"}`,
			hook: func() func(http.ResponseWriter, *http.Request) bool {
				return answer(403, `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"`+leakMarker+`"}`,
					"Retry-After", "60")
			},
			code: api.CodeRateLimited, status: 403, retryMin: 60, retryMax: 60},
		{name: "github 403 quota exhausted, X-RateLimit-Reset in epoch seconds", service: "github", op: "get_viewer", args: `{}`,
			hook: func() func(http.ResponseWriter, *http.Request) bool {
				return answer(403, `{"message":"API rate limit exceeded for user ID 1."}`,
					"X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0", "X-RateLimit-Used", "5000",
					"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(120*time.Second).Unix(), 10))
			},
			code: api.CodeRateLimited, status: 403, retryMin: 118, retryMax: 121},
		{name: "github 429 quota exhausted, X-RateLimit-Reset in epoch seconds", service: "github", op: "get_viewer", args: `{}`,
			hook: func() func(http.ResponseWriter, *http.Request) bool {
				return answer(429, `{"message":"API rate limit exceeded"}`,
					"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(300*time.Second).Unix(), 10))
			},
			code: api.CodeRateLimited, status: 429, retryMin: 298, retryMax: 301},
		{name: "linear 400 RATELIMITED, X-RateLimit-Requests-Reset in epoch ms", service: "linear", op: "list_issues", args: `{}`,
			hook: func() func(http.ResponseWriter, *http.Request) bool {
				return answer(400, `{"errors":[{"message":"Rate limit exceeded","extensions":{"code":"RATELIMITED","type":"ratelimited"}}]}`,
					"X-RateLimit-Requests-Limit", "1500", "X-RateLimit-Requests-Remaining", "0",
					"X-RateLimit-Requests-Reset", strconv.FormatInt(time.Now().Add(45*time.Second).UnixMilli(), 10))
			},
			code: api.CodeRateLimited, status: 400, retryMin: 44, retryMax: 46},
		{name: "linear 200 RATELIMITED in a later error", service: "linear", op: "get_viewer", args: `{}`,
			hook: func() func(http.ResponseWriter, *http.Request) bool {
				return answer(200, `{"data":null,"errors":[{"message":"other"},{"message":"Rate limit exceeded","extensions":{"code":"RATELIMITED"}}]}`,
					"X-RateLimit-Requests-Reset", strconv.FormatInt(time.Now().Add(10*time.Second).UnixMilli(), 10))
			},
			code: api.CodeRateLimited, status: 200, retryMin: 9, retryMax: 11},
		{name: "plain 403 is not a rate limit", service: "github", op: "get_viewer", args: `{}`,
			hook: func() func(http.ResponseWriter, *http.Request) bool {
				return answer(403, `{"message":"Resource not accessible by personal access token","documentation_url":"`+leakMarker+`"}`)
			},
			code: api.CodeUpstreamError, status: 403, msg: "Resource not accessible by personal access token"},
		{name: "github 403 with quota left is not a rate limit", service: "github", op: "get_viewer", args: `{}`,
			hook: func() func(http.ResponseWriter, *http.Request) bool {
				return answer(403, `{"message":"Must have admin rights to Repository."}`,
					"X-RateLimit-Remaining", "4999", "X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
			},
			code: api.CodeUpstreamError, status: 403, msg: "Must have admin rights to Repository."},
		{name: "linear 400 other GraphQL error is not a rate limit", service: "linear", op: "get_viewer", args: `{}`,
			hook: func() func(http.ResponseWriter, *http.Request) bool {
				return answer(400, `{"errors":[{"message":"Rate limit exceeded? no","extensions":{"code":"INVALID_INPUT"}}]}`,
					"X-RateLimit-Requests-Reset", strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10))
			},
			code: api.CodeUpstreamError, status: 400, msg: "Rate limit exceeded? no"},
		{name: "RATELIMITED code on a non-GraphQL service is not a rate limit", service: "github", op: "get_viewer", args: `{}`,
			hook: func() func(http.ResponseWriter, *http.Request) bool {
				return answer(400, `{"message":"Bad","errors":[{"extensions":{"code":"RATELIMITED"}}]}`)
			},
			// GitHub's manifest names "errors" as its error_details path.
			code: api.CodeUpstreamError, status: 400, msg: "Bad (code: RATELIMITED)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.SetHandler(tt.hook())
			defer env.fake.SetHandler(nil)
			env.fake.Reset()
			res, herr := env.run(tt.service, tt.op, tt.args)
			if herr == nil {
				t.Fatalf("got success %s", res.Data)
			}
			if tt.code != api.CodeRateLimited {
				assertError(t, herr, Error{Code: tt.code, Status: tt.status, Message: tt.msg})
				return
			}
			if herr.Code != api.CodeRateLimited || herr.Status != tt.status || herr.RetryAfter < tt.retryMin || herr.RetryAfter > tt.retryMax {
				t.Errorf("got code %s status %d retry %d, want rate_limited status %d retry in [%d, %d]",
					herr.Code, herr.Status, herr.RetryAfter, tt.status, tt.retryMin, tt.retryMax)
			}
			if herr.Message != waitMsg(herr.RetryAfter) {
				t.Errorf("message %q, want %q", herr.Message, waitMsg(herr.RetryAfter))
			}
			assertCleanMessage(t, herr)
			if n := len(env.fake.Requests()); n != 1 {
				t.Errorf("the fake received %d requests, want 1 (no retry)", n)
			}
		})
	}
}

// TestUpstreamGraphQLErrors: a GraphQL service's 200 with a non-empty
// errors array is an error carrying the first error's message.
func TestUpstreamGraphQLErrors(t *testing.T) {
	t.Parallel()
	env := newEnv(t, nil)
	tests := []struct {
		name, service, op, args string
		hook                    func(http.ResponseWriter, *http.Request) bool
		want                    *Error // nil: success
		data                    string // on success
	}{
		{name: "linear get_issue of a missing issue (native)", service: "linear", op: "get_issue", args: `{"id":"ENG-99999"}`,
			want: &Error{Code: api.CodeUpstreamError, Status: 200, Message: "Entity not found: Issue"}},
		{name: "linear create_issue in a missing team (native)", service: "linear", op: "create_issue",
			args: `{"team_id":"00000000-0000-4000-8000-000000000000","title":"x"}`,
			want: &Error{Code: api.CodeUpstreamError, Status: 200, Message: "Entity not found: Team"}},
		{name: "first error's message", service: "linear", op: "list_teams", args: `{}`,
			hook: answer(200, `{"data":{"teams":{"nodes":[{"id":"`+leakMarker+`"}]}},"errors":[{"message":"first problem","path":["teams"]},{"message":"second problem"}]}`),
			want: &Error{Code: api.CodeUpstreamError, Status: 200, Message: "first problem"}},
		{name: "errors without a message", service: "linear", op: "get_viewer", args: `{}`,
			hook: answer(200, `{"data":null,"errors":[{"extensions":{"code":"`+leakMarker+`"}}]}`),
			want: &Error{Code: api.CodeUpstreamError, Status: 200, Message: "the provider answered with GraphQL errors"}},
		{name: "GraphQL error message is capped and cleaned", service: "linear", op: "get_viewer", args: `{}`,
			hook: answer(200, `{"errors":[{"message":"bad\u0007`+strings.Repeat("z", 2000)+`"}]}`),
			want: &Error{Code: api.CodeUpstreamError, Status: 200, Message: "bad " + strings.Repeat("z", api.MaxMessageBytes-len("…")-4) + "…"}},
		{name: "empty errors array is a success", service: "linear", op: "get_viewer", args: `{}`,
			hook: answer(200, `{"data":{"viewer":{"id":"u1","name":"N","secret":"`+leakMarker+`"}},"errors":[]}`),
			data: `{"id":"u1","name":"N"}`},
		{name: "errors in a 200 of a non-GraphQL service are data", service: "github", op: "get_viewer", args: `{}`,
			hook: answer(200, `{"login":"octo","errors":[{"message":"ignored"}]}`),
			data: `{"login":"octo"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.SetHandler(tt.hook)
			defer env.fake.SetHandler(nil)
			res, herr := env.run(tt.service, tt.op, tt.args)
			if tt.want == nil {
				if herr != nil {
					t.Fatalf("got %v, want success", herr)
				}
				if string(res.Data) != tt.data {
					t.Errorf("data %s, want %s", res.Data, tt.data)
				}
				return
			}
			assertError(t, herr, *tt.want)
		})
	}
}

// TestUpstreamBodies: an empty 2xx body is data null; a 2xx body that is
// not JSON is upstream_invalid and never echoed.
func TestUpstreamBodies(t *testing.T) {
	t.Parallel()
	env := newEnv(t, nil)
	t.Run("204 empty body is null data", func(t *testing.T) {
		env.fake.SetHandler(answer(http.StatusNoContent, ""))
		defer env.fake.SetHandler(nil)
		res, herr := env.run("github", "get_viewer", `{}`)
		if herr != nil {
			t.Fatal(herr)
		}
		if res.Status != 204 || string(res.Data) != "null" || res.RawBytes != 0 {
			t.Fatalf("got status %d data %s raw %d", res.Status, res.Data, res.RawBytes)
		}
	})
	t.Run("200 whitespace body is null data", func(t *testing.T) {
		env.fake.SetHandler(answer(200, " \r\n"))
		defer env.fake.SetHandler(nil)
		res, herr := env.run("stripe", "get_balance", `{}`)
		if herr != nil {
			t.Fatal(herr)
		}
		if res.Status != 200 || string(res.Data) != "null" {
			t.Fatalf("got status %d data %s", res.Status, res.Data)
		}
	})
	for _, body := range []string{
		"<html>" + leakMarker + "</html>",
		`{"login":"` + leakMarker + `"`,
		`{"login":"x"} trailing ` + leakMarker,
		leakMarker,
	} {
		t.Run("non-JSON 2xx "+strconv.Quote(body[:min(len(body), 12)]), func(t *testing.T) {
			env.fake.SetHandler(answer(200, body, "Content-Type", "text/html"))
			defer env.fake.SetHandler(nil)
			_, herr := env.run("github", "get_viewer", `{}`)
			assertError(t, herr, Error{Code: api.CodeUpstreamInvalid, Status: 200, Message: "the provider's answer is not valid JSON"})
		})
	}
	t.Run("201 non-JSON on a write", func(t *testing.T) {
		env.fake.SetHandler(answer(201, "created "+leakMarker, "Content-Type", "text/plain"))
		defer env.fake.SetHandler(nil)
		_, herr := env.run("hubspot", "create_contact", `{"email":"new.one@example.org"}`)
		assertError(t, herr, Error{Code: api.CodeUpstreamInvalid, Status: 201, Message: "the provider's answer is not valid JSON"})
	})
}

// TestUpstreamCodesPassThrough: an upstream failure reaches the caller
// under the code the exchange gave it, with every field as it was: the
// codes an exchange can end with are distinct codes of the host's
// vocabulary, so no failure reaches a caller under another's code.
func TestUpstreamCodesPassThrough(t *testing.T) {
	known := map[api.Code]bool{}
	for _, c := range api.Codes() {
		known[c] = true
	}
	seen := map[api.Code]bool{}
	for _, c := range upstream.Codes() {
		if !known[c] {
			t.Errorf("upstream code %q is not in api.Codes", c)
		}
		if seen[c] {
			t.Errorf("upstream code %q listed twice", c)
		}
		seen[c] = true
		f := &upstream.Failure{Code: c, Message: "m", Status: 429, RetryAfter: 7,
			Deny: api.DenyReason("d"), Applied: api.AppliedNo, Cause: fmt.Errorf("cause")}
		got := upstreamError(f)
		if got.Code != c || got.Message != "m" || got.Status != 429 || got.RetryAfter != 7 ||
			got.Deny != "d" || got.Applied != api.AppliedNo || got.Cause() != f.Cause {
			t.Errorf("upstreamError(%+v) = %+v", f, got)
		}
	}
	if len(seen) != 9 {
		t.Errorf("%d upstream codes, want the 9 an exchange can end with", len(seen))
	}
}
