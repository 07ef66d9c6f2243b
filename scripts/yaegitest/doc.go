// Package yaegitest loads windowlimit's standard-library-only code through
// the yaegi interpreter exactly as Traefik v3.6 loads a plugin (yaegi
// v0.16.1, stdlib symbols only, a GOPATH whose src holds the module) and
// runs real scenarios through the interpreted code.
//
// It is a module of its own so that the root go.mod never requires yaegi:
// Traefik's plugin catalog rejects plugins that do.
package yaegitest
