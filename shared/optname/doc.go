// Package optname finds the option a misspelled one was meant to be, for
// the configuration errors of both hosts: "unknown option limt; did you
// mean limit?" in Traefik, "unknown subdirective "limt" (did you mean
// "limit"?)" in a Caddyfile. It imports nothing of the module.
//
// # Files
//
//   - optname.go: Nearest, the option meant, and Distance, the edits
//     between two names.
package optname
