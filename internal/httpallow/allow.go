// Package httpallow computes the Allow header of a 405 answer (RFC 9110
// section 15.5.6: a 405 MUST carry Allow) for a chi router whose
// method-not-allowed handler is custom, which chi then leaves without
// one. Used by the sidecar and the broker.
//
// It imports chi and the standard library only.
package httpallow

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
)

// methods are the methods probed, in the order Allow lists them.
var methods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions,
}

// Methods returns the methods routes serves at path, e.g. "GET, HEAD"
// ("" when none).
func Methods(routes chi.Routes, path string) string {
	var ok []string
	for _, m := range methods {
		if routes.Match(chi.NewRouteContext(), m, path) {
			ok = append(ok, m)
		}
	}
	return strings.Join(ok, ", ")
}

// Set sets the Allow header of w for r's path on routes.
func Set(w http.ResponseWriter, routes chi.Routes, r *http.Request) {
	if a := Methods(routes, r.URL.Path); a != "" {
		w.Header().Set("Allow", a)
	}
}
