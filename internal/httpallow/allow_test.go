package httpallow

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"
)

func TestAllowOn405(t *testing.T) {
	r := chi.NewRouter()
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		Set(w, r, req)
		w.WriteHeader(http.StatusMethodNotAllowed)
	})
	ok := func(http.ResponseWriter, *http.Request) {}
	r.Get("/a", ok)
	r.Post("/a", ok)
	r.Group(func(g chi.Router) {
		g.Use(func(next http.Handler) http.Handler { return next })
		g.Post("/b", ok)
	})
	tests := []struct {
		name, method, path, allow string
		status                    int
	}{
		{name: "two methods", method: "DELETE", path: "/a", allow: "GET, POST", status: 405},
		{name: "in a group", method: "GET", path: "/b", allow: "POST", status: 405},
		{name: "allowed", method: "GET", path: "/a", allow: "", status: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			r.ServeHTTP(w, httptest.NewRequest(tt.method, tt.path, nil))
			if w.Code != tt.status || w.Header().Get("Allow") != tt.allow {
				t.Fatalf("status %d, Allow %q; want %d, %q", w.Code, w.Header().Get("Allow"), tt.status, tt.allow)
			}
		})
	}
}
