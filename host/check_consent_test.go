package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/display"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/registry"
)

// TestConsentShowsEverySentArg: for every write op of every manifest,
// with every declared arg given a distinct value, each arg the rendered
// request carries appears whole in the consent text (Engine.Check, and
// Render, which registry show prints): in the confirm line when the
// sentence or the target names it, else as its own "- arg: value" entry.
// The hidden-args ops of the issue are among them (github create_issue's
// body; linear's description and team_id; stripe's name and description;
// dnsimple's account, registrant_id, auto_renew and whois_privacy;
// hubspot's firstname and lastname). A mutation that hides one arg from
// the text is caught by the same check.
func TestConsentShowsEverySentArg(t *testing.T) {
	env := newEnv(t, nil)
	ctx := context.Background()
	fixtures := testutil.ConsentArgs()
	n := 0
	for _, m := range registry.Default().Services() {
		for _, name := range m.OpNames() {
			op, _ := m.Op(name)
			if op.Access != registry.AccessWrite {
				continue
			}
			n++
			key := m.ID + "." + name
			args, ok := fixtures[key]
			if !ok {
				t.Errorf("%s: no args in testutil's consent_args.json", key)
				continue
			}
			t.Run(key, func(t *testing.T) {
				for a := range op.Args {
					if !strings.Contains(string(args), `"`+a+`"`) {
						t.Errorf("the fixture does not give arg %q", a)
					}
				}
				c, err := env.eng.Check(ctx, m.ID, name, args)
				if err != nil {
					t.Fatal(err)
				}
				text := c.Text()
				if miss := testutil.MissingFromConsent(op, args, text); len(miss) > 0 {
					t.Errorf("args sent but not shown: %v in\n%s", miss, text)
				}
				if got := testutil.Carried(op, args); len(got) < 2 {
					t.Errorf("only %d carried args: %v", len(got), got)
				}
				r, herr := Render(m, name, args)
				if herr != nil {
					t.Fatal(herr)
				}
				if got := ConsentText(r.Confirm, r.Sends); got != text {
					t.Errorf("Render's consent differs from Check's:\n%s\n---\n%s", got, text)
				}
				// The mutation: hiding any one carried arg's value is caught.
				for arg, v := range testutil.Carried(op, args) {
					shown := testutil.Entry(arg, v)
					if !strings.Contains(text, shown) {
						shown = v // in the confirm line
					}
					hidden := strings.ReplaceAll(text, shown, "")
					if v == "" || hidden == text {
						t.Errorf("arg %s: cannot hide %q from the text", arg, v)
						continue
					}
					if miss := testutil.MissingFromConsent(op, args, hidden); len(miss) == 0 {
						t.Errorf("hiding arg %s from the text went unnoticed:\n%s", arg, hidden)
					}
				}
			})
		}
	}
	if n < 5 {
		t.Errorf("%d write ops, want every manifest's (5 or more)", n)
	}
}

