package fakeapi

import (
	"bytes"
	"encoding/json"
	"strings"
)

// ServedExample returns the example args of an op of a service this
// server serves (embedded or added with WithService), or nil: what a
// fixture replay runs the op with.
func (s *Server) ServedExample(service, op string) json.RawMessage {
	svc := s.services[service]
	if svc == nil || svc.f.Ops[op] == nil {
		return nil
	}
	return bytes.Clone(svc.f.Ops[op].Example)
}

// ServedCredential returns the fake's token, the user part of a two-part
// credential and the tenant label of a service this server serves, and
// whether it serves it.
func (s *Server) ServedCredential(service string) (token, user, tenant string, ok bool) {
	svc := s.services[service]
	if svc == nil {
		return "", "", "", false
	}
	if svc.m.HasTenant() {
		tenant, _, _ = strings.Cut(svc.host, ".")
	}
	return svc.p.Token, svc.p.User, tenant, true
}
