// Package layering holds the test that keeps the import graph layered as
// docs/ARCHITECTURE.md draws it: registry and the internal leaf libraries
// at the bottom, then the guest, the host, the services (sidecar, broker,
// web) and cmd/pinned on top; nothing imports upward or sideways. It has
// no code: TestLayering reads `go list` and fails on an edge the layers do
// not allow, or on a package in no layer. TestDocsNameRealTests keeps the
// documents honest the same way: every test they cite exists.
package layering
