package pick

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/registry"
)

// repoPage fetches the fake's 100-repository /user/repos page (~570 KB).
func repoPage(b *testing.B) []byte {
	b.Helper()
	fake, err := fakeapi.New()
	if err != nil {
		b.Fatal(err)
	}
	defer fake.Close()
	req, _ := http.NewRequest("GET", "https://api.github.com/user/repos?per_page=100", nil)
	req.Header.Set("Authorization", "Bearer "+fakeapi.Token("github"))
	resp, err := fake.Client().Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("fetch repos: %v %d", err, resp.StatusCode)
	}
	return body
}

// BenchmarkProject compares the streaming pick projection of a 100-repo
// GitHub page with the plain encoding/json baseline (decode into any,
// re-encode), and checks the projection is byte-identical to the
// reference implementation.
func BenchmarkProject(b *testing.B) {
	page := repoPage(b)
	op, _ := mustOp("github", "list_repos")
	proj := New(op.Pick.Root, op.Pick.Fields)
	got, err := proj.Project(nil, page)
	if err != nil {
		b.Fatal(err)
	}
	want, err := referenceProject(page, op.Pick.Root, op.Pick.Fields)
	if err != nil || !bytes.Equal(got, want) {
		b.Fatalf("projection differs from the reference (%v)", err)
	}
	b.Run("pick", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		buf := make([]byte, 0, 64<<10)
		for i := 0; i < b.N; i++ {
			if _, err := proj.Project(buf[:0], page); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonany", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			var v any
			if err := json.Unmarshal(page, &v); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// mustOp looks an op up in the embedded registry.
func mustOp(service, op string) (*registry.Op, bool) {
	m, ok := registry.Default().Service(service)
	if !ok {
		return nil, false
	}
	return m.Op(op)
}
