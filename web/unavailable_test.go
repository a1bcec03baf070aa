package web

import (
	"strings"
	"testing"
)

// TestParseUnavailable: the broker's registry document is outside input;
// only well-formed ids the embedded registry lacks are kept, each display
// field clipped, and nothing else of a manifest is read.
func TestParseUnavailable(t *testing.T) {
	has := func(id string) bool { return id == "github" }
	tests := []struct {
		name string
		body string
		want []string // ids
		err  bool
	}{
		{name: "a new service", body: `{"services":[{"id":"github"},{"id":"zzlate","name":"Late","ops":{"a":{},"b":{}}}]}`, want: []string{"zzlate"}},
		{name: "sorted and unique", body: `{"services":[{"id":"zeta"},{"id":"alpha"},{"id":"zeta"}]}`, want: []string{"alpha", "zeta"}},
		{name: "ids that are not manifest ids", body: `{"services":[{"id":"../etc"},{"id":"<img src=x onerror=alert(1)>"},{"id":"A"},{"id":""}]}`},
		{name: "every service embedded", body: `{"services":[{"id":"github"}]}`},
		{name: "not JSON", body: `<html>`, err: true},
		{name: "services not a list", body: `{"services":{"id":"x"}}`, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseUnavailable([]byte(tt.body), has)
			if (err != nil) != tt.err {
				t.Fatalf("err %v, want error %v", err, tt.err)
			}
			var ids []string
			for _, s := range got {
				ids = append(ids, s.ID)
			}
			if strings.Join(ids, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("ids %v, want %v", ids, tt.want)
			}
		})
	}
	got, _ := parseUnavailable([]byte(`{"services":[{"id":"zzlate","name":"`+strings.Repeat("é", 100)+`","ops":{"a":{},"b":{}}}]}`), has)
	if len(got) != 1 || len(got[0].Name) > 80+len("…") || !strings.HasSuffix(got[0].Name, "…") || got[0].Ops != 2 {
		t.Fatalf("clipped %+v", got)
	}
}

// FuzzParseUnavailable: any body from the broker yields well-formed ids
// and clipped fields, never a panic.
func FuzzParseUnavailable(f *testing.F) {
	f.Add([]byte(`{"services":[{"id":"zzlate","name":"Late","description":"d","host":"h","ops":{"a":{}}}]}`))
	f.Add([]byte(`{"services":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := parseUnavailable(body, func(string) bool { return false })
		if err != nil {
			return
		}
		for _, s := range got {
			if !unavailableIDRe.MatchString(s.ID) || len(s.Name) > 80+len("…") || len(s.Description) > 300+len("…") {
				t.Fatalf("%+v", s)
			}
		}
	})
}
