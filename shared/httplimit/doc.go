// Package httplimit is the HTTP side of windowlimit shared by the Caddy module
// and the Traefik plugin: which key a request is limited on (client IP with
// Traefik's ipStrategy semantics, a request header, the host), how IPs are
// grouped by prefix, and the rate-limit headers and rejection a limited
// response carries.
//
// It imports only the standard library, because Traefik loads it through
// the yaegi interpreter. The per-request functions avoid fmt and allocate
// as little as possible: values that never change are computed once.
//
// The per-request calls are plain functions taking their receiver as the
// first argument (KeyOf, WriteHeaders, WriteRejection) rather than
// methods, and have no method form: under yaegi a method call costs
// several function calls, and the Traefik plugin makes these calls on
// every request, while compiled Go pays nothing for the plain form.
package httplimit
