// Package guard keeps a remote store's failures from becoming the site's:
// a Guard stands in front of any ratelimit.Store and decides by a failure
// policy (allow, deny or local) when the store fails or is slow.
//
// A circuit breaker stops asking a failing store until its probe answers;
// a denial cache answers repeated requests of a denied key locally, which
// is exact since a count only falls with time; errors are logged at a
// bounded rate. The guard sees its store through ratelimit.Store and a
// few optional methods (Ping, TakeFunc, GiveBack), and names no store.
//
// # Files
//
//   - guard.go: Guard, its options and stats, Take and TakeKey.
//   - policy.go: FailurePolicy and the decisions it takes.
//   - breaker.go: the circuit breaker and its probe.
//   - denycache.go: the denial cache and ForgetDenial.
//   - refund.go: Refund and GiveBack through the guard.
//   - errlog.go: the rate-limited error log.
//   - event.go: Event and NewLogged, what a host logs.
//   - overloaded.go: ErrOverloaded, the host's own backlog.
package guard
