// Package mcpauth is the OAuth 2.1 authorization server and access-token
// verifier of a remote `pinned mcp --listen` (docs/MCP.md, "Remote
// clients with OAuth"). The server issues short-lived Ed25519-signed JWT
// access tokens (RFC 9068 shape) bound to one resource (RFC 8707) and one
// person, after the authorization code grant with PKCE S256 (RFC 7636);
// clients are identified by Client ID Metadata Documents.
//
// It may import the standard library, golang-jwt/jwt/v5 and the MCP Go
// SDK's auth and oauthex packages; nothing of pinned's own.
package mcpauth
