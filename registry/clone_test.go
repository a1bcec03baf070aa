package registry

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
)

// TestCloneSharesNothing walks a manifest and its clone side by side: the
// clone is equal, and no pointer, map or slice of one is the other's
// (so a field added later without a copy in Clone fails here).
func TestCloneSharesNothing(t *testing.T) {
	for _, m := range Default().shared() {
		t.Run(m.ID, func(t *testing.T) {
			c := m.Clone()
			if !reflect.DeepEqual(c, m) {
				t.Fatal("Clone() differs from the original")
			}
			assertDisjoint(t, m.ID, reflect.ValueOf(m), reflect.ValueOf(c))
		})
	}
	if (*Manifest)(nil).Clone() != nil {
		t.Error("(*Manifest)(nil).Clone() != nil")
	}
	// Nil stays nil, empty stays empty.
	m := &Manifest{Auth: Auth{OAuth: &OAuth{Scopes: []string{}}}, Ops: map[string]*Op{"a": {Pick: &Pick{Fields: []string{}}}, "nil": nil}}
	c := m.Clone()
	if c.Auth.OAuth.Scopes == nil || c.Auth.OAuth.ScopesWrite != nil || c.Ops["a"].Pick.Fields == nil || c.Ops["a"].Args != nil || c.Headers != nil {
		t.Errorf("Clone() changed nil or empty: %+v", c)
	}
	if op, ok := c.Ops["nil"]; !ok || op != nil {
		t.Errorf(`Clone() Ops["nil"] = %v, %v; want nil, true`, op, ok)
	}
}

func assertDisjoint(t *testing.T, path string, a, b reflect.Value) {
	t.Helper()
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: the clone shares the pointer", path)
			return
		}
		assertDisjoint(t, path, a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			assertDisjoint(t, path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i))
		}
	case reflect.Map:
		if a.IsNil() {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: the clone shares the map", path)
			return
		}
		for _, k := range a.MapKeys() {
			assertDisjoint(t, path+"["+k.String()+"]", a.MapIndex(k), b.MapIndex(k))
		}
	case reflect.Slice:
		if a.Cap() > 0 && a.Pointer() == b.Pointer() {
			t.Errorf("%s: the clone shares the slice's array", path)
			return
		}
		for i := range a.Len() {
			assertDisjoint(t, path, a.Index(i), b.Index(i))
		}
	case reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		t.Errorf("%s: %s field: teach Clone and this test about it", path, a.Kind())
	}
}

// scribble overwrites, in place, every value reachable from v: strings,
// numbers and booleans change, every map entry is rewritten and a new one
// added, every slice element (every byte of a json.RawMessage) changes.
func scribble(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			scribble(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			scribble(v.Field(i))
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			scribble(e)
			v.SetMapIndex(k, e)
		}
		v.SetMapIndex(reflect.ValueOf("scribbled").Convert(v.Type().Key()), reflect.New(v.Type().Elem()).Elem())
	case reflect.Slice:
		for i := range v.Len() {
			scribble(v.Index(i))
		}
	case reflect.String:
		v.SetString("scribbled")
	case reflect.Int:
		v.SetInt(-7)
	case reflect.Uint8:
		v.SetUint(uint64('#'))
	case reflect.Float64:
		v.SetFloat(-7.5)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	}
}

// TestCallersCannotChangeTheRegistry is the hostile caller: it scribbles
// over everything reachable from what Default() hands out (Service,
// Services, Raw, IDs, DocumentJSON) and checks that the registry still
// answers exactly what a fresh Load of the same files answers.
func TestCallersCannotChangeTheRegistry(t *testing.T) {
	fresh, err := Load(shippedFS(t))
	if err != nil {
		t.Fatal(err)
	}
	r := Default()
	digest := r.Digest()
	doc, err := r.DocumentJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range r.IDs() {
		m, _ := r.Service(id)
		scribble(reflect.ValueOf(m))
		if m.ID != "scribbled" || len(m.Ops) == 0 {
			t.Fatalf("scribble did not reach the manifest %q", id)
		}
		for _, op := range m.Ops {
			if op != nil && op.Pick != nil && len(op.Pick.Fields) > 0 && op.Pick.Fields[0] != "scribbled" {
				t.Fatalf("scribble did not reach %q's pick fields", id)
			}
		}
		raw := r.Raw(id)
		scribble(reflect.ValueOf(raw))
	}
	scribble(reflect.ValueOf(r.Services()))
	scribble(reflect.ValueOf(r.IDs()))
	d, _ := r.DocumentJSON()
	scribble(reflect.ValueOf(d))

	if got, want := r.IDs(), fresh.IDs(); !slices.Equal(got, want) {
		t.Fatalf("IDs() = %q after scribbling, want %q", got, want)
	}
	for _, id := range fresh.IDs() {
		got, _ := r.Service(id)
		want, _ := fresh.Service(id)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Service(%q) changed after a caller scribbled over its copies", id)
		}
		if !bytes.Equal(r.Raw(id), fresh.Raw(id)) {
			t.Errorf("Raw(%q) changed after a caller scribbled over its copy", id)
		}
	}
	if !reflect.DeepEqual(r.Services(), fresh.Services()) {
		t.Error("Services() changed after a caller scribbled over its copies")
	}
	if r.Digest() != digest || r.Digest() != fresh.Digest() {
		t.Errorf("Digest() = %s, want %s", r.Digest(), digest)
	}
	if got, _ := r.DocumentJSON(); !bytes.Equal(got, doc) {
		t.Error("DocumentJSON() changed after a caller scribbled over its copies")
	}
	if got, _ := fresh.DocumentJSON(); !bytes.Equal(got, doc) {
		t.Error("DocumentJSON() differs from a fresh Load's")
	}
}

// BenchmarkClone is the cost of one copy of the largest shipped manifest
// (what Registry.Service costs a caller per call).
func BenchmarkClone(b *testing.B) {
	var big *Manifest
	for _, m := range Default().shared() {
		if big == nil || len(m.Ops) > len(big.Ops) {
			big = m
		}
	}
	b.Logf("%s: %d ops", big.ID, len(big.Ops))
	b.ReportAllocs()
	for b.Loop() {
		_ = big.Clone()
	}
}

// BenchmarkServices is the cost of copying the whole default registry.
func BenchmarkServices(b *testing.B) {
	r := Default()
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Services()
	}
}

// BenchmarkServiceOpTool is the service_op tool of the embedded registry,
// which pinned sidecar builds at start: its schema is a chain of
// if/then/else nested one level per service and per op.
func BenchmarkServiceOpTool(b *testing.B) {
	r := Default()
	b.ReportAllocs()
	for b.Loop() {
		ServiceOpTool(r)
	}
}
