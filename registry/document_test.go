package registry

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDocumentJSON(t *testing.T) {
	reg := Default()
	b, err := reg.DocumentJSON()
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Digest   string `json:"digest"`
		Services []struct {
			ID string `json:"id"`
		} `json:"services"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.Digest != reg.Digest() {
		t.Errorf("digest %q, want %q", d.Digest, reg.Digest())
	}
	var ids []string
	for _, s := range d.Services {
		ids = append(ids, s.ID)
	}
	var want []string
	for _, m := range reg.Services() {
		want = append(want, m.ID)
	}
	if strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Errorf("services %v, want %v (sorted by id)", ids, want)
	}
	if strings.Contains(string(b), `\u003c`) || strings.Contains(string(b), `\u0026`) {
		t.Errorf("HTML-escaped: %.200s", b)
	}
}
