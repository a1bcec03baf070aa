// Package broker is the OAuth relay (DESIGN.md, "Broker"): it holds one
// confidential OAuth client per service, runs the authorization code
// exchange (with PKCE where the manifest says so) and the token refresh
// through golang.org/x/oauth2, and serves the embedded registry to catalog
// UIs. `pinned broker` runs it.
//
// It persists nothing. The OAuth state carries the whole flow (service,
// connection cap, return URL, PKCE verifier, expiry, nonce) sealed with
// XChaCha20-Poly1305 under a key from configuration; the token pair goes
// back to the member's browser in the return URL's fragment, and a refresh
// answers the caller and forgets. Provider endpoints and scopes come from
// the manifests' auth.oauth; clients from LCHAT_OAUTH_<ID>_CLIENT_ID /
// _CLIENT_SECRET ([ClientsFromEnv]).
//
// HTTP API ([Broker.Handler]): GET /registry, GET /api/oauth/config,
// GET /oauth/{id}/start, GET /oauth/{id}/callback, POST /api/refresh,
// GET /healthz, GET /metrics. Errors are in the shared model of
// internal/httperr ({"error": {"code", "message", "request_id"}}) with
// the stable codes and the one status table of internal/brokerapi, all
// listed in docs/OAUTH.md. Secrets (client secrets, tokens, codes,
// verifiers, instance tokens) never appear in logs, errors or metrics.
//
// docs/OAUTH.md is the operator's guide.
//
// It imports registry, internal/brokerapi (its codes and status table,
// shared with its client internal/rotate), internal/httperr, httpserve
// (the services' middleware chain) and secret, golang.org/x/oauth2 and x/crypto, chi, zerolog and prometheus;
// never host, sidecar or web (docs/ARCHITECTURE.md).
package broker
