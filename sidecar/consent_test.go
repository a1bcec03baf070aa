package sidecar

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/host"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
)

// TestConsentEndpointShowsEverySentArg: POST /v1/consent, for every
// write op of every manifest with every arg given, answers the consent
// as text and as data: each arg the request carries appears whole in
// text (the confirm line or its "- arg: value" entry), and sends holds
// every carried arg the confirm line does not show, labelled, whole;
// text is host.ConsentText(confirm, sends). A mutation that drops one
// sends entry is caught by the same check. Nothing is sent.
func TestConsentEndpointShowsEverySentArg(t *testing.T) {
	env := newTestEnv(t, nil)
	for _, w := range testutil.WriteOps() {
		service, name, op, args := w.Service, w.Name, w.Op, w.Args
		t.Run(w.Key(), func(t *testing.T) {
			body, _ := json.Marshal(ConsentRequest{Service: service, Op: name, Args: args})
			r := env.do(t, "POST", "/v1/consent", string(body))
			var c ConsentResponse
			if r.status != 200 || json.Unmarshal(r.body, &c) != nil {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if miss := testutil.MissingFromConsent(op, args, c.Text); len(miss) > 0 {
				t.Errorf("sent but not shown: %v in %q", miss, c.Text)
			}
			if c.Text != host.ConsentText(c.Confirm, c.Sends) {
				t.Errorf("text is not confirm and sends: %q", c.Text)
			}
			carried := testutil.Carried(op, args)
			first := c.Confirm
			for arg, v := range carried {
				inSends := false
				for _, s := range c.Sends {
					if s.Arg == arg {
						inSends = s.Value == v || strings.Contains(testutil.Entry(arg, v), s.Value)
					}
				}
				if !inSends && !strings.Contains(first, v) {
					t.Errorf("arg %s (%q) is neither in sends nor in confirm", arg, v)
				}
			}
			// The mutation: a consent without one of its sends entries.
			for i := range c.Sends {
				cut := append(append([]host.Shown(nil), c.Sends[:i]...), c.Sends[i+1:]...)
				if len(testutil.MissingFromConsent(op, args, host.ConsentText(c.Confirm, cut))) == 0 {
					t.Errorf("dropping sends[%d] (%s) went unnoticed", i, c.Sends[i].Arg)
				}
			}
		})
	}
	if n := len(env.fake.Requests()); n != 0 {
		t.Errorf("consent sent %d requests", n)
	}
}
