// Package httplimit is the HTTP side of windowlimit shared by the Caddy module
// and the Traefik plugin: which key a request is limited on (client IP with
// Traefik's ipStrategy semantics, a request header, the host), how IPs are
// grouped by prefix, and the rate-limit headers and rejection a limited
// response carries.
//
// It imports only the standard library, because Traefik loads it through
// the yaegi interpreter. The per-request functions avoid fmt and allocate
// as little as possible: values that never change are computed once.
package httplimit
