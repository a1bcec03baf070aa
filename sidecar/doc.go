// Package sidecar will hold the bot-facing service: it opens sealed grants,
// enforces their scope and runs ops in package host (DESIGN.md, "Grants"
// and "Sidecar HTTP API"). Not built yet.
package sidecar
