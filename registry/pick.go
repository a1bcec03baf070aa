package registry

import (
	"bytes"
	"encoding/json"
)

// pickShape is the JSON shape of a [Pick] the loader's walker checks a
// manifest against: "fields" is an object of dot path → class.
type pickShape struct {
	Root   string      `json:"root,omitempty"`
	Fields fieldsShape `json:"fields"`
}

// fieldsShape is pick.fields: dot path → data-flow class.
type fieldsShape map[string]string

// MarshalJSON writes {"root": ..., "fields": {path: class, ...}} with the
// fields in their order (so a parsed manifest encodes back to one that
// parses equal).
func (p Pick) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := func(v any) error {
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		if err := e.Encode(v); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
		return nil
	}
	b.WriteByte('{')
	if p.Root != "" {
		b.WriteString(`"root":`)
		if err := enc(p.Root); err != nil {
			return nil, err
		}
		b.WriteByte(',')
	}
	b.WriteString(`"fields":`)
	if p.Fields == nil {
		b.WriteString("null}")
		return b.Bytes(), nil
	}
	b.WriteByte('{')
	for i, f := range p.Fields {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := enc(f); err != nil {
			return nil, err
		}
		b.WriteByte(':')
		if err := enc(p.Classes[f]); err != nil {
			return nil, err
		}
	}
	b.WriteString("}}")
	return b.Bytes(), nil
}

// UnmarshalJSON reads the manifest form of a pick, keeping the fields in
// the document's order. A key repeated in "fields" keeps its first place
// and its last class. It refuses nothing a JSON document can hold: a
// "fields" that is not an object of strings leaves Fields nil (or that
// field's class empty), and [Parse], whose walker reports the shape
// problem first, refuses the manifest.
func (p *Pick) UnmarshalJSON(data []byte) error {
	var raw struct {
		Root   json.RawMessage `json:"root"`
		Fields json.RawMessage `json:"fields"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*p = Pick{}
	_ = json.Unmarshal(raw.Root, &p.Root)
	dec := json.NewDecoder(bytes.NewReader(raw.Fields))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	p.Fields, p.Classes = []string{}, map[string]string{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key := t.(string) // inside an object, Token returns keys as strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		var class string
		_ = json.Unmarshal(v, &class)
		if _, seen := p.Classes[key]; !seen {
			p.Fields = append(p.Fields, key)
		}
		p.Classes[key] = class
	}
	return nil
}
