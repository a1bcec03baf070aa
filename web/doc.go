// Package web will hold the member-facing catalog (DESIGN.md, "Who uses
// it"). Not built yet.
package web
