// Package broker will hold the OAuth relay: one confidential client per
// service, the authorization code exchange and token refresh, and the
// public registry endpoint (DESIGN.md, "Broker"). Not built yet.
package broker
