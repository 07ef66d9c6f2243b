// Package httplimit is the HTTP side of windowlimit that the Caddy module
// and the Traefik plugin share: the bound on a key's length, how client
// IPs are grouped by prefix, the rate-limit headers and rejection a limited
// response carries, the final status of a response, and the set of
// statuses a count_status zone counts. Which key a request is limited on
// is each host's own: Caddy's placeholders, and Traefik's sourceCriterion
// in the traefikplugin package.
//
// It imports only the standard library, because Traefik loads it through
// the yaegi interpreter. The per-request functions avoid fmt and allocate
// as little as possible: values that never change are computed once.
//
// # Under yaegi
//
// The Traefik plugin makes the per-request calls on every request, where
// the interpreter's charges shape them; compiled Go pays nothing for the
// shape. A method call on an interpreted type costs 14 to 28 allocations
// more than a function call (scripts/yaegitest, BenchmarkPluginConfigs
// with WriteHeaders and WriteRejection tried as methods), so these two are
// functions taking the policy first, with no method form. A call allocates
// a slot for every local and temporary of the callee, taken branches or
// not, so each header mode's work is a function of its own and its values
// come from tables (ints.go) rather than nested calls. A call into netip
// costs several interpreted calls, so MaskAddr makes few. StatusSet shifts
// uint64 operands, a workaround for an interpreter bug the yaegi harness
// catches (an untyped constant shifted by a converted int panics).
//
// Files:
//
//   - boundkey.go: the bound on a key's length (BoundKey).
//   - mask.go: IP prefix masks, the client-IP key of an IPv6 /64.
//   - headers.go: the rate-limit header modes and their writing.
//   - ints.go: the tables of header values, written without formatting.
//   - errors.go: FieldError, a bad configuration value named.
//   - status.go: the final status of a response, which count_status reads.
//   - statusset.go: StatusSet, the response codes a count_status zone
//     counts, as each host writes them.
package httplimit
