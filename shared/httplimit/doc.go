// Package httplimit is the HTTP side of windowlimit that the Caddy module
// and the Traefik plugin share: the bound on a key's length, how client
// IPs are grouped by prefix, the rate-limit headers and rejection a limited
// response carries, and the final status of a response. Which key a
// request is limited on is each host's own: Caddy's placeholders, and
// Traefik's sourceCriterion in the traefikplugin package.
//
// It imports only the standard library, because Traefik loads it through
// the yaegi interpreter. The per-request functions avoid fmt and allocate
// as little as possible: values that never change are computed once.
//
// The per-request calls are plain functions taking their receiver as the
// first argument (WriteHeaders, WriteRejection) rather than methods, and
// have no method form: under yaegi a method call costs several function
// calls, and the Traefik plugin makes these calls on every request, while
// compiled Go pays nothing for the plain form.
//
// Files:
//
//   - boundkey.go: the bound on a key's length (BoundKey).
//   - mask.go: IP prefix masks, the client-IP key of an IPv6 /64.
//   - headers.go: the rate-limit header modes and their writing.
//   - ints.go: the tables of header values, written without formatting.
//   - errors.go: FieldError, a bad configuration value named.
//   - status.go: the final status of a response, which count_status reads.
package httplimit
