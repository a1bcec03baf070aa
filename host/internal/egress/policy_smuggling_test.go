package egress

import (
	"net/http"
	"testing"

	"github.com/elevenmessenger/pinned/registry"
)

func shippedOpPolicy(t *testing.T, service, op string) *Policy {
	t.Helper()
	m, ok := registry.Default().Service(service)
	if !ok {
		t.Fatal(service)
	}
	o, ok := m.Op(op)
	if !ok {
		t.Fatal(op)
	}
	p, err := NewPolicy(m, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPolicyRefusesSemicolonPairs (found by the red team; it guards the fix): the policy checks query keys by
// splitting on '&' only, but allows ';' (an RFC 3986 sub-delim) anywhere
// in a pair. Servers that also split on ';' (Rack 2's GET params, Python's
// parse_qsl before 3.9.2/3.10, many Java servlet stacks for path params)
// then see keys the op does not declare, or a declared key twice. The
// same holds for body_form pairs. Go's own net/url drops such pairs,
// which is why FuzzRequestCheck cannot see the difference.
func TestPolicyRefusesSemicolonPairs(t *testing.T) {
	p := shippedOpPolicy(t, "github", "list_issues")
	for _, u := range []string{
		"https://api.github.com/repos/o/r/issues?state=open;filter=all",    // undeclared key "filter"
		"https://api.github.com/repos/o/r/issues?state=open;state=closed",  // declared key twice
		"https://api.github.com/repos/o/r/issues?per_page=1;page=2&page=3", // page twice
	} {
		if d := p.checkURL(u); d == "" {
			req, _ := http.NewRequest("GET", u, nil)
			t.Errorf("policy accepted %s (sent as RawQuery %q)", u, req.URL.RawQuery)
		}
	}
	sp := shippedOpPolicy(t, "stripe", "create_customer")
	r := &Request{method: "POST", url: "https://api.stripe.com/v1/customers", hasBody: true,
		body: []byte("email=a@b.example;metadata[x]=1;balance=-100")}
	if d := sp.Check(r); d == "" {
		t.Errorf("policy accepted form body %q (undeclared keys after ';')", r.body)
	}
}

// TestPolicyRefusesPathParamDotSegments (found by the red team; it guards the fix): an {arg} segment may hold ';' (a
// sub-delim), and only the exact decoded values "." and ".." count as dot
// segments. Servers that strip path parameters before normalizing (Tomcat,
// Jetty, Spring, many Java gateways) read "..;" as "..", so a hostile
// guest can leave the op's template on such a provider. Server-dependent;
// none of the five shipped providers is known to do this.
func TestPolicyRefusesPathParamDotSegments(t *testing.T) {
	p := shippedOpPolicy(t, "github", "list_issues")
	for _, u := range []string{
		"https://api.github.com/repos/..;/..;/issues",
		"https://api.github.com/repos/%2e%2e;/x/issues",
		"https://api.github.com/repos/.;/x/issues",
	} {
		if d := p.checkURL(u); d == "" {
			t.Errorf("policy accepted %s", u)
		}
	}
}
