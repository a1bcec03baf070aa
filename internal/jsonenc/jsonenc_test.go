package jsonenc

import (
	"encoding/json"
	"testing"
)

func TestMarshalPlainUTF8(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{name: "string", v: map[string]string{"auth": "Bearer <token> & more"}, want: `{"auth":"Bearer <token> & more"}`},
		{name: "raw message", v: struct {
			R json.RawMessage `json:"r"`
		}{json.RawMessage(`{ "confirm" : "Buy <b>x</b> & pay" }`)}, want: `{"r":{"confirm":"Buy <b>x</b> & pay"}}`},
		{name: "non-ASCII kept", v: "Grüße ⏎", want: `"Grüße ⏎"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Marshal(tt.v)
			if err != nil || string(got) != tt.want {
				t.Fatalf("Marshal = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
	got, err := MarshalIndent(map[string]string{"a": "<"}, "", "  ")
	if err != nil || string(got) != "{\n  \"a\": \"<\"\n}" {
		t.Fatalf("MarshalIndent = %q, %v", got, err)
	}
}