// TestConsentHostileText: the invisible payloads in a
// create_issue title, each refused with bad_args naming the code point
// (tag characters) or shown as visible escapes once per occurrence,
// never dropped and never raw; the target is the consent's first text,
// before any arg text, whatever the title holds.
func TestConsentHostileText(t *testing.T) {
	env := newEnv(t, nil)
	ctx := context.Background()
	tags := func(s string) string {
		var b strings.Builder
		for _, r := range s {
			b.WriteRune(0xE0000 + r)
		}
		return b.String()
	}
	type row struct {
		name, title string
		refused     rune // a tag character: bad_args naming it
		body        string
		shows       []string // what the consent must show as well
	}
	rows := []row{
		{name: "tag characters spelling a domain", title: "Nice work" + tags("hello-fake.io"), refused: 0xE0068},
		{name: "tag begin and cancel", title: "x\U000E0001y\U000E007F", refused: 0xE0001},
		{name: "190 braille blanks after a quote", title: `Bug report" in pinned-tester/notes?` + strings.Repeat("\u2800", 190)},
		{name: "combining grapheme joiner", title: "a\u034fb"},
		{name: "hangul filler", title: "a\u3164b"},
		{name: "hangul choseong filler", title: "a\u115fb"},
		{name: "hangul jungseong filler", title: "a\u1160b"},
		{name: "halfwidth hangul filler", title: "a\uffa0b"},
		{name: "zero-width space and bidi override", title: "pay\u200b\u202eevil"},
		{name: "blanks of other widths spelling bits", title: "Nice work\u2002\u2003\u2003\u2002\u3000\u00a0\u2009\u202f"},
		{name: "200 stacked combining marks", title: "Z" + strings.Repeat("\u0301", 200) + "algo",
			shows: []string{strings.Repeat(display.Escape(0x0301), 200-display.MaxMarks) + "algo"}},
		{name: "trailing spaces spelling bits in the body", title: "Typo", body: "line one  \nline two \nline three\t",
			shows: []string{"line one⟨U+0020⟩⟨U+0020⟩\n", "line two⟨U+0020⟩\n", "line three⟨U+0009⟩"}},
	}
	for r := rune(0xFE00); r <= 0xFE0F; r++ {
		rows = append(rows, row{name: fmt.Sprintf("variation selector %U", r), title: "ok" + string(r)})
	}
	for r := rune(0xE0100); r <= 0xE01EF; r++ {
		rows = append(rows, row{name: fmt.Sprintf("variation selector %U", r), title: "ok" + string(r) + string(r)})
	}
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			a := map[string]string{"owner": "attacker-org", "repo": "notes", "title": tt.title}
			if tt.body != "" {
				a["body"] = tt.body
			}
			args, _ := json.Marshal(a)
			c, err := env.eng.Check(ctx, "github", "create_issue", args)
			if tt.refused != 0 {
				var he *Error
				if !errors.As(err, &he) || he.Code != api.CodeBadArgs || he.Arg != "title" || !strings.Contains(he.Message, fmt.Sprintf("%U", tt.refused)) {
					t.Fatalf("got %v, want bad_args for title naming %U", err, tt.refused)
				}
				if _, err := Render(githubManifest(t), "create_issue", args); asError(t, err) == nil || asError(t, err).Code != api.CodeBadArgs {
					t.Errorf("Render accepted it: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			text := c.Text()
			if !strings.HasPrefix(text, `[GitHub: owner "attacker-org", repo "notes"] Open an issue titled "`) {
				t.Errorf("the target is not first: %q", text)
			}
			for _, r := range tt.title {
				if display.Classify(r) == display.Visible {
					continue
				}
				if strings.ContainsRune(text, r) {
					t.Errorf("%U shown raw", r)
				}
				// Every occurrence is shown, in the whole value (the
				// sentence may cut a long one).
				if got, want := strings.Count(text, display.Escape(r)), strings.Count(tt.title, string(r)); got < want {
					t.Errorf("%d escapes of %U, want at least %d:\n%s", got, r, want, text)
				}
			}
			if miss := testutil.MissingFromConsent(githubManifest(t).Ops["create_issue"], args, text); len(miss) > 0 {
				t.Errorf("not shown: %v", miss)
			}
			for _, want := range tt.shows {
				if !strings.Contains(text, want) {
					t.Errorf("the consent does not show %q:\n%s", want, text)
				}
			}
		})
	}
}

func githubManifest(t *testing.T) *registry.Manifest {
	t.Helper()
	m, ok := registry.Default().Service("github")
	if !ok {
		t.Fatal("no github manifest")
	}
	return m
}

// TestConsentShowsEveryArrayValue: an array arg's consent entry shows
// every value in order, each quoted and escaped, so a value cannot pose
// as two ("bug\", \"admin" stays one), a blank-looking one is seen, and
// a tag character in one is refused as in any write arg.
func TestConsentShowsEveryArrayValue(t *testing.T) {
	env := newEnv(t, nil)
	ctx := context.Background()
	args := `{"owner":"pinned-tester","repo":"notes","title":"T","labels":["bug\", \"admin","ui\u200b",""],"assignees":["carol-fake","bob-fake"]}`
	c, err := env.eng.Check(ctx, "github", "create_issue", []byte(args))
	if err != nil {
		t.Fatal(err)
	}
	want := []Shown{{Arg: "assignees", Value: `["carol-fake", "bob-fake"]`}, {Arg: "labels", Value: `["bug\", \"admin", "ui⟨U+200B⟩", ""]`}}
	if fmt.Sprint(c.Sends) != fmt.Sprint(want) {
		t.Fatalf("Sends = %q, want %q", c.Sends, want)
	}
	_, err = env.eng.Check(ctx, "github", "create_issue", []byte(`{"owner":"pinned-tester","repo":"notes","title":"T","labels":["ok","a\udb40\udc41"]}`))
	var he *Error
	if !errors.As(err, &he) || he.Code != api.CodeBadArgs || he.Arg != "labels" {
		t.Fatalf("a tag character in an array value: %v", err)
	}
}
