package sandbox

import (
	"net/textproto"
	"net/url"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/guest/executor"
	"github.com/elevenmessenger/pinned/host/internal/egress"
	"github.com/elevenmessenger/pinned/internal/abi"
	"github.com/elevenmessenger/pinned/registry"
)

// fuzzOp is one op of the embedded registry, prepared as the host does.
type fuzzOp struct {
	m      *registry.Manifest
	op     *registry.Op
	policy *egress.Policy
	bind   *egress.Binding
	prefix []byte
}

func allOps(t testing.TB) []fuzzOp {
	t.Helper()
	var ops []fuzzOp
	for _, m := range registry.Default().Services() {
		for _, name := range m.OpNames() {
			op, _ := m.Op(name)
			eg, err := egress.Prepare(m, op)
			if err != nil {
				t.Fatal(err)
			}
			ops = append(ops, fuzzOp{m, op, eg.Policy, eg.Binding, eg.Prefix})
		}
	}
	return ops
}

// FuzzRender drives the executor (natively: the same code the guest runs)
// with arbitrary args for every op of every manifest: it never panics;
// args the host's own binding (bind.go: the arg rules, then its
// independent rendering of the manifest's templates) accepts, the
// executor accepts too, and the request it renders passes the host's
// decoding, egress policy and binding check; args the binding rejects for
// any reason but a pattern, the executor rejects with the same reason and
// arg. Only the host matches patterns (argrules.GuestPatterns): args off
// a pattern never reach a guest, so what the executor makes of them is
// only required to be a valid reject or a request. The guest and the
// host agree, so an honest guest is never refused and a refusal always
// means a dishonest one.
func FuzzRender(f *testing.F) {
	ops := allOps(f)
	seeds := []string{
		`{}`, `{"per_page":100}`, `{"owner":"pinned-tester","repo":"notes","title":"t","body":"b"}`,
		`{"account":1385,"domain":"blip.com","registrant_id":2715}`, `{"email":"a b@c.d","name":"x&y=z"}`,
		`{"owner":"a","repo":"..."}`, `{"first":5,"team":"ENG"}`, `{"contact_id":"42"}`, `{"limit":"5"}`, `[`,
		`{"owner":"a","repo":"b","title":"t","labels":["bug","a b"],"assignees":[]}`, `{"owner":"a","repo":"b","labels":["x,y"]}`,
		`{"calendar_id":"primary","event_types":["default","focusTime"]}`, `{"calendar_id":"primary","event_types":[1]}`,
	}
	for i := range ops {
		for _, s := range seeds {
			f.Add(uint16(i), s)
		}
	}
	f.Fuzz(func(t *testing.T, idx uint16, args string) {
		o := ops[int(idx)%len(ops)]
		input := append(append([]byte(nil), o.prefix...), args...)
		req, rej, err := executor.Render(input)
		if err != nil {
			t.Fatalf("%s.%s: the host's input was refused: %v", o.m.ID, o.op.Method, err)
		}
		want, hrej := o.bind.Bind([]byte(args))
		hostOnly := hrej != nil && hrej.Reason == abi.RejectPattern
		if !hostOnly && ((rej == nil) != (hrej == nil) || (rej != nil && *rej != *hrej)) {
			t.Fatalf("%s %s %s: the executor says %+v, the host's binding says %+v", o.m.ID, o.op.Path, args, rej, hrej)
		}
		if hostOnly && rej == nil {
			return // the host refused these args before any guest could see them
		}
		if rej != nil {
			if rej.Reason < abi.RejectSyntax || rej.Reason > abi.RejectValue || len(rej.Arg) > abi.MaxNameBytes || !printableName(rej.Arg) {
				t.Fatalf("reject the host would refuse: %+v", rej)
			}
			if rej.Reason != abi.RejectSyntax && rej.Reason != abi.RejectUndeclared {
				if _, ok := o.op.Args[rej.Arg]; !ok {
					t.Fatalf("reject names an undeclared arg: %+v", rej)
				}
			}
			return
		}
		if len(req) > abi.MaxRequestBytes {
			return // refused with ETOOBIG; args are capped at 64 KiB so this is rare
		}
		dec, deny := egress.DecodeRequest(req)
		if deny != "" {
			t.Fatalf("%s: the host cannot decode the executor's request (%s): %s", o.m.ID, deny, req)
		}
		if deny := o.policy.Check(dec); deny != "" {
			t.Fatalf("%s %s: the policy refuses the executor's request (%s): %s", o.m.ID, o.op.Path, deny, req)
		}
		if !o.bind.Check(want, dec, o.policy.Host()) {
			t.Fatalf("%s %s: the binding refuses the executor's request for %s: %s", o.m.ID, o.op.Path, args, req)
		}
	})
}

