package fakeapi

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/secret"
)

// engine starts a host engine over reg whose every pinned host is the
// fake.
func engine(t *testing.T, s *Server, reg *registry.Registry) *host.Engine {
	t.Helper()
	eng, err := host.New(context.Background(), host.Config{Registry: reg, CacheDir: filepath.Join(os.TempDir(), "pinned-test-wazero-cache"), Override: &host.Override{Addr: s.Addr(), CAPEM: s.CACertPEM()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(context.Background()) })
	return eng
}

// picked reports the picked fields that are in no item of data (a
// projected result: an object or a list of them).
func missingFields(data []byte, fields []string) []string {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return fields
	}
	items, ok := v.([]any)
	if !ok {
		items = []any{v}
	}
	var out []string
	for _, f := range fields {
		found := false
		for _, it := range items {
			if hasPath(it, strings.Split(f, ".")) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, f)
		}
	}
	return out
}

// hasPath: the dot path is in v, through arrays (a path through an array
// maps over its elements, as in pick).
func hasPath(v any, segs []string) bool {
	if len(segs) == 0 {
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		e, ok := x[segs[0]]
		return ok && hasPath(e, segs[1:])
	case []any:
		for _, e := range x {
			if hasPath(e, segs) {
				return true
			}
		}
	}
	return false
}

// checkFixture holds one service's fixtures to its manifest, through the
// host's own op path: every op has a fixture and example args that give
// every declared arg a valid value; the op answers 2xx with each picked
// field present; a list pages, each next cursor valid for its arg (the
// host refuses one that is not), at least twice at a small page size.
func checkFixture(t *testing.T, s *Server, eng *host.Engine, m *registry.Manifest, kind string, token string) {
	svc := s.services[m.ID]
	if svc == nil {
		t.Fatalf("%s: the fake has no fixtures (testdata/%s/)", m.ID, m.ID)
	}
	cred := host.Credential{Kind: kind, Secret: secret.Secret(token)}
	if m.Auth.TwoPart() && kind != "oauth" {
		cred.User = secret.Secret(svc.p.User)
	}
	if m.HasTenant() {
		cred.Tenant, _, _ = strings.Cut(svc.host, ".")
	}
	for _, name := range m.OpNames() {
		op := m.Ops[name]
		t.Run(m.ID+"."+name, func(t *testing.T) {
			of := svc.f.Ops[name]
			if of == nil || of.Example == nil {
				t.Fatalf("no fixture with example args for op %s (testdata/%s/*.json ops.%s.example)", name, m.ID, name)
			}
			var args map[string]json.RawMessage
			if err := json.Unmarshal(of.Example, &args); err != nil {
				t.Fatalf("example: %v", err)
			}
			for a := range op.Args {
				if _, ok := args[a]; !ok {
					t.Errorf("example lacks arg %q: every declared arg is given, so every template renders", a)
				}
			}
			if err := host.ValidateArgs(m, name, of.Example, 0); err != nil {
				t.Fatalf("example refused: %v", err)
			}
			if op.Access == registry.AccessWrite { // the consent tests tell args apart by value
				seen := map[string]string{}
				for a, v := range args {
					if other, dup := seen[string(v)]; dup {
						t.Errorf("example gives args %q and %q the same value %s; a write's example gives each its own", a, other, v)
					}
					seen[string(v)] = a
				}
			}
			if op.Paginate != nil {
				delete(args, op.Paginate.Arg) // the first page
			}
			first, _ := json.Marshal(args)
			res, err := eng.Run(context.Background(), host.Call{Service: m.ID, Op: name, Args: first, Credential: cred})
			if err != nil {
				t.Fatalf("%s: %v", first, err)
			}
			miss := missingFields(res.Data, op.Pick.Fields)
			for _, more := range of.MoreExamples {
				if len(miss) == 0 {
					break
				}
				if err := host.ValidateArgs(m, name, more, 0); err != nil {
					t.Fatalf("more_examples %s refused: %v", more, err)
				}
				res, err := eng.Run(context.Background(), host.Call{Service: m.ID, Op: name, Args: more, Credential: cred})
				if err != nil {
					t.Fatalf("%s: %v", more, err)
				}
				miss = missingFields(res.Data, miss)
			}
			if len(miss) > 0 {
				t.Errorf("picked fields absent from the answers to the examples: %s (data %.300s)", strings.Join(miss, ", "), res.Data)
			}
			if op.Paginate == nil || of.List == nil {
				return
			}
			for a := range args { // the whole list: no filter
				if !op.Args[a].Required {
					delete(args, a)
				}
			}
			if of.List.Size != nil {
				small := "2"
				if a := op.Args[of.List.Size.Arg]; a != nil && a.Min != nil && *a.Min > 2 {
					small = strconv.Itoa(int(*a.Min))
				}
				args[of.List.Size.Arg] = json.RawMessage(small)
			}
			small, _ := json.Marshal(args)
			res, err = eng.Run(context.Background(), host.Call{Service: m.ID, Op: name, Args: small, Credential: cred, Pages: min(3, op.Paginate.MaxPages)})
			switch {
			case err != nil:
				t.Fatalf("pages of %s: %v", small, err)
			case res.Pages < 2:
				t.Errorf("pages of %s: %d page (%s %s); the fixtures of a list have at least two pages at a small size", small, res.Pages, res.Stopped, res.StopMessage)
			case res.Stopped != api.StopLastPage && res.Stopped != api.StopPages:
				t.Errorf("pages of %s stopped: %s: %s (a next cursor the arg's declaration refuses?)", small, res.Stopped, res.StopMessage)
			}
		})
	}
}

