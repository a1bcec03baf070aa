package egress

import (
	"testing"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/registry"
)

// TestAdmittedRequestImmutable: an admitted request cannot be changed
// through its accessors. Before the fix Headers and Body returned the
// request's own slices, so code holding an admitted request could rewrite
// a header value or the body after the checks and before the exchange
// sent it.
func TestAdmittedRequestImmutable(t *testing.T) {
	m, _ := registry.Default().Service("github")
	op, _ := m.Op("create_issue")
	eg, err := Prepare(m, op)
	if err != nil {
		t.Fatal(err)
	}
	pol, b := eg.Policy, eg.Binding
	want, rej := b.Bind([]byte(`{"owner":"octo","repo":"hello","title":"hi"}`))
	if rej != nil {
		t.Fatal(rej)
	}
	r, deny := DecodeRequest([]byte(`{"method":"POST","url":"https://api.github.com/repos/octo/hello/issues",` +
		`"headers":[["Accept","application/vnd.github+json"],["X-GitHub-Api-Version","2022-11-28"]],"body":"{\"title\":\"hi\"}"}`))
	if deny != "" {
		t.Fatal(deny)
	}
	if d := Admit(pol, b, want, r); d != "" || !r.Admitted("api.github.com") {
		t.Fatalf("Admit = %q, admitted %v", d, r.Admitted("api.github.com"))
	}
	h := r.Headers()
	h[0][1] = "evil"
	h[1] = [2]string{"X-Evil", "1"} // replace a header in the returned slice
	body, _ := r.Body()
	copy(body, `{"title":"XX"}`)
	if got := r.Headers()[0][1]; got != "application/vnd.github+json" {
		t.Errorf("a header of the admitted request changed to %q", got)
	}
	if got := r.Headers()[1][0]; got != "X-GitHub-Api-Version" {
		t.Errorf("the admitted request's headers changed: %q", r.Headers())
	}
	if got, _ := r.Body(); string(got) != `{"title":"hi"}` {
		t.Errorf("the admitted request's body changed to %s", got)
	}
}

// TestAdmitOrder: Admit runs the policy before the binding (the binding
// reads the URL after the pinned host, which only the policy has checked)
// and admits nothing either refuses.
func TestAdmitOrder(t *testing.T) {
	m, _ := registry.Default().Service("github")
	op, _ := m.Op("get_repo")
	eg, err := Prepare(m, op)
	if err != nil {
		t.Fatal(err)
	}
	pol, b := eg.Policy, eg.Binding
	want, _ := b.Bind([]byte(`{"owner":"octo","repo":"hello"}`))
	for _, tt := range []struct {
		url  string
		deny api.DenyReason
	}{
		{"https://x", api.DenyHost}, // shorter than the pinned host: the binding alone would slice past it
		{"http://api.github.com/repos/octo/hello", api.DenyScheme},
		{"https://api.github.com/repos/octo/other", api.DenyNotBound},
	} {
		r, d := DecodeRequest([]byte(`{"method":"GET","url":"` + tt.url + `","headers":[["Accept","application/vnd.github+json"],["X-GitHub-Api-Version","2022-11-28"]]}`))
		if d != "" {
			t.Fatal(d)
		}
		if got := Admit(pol, b, want, r); got != tt.deny || r.Admitted("api.github.com") {
			t.Errorf("%s: Admit = %q (admitted %v), want %q", tt.url, got, r.Admitted("api.github.com"), tt.deny)
		}
	}
	r, _ := DecodeRequest([]byte(`{"method":"GET","url":"https://api.github.com/repos/octo/hello","headers":[]}`))
	if got := Admit(pol, nil, want, r); got == "" || r.Admitted("api.github.com") {
		t.Errorf("Admit without a binding = %q (admitted %v), want a refusal", got, r.Admitted("api.github.com"))
	}
}
