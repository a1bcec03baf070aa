package sidecar

import "fmt"

// checkDrift refuses a grant or request built against other bytes of the
// service's manifest than this sidecar's embedded snapshot holds
// (manifest_drift): running it would run another op than the member
// reviewed. An empty want checks nothing. what names the source ("the
// grant", "the request").
func (s *Server) checkDrift(service, what, want string) *Error {
	if want == "" {
		return nil
	}
	have := s.reg.ManifestSHA256(service)
	if want == have {
		return nil
	}
	return newError(CodeManifestDrift, fmt.Sprintf(
		"%s was built against %s manifest sha256:%s, but this sidecar runs sha256:%s (registry %s); nothing ran: reload the catalog from this sidecar's GET /v1/registry, review the op and ask for a new grant",
		what, service, clip(want, 64), have, s.reg.Digest()))
}