// FuzzRequestCheck feeds arbitrary bytes to pin_v1.request's decoding and
// policy for every op: it never panics, and every request it accepts is,
// by net/url's independent reading, https to exactly the pinned host on
// the default port, without userinfo, fragment, dot segments, encoded
// slashes or a repeated query key; one the binding also accepts for the
// args {} has only declared query keys.
func FuzzRequestCheck(f *testing.F) {
	ops := allOps(f)
	for i, s := range []string{
		`{"method":"GET","url":"https://api.github.com/user/repos?per_page=5","headers":[["Accept","application/vnd.github+json"]]}`,
		`{"method":"GET","url":"https://api.github.com/repos/a/b/issues?state=open","headers":[]}`,
		`{"method":"POST","url":"https://api.stripe.com/v1/customers","headers":[],"body":"email=a%40b"}`,
		`{"method":"POST","url":"https://api.linear.app/graphql","headers":[],"body":"{\"query\":\"{ viewer { id } }\"}"}`,
		`{"method":"GET","url":"https://api.github.com/repos/%2e%2e/b/issues","headers":[]}`,
		`{"method":"GET","url":"https://api.github.com@evil/repos/a/b","headers":[]}`,
	} {
		f.Add(uint16(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, idx uint16, b []byte) {
		o := ops[int(idx)%len(ops)]
		r, deny := egress.DecodeRequest(b)
		if deny != "" {
			return
		}
		if o.policy.Check(r) != "" {
			return
		}
		u, err := url.Parse(r.URL())
		if err != nil {
			t.Fatalf("accepted a URL net/url cannot parse: %q", r.URL())
		}
		if u.Scheme != "https" || u.Host != o.m.Host || u.Port() != "" || u.User != nil || u.Fragment != "" || u.Opaque != "" {
			t.Fatalf("accepted %q: scheme %q host %q user %v", r.URL(), u.Scheme, u.Host, u.User)
		}
		for _, seg := range strings.Split(u.EscapedPath(), "/") {
			dec, err := url.PathUnescape(seg)
			if err != nil || dec == "." || dec == ".." || strings.ContainsAny(dec, "/\\") {
				t.Fatalf("accepted path segment %q in %q", seg, r.URL())
			}
		}
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			t.Fatalf("accepted a query net/url cannot parse: %q", u.RawQuery)
		}
		want, rej := o.bind.Bind([]byte(`{}`))
		bound := rej == nil && o.bind.Check(want, r, o.policy.Host())
		for k, vs := range q {
			tmpl, ok := o.op.Query[k]
			name := strings.Trim(tmpl, "{}")
			repeats := false // an exploded array arg's key: once per value
			if a := o.op.Args[name]; ok && a != nil && tmpl == "{"+name+"}" && a.Type == registry.TypeArray && a.Delimiter() == 0 {
				repeats = true
			}
			if (bound && !ok) || (len(vs) != 1 && !repeats) {
				t.Fatalf("accepted query key %q (%d values) in %q", k, len(vs), r.URL())
			}
		}
		if r.Method() != o.op.Method {
			t.Fatalf("accepted method %q", r.Method())
		}
		for _, h := range r.Headers() {
			if o.policy.ForbiddenHeader(textproto.CanonicalMIMEHeaderKey(h[0])) || strings.ContainsAny(h[1], "\r\n\x00") {
				t.Fatalf("accepted header %q: %q", h[0], h[1])
			}
		}
	})
}

// FuzzPollSubscriptions feeds arbitrary subscription arrays to the
// poll_oneoff decoder: it never panics and reports at most one event per
// subscription.
func FuzzPollSubscriptions(f *testing.F) {
	f.Add([]byte(strings.Repeat("\x00", 48)), uint8(1))
	f.Add(make([]byte, 96), uint8(2))
	f.Fuzz(func(t *testing.T, subs []byte, n uint8) {
		if int(n)*48 > len(subs) || n == 0 {
			return
		}
		ev, sleep, idx := parseSubscriptions(subs[:int(n)*48], int(n), 0)
		if len(ev) != int(n) {
			t.Fatalf("%d events for %d subscriptions", len(ev), n)
		}
		if sleep >= 0 && (idx < 0 || idx >= len(ev)) {
			t.Fatalf("sleep index %d of %d", idx, len(ev))
		}
	})
}