// TestManifestsAgainstFake holds every embedded manifest to the fake's
// fixtures, every op of it, through the host (see checkFixture).
func TestManifestsAgainstFake(t *testing.T) {
	s := newServer(t)
	reg := registry.Default()
	eng := engine(t, s, reg)
	ids := Services()
	for _, id := range reg.IDs() {
		if !slices.Contains(ids, id) {
			t.Errorf("%s: no fixtures under testdata/%s/", id, id)
		}
	}
	for _, m := range reg.Services() {
		checkFixture(t, s, eng, m, "pat", Token(m.ID))
	}
}

// TestFacts: the constants tests name agree with the fixtures.
func TestFacts(t *testing.T) {
	s := newServer(t)
	_, _, b := do(t, s, "GET", "https://api.github.com/user/repos?per_page=1", bearer(Token(GitHub)), "")
	_ = b
	if n := len(s.services[GitHub].rows("repos")); n != GitHubRepoCount {
		t.Errorf("GitHubRepoCount %d, the fixtures %d", GitHubRepoCount, n)
	}
	_, _, b = do(t, s, "GET", "https://api.github.com/user", bearer(Token(GitHub)), "")
	if field(decode(t, b), "login") != GitHubViewer {
		t.Errorf("GitHubViewer %q: %.100s", GitHubViewer, b)
	}
	_, _, b = do(t, s, "GET", "https://api.dnsimple.com/v2/whoami", bearer(Token(DNSimple)), "")
	if field(decode(t, b), "data.account.id") != float64(DNSimpleAccountID) {
		t.Errorf("DNSimpleAccountID %d: %.100s", DNSimpleAccountID, b)
	}
	_, _, b = do(t, s, "GET", "https://api.stripe.com/v1/account", bearer(Token(Stripe)), "")
	if field(decode(t, b), "id") != StripeAccountID {
		t.Errorf("StripeAccountID %q: %.100s", StripeAccountID, b)
	}
	_, _, b = do(t, s, "POST", "https://api.linear.app/graphql", map[string]string{"Authorization": Token(Linear), "Content-Type": "application/json"}, string(opBody(t, Linear, "get_viewer")))
	if field(decode(t, b), "data.viewer.organization.urlKey") != LinearOrgKey {
		t.Errorf("LinearOrgKey %q: %.100s", LinearOrgKey, b)
	}
	for _, h := range []string{HostGitHub, HostDNSimple, HostStripe, HostHubSpot, HostLinear} {
		if !slices.Contains(s.Hosts(), h) {
			t.Errorf("%s is not a host of the fake", h)
		}
	}
}
