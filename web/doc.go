// Package web is the member's side of pinned (DESIGN.md, "Who uses it";
// docs/WEB.md): `pinned web` serves the integrations catalog, where a
// member connects a service (a pasted scoped token or OAuth through the
// broker) and picks its cap, and the companion apps (the GitHub app) that
// run ops through a bot's sidecar under one-shot grants.
//
// The server is deliberately thin. Every credential lives in the member's
// browser, sealed to the member's own key in IndexedDB; the browser seals
// each grant to the bot's public key (libsodium's crypto_box_seal, the
// nacl/box anonymous sealed box the sidecar opens) before anything leaves
// the page. The server:
//
//	GET  /                          the catalog (static, embedded)
//	GET  /apps/github               the GitHub companion app
//	GET  /static/…                  scripts, styles and the vendored libsodium (web/static/vendor/VENDOR)
//	GET  /api/integrations          the embedded registry as the catalog needs it, and whether the broker can start each OAuth flow
//	GET  /api/bots                  the configured bots and their public keys (each sidecar's GET /v1/identity)
//	POST /api/bots/{name}/ops       relays {service, op, args, grant} to the bot's POST /v1/ops
//	POST /api/bots/{name}/consent   relays {service, op, args} to the bot's POST /v1/consent
//	POST /api/bots/{name}/revoke    relays {grant} to the bot's POST /v1/grants/revoke (a standing read grant, revoked at once)
//	GET  /healthz                   liveness
//
// It relays sealed grants only: a relayed op body must be exactly that
// JSON object with a grant that is sealed-box base64, so a page bug that
// posted a token in the clear is refused, not forwarded. It adds the bot's
// caller token, which the browser never sees. Same origin only: every
// answer carries a Content-Security-Policy without inline script or any
// other origin and with frame-ancestors 'none', and /api/ refuses requests
// whose Origin or Sec-Fetch-Site says they came from another site.
//
// Imports: registry, secret (the bot token's type), internal/httperr (the error
// model), internal/httpserve (the services' middleware chain),
// internal/jsonv (strict JSON) and third-party libraries (chi, zerolog);
// never sidecar or broker, which it reaches over HTTP.
package web
