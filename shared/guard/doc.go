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
// # Under yaegi
//
// Traefik's yaegi interpreter runs the guard on every request with a redis
// block, so that path is shaped by what the interpreter charges, where
// compiled Go pays nothing for the shape: a call allocates a slot for every
// local and temporary of the function called, a constant of another package
// costs a slot where one of this package's costs none, and a method call on
// an interpreted type costs 14 to 28 allocations more than a function call
// (scripts/yaegitest, BenchmarkInterpretedCosts and the request
// benchmarks). So Take goes to guardTake, a function; the denial cache is
// called only when it holds denials; the store's Take is called through a
// func value (TakeFunc), which costs half a call through an interface; and
// a caller that calls its store itself on the common request
// (redisstore.TakeKey) reads the guard's state from one word (Signals)
// without a frame of the guard's, and ends with TakeOne or Answered.
//
// # Files
//
//   - guard.go: Guard, its options and stats, Take, and TakeOne, Answered
//     and Signals for a caller that calls the store itself.
//   - policy.go: FailurePolicy and the decisions it takes.
//   - breaker.go: the circuit breaker and its probe.
//   - denycache.go: the denial cache and ForgetDenial.
//   - refund.go: Refund and GiveBack through the guard.
//   - errlog.go: the rate-limited error log.
//   - event.go: Event and NewLogged, what a host logs.
//   - overloaded.go: ErrOverloaded, the host's own backlog.
package guard
