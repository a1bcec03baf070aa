package snapshot

import (
	"testing"
	"testing/fstest"
)

// TestMemFS holds the snapshot's in-memory file system to io/fs's rules.
func TestMemFS(t *testing.T) {
	m := memFS{"a.json": []byte("{}"), "b.json": []byte(`{"x":1}`)}
	if err := fstest.TestFS(m, "a.json", "b.json"); err != nil {
		t.Fatal(err)
	}
}
